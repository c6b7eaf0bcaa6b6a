#pragma once
// The engine's event queue: a radix heap (Ahuja, Mehlhorn, Orlin and Tarjan, "Faster algorithms for the shortest
// path problem", J. ACM 37(2), 1990) over integer nanoseconds. A discrete-event run never schedules an event before
// the last one it took out, which is the monotone property a radix heap needs; push is O(1) and an event moves
// between buckets at most 64 times, where a binary heap sifts every pop through log2(n) cache-missing levels (54% of
// an --expand-ranks run at 16,384 GPUs, issue 22).
//
// Order: earliest time first, and among equal times first pushed first, exactly as a binary heap on (time, push
// number) would give, without storing the number: bucket 0 holds only events of the last popped time and is read
// first-in first-out, and every other bucket stays in push order (a push appends the latest; a redistribution empties
// one bucket, in order, into empty lower ones).

#include <array>
#include <bit>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "models/units.h"

namespace orrery {

/// One queued event (16 bytes: the queue holds one per running task of every simulated rank). `tag` and `id` are
/// the engine's (what happens, to whom); the queue only orders by time and push order.
struct Event {
  Nanoseconds time = 0;
  std::uint32_t tag = 0;
  std::int32_t id = 0;
};

class EventQueue {
 public:
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }

  /// Queues `e`. Throws std::logic_error if e.time is before the last popped time (an engine bug).
  void push(const Event& e) {
    if (e.time < last_) throw std::logic_error("event queue: an event before the current time");
    const std::size_t b = bucket(e.time);
    buckets_[b].push_back(e);
    if (b > 0) nonempty_ |= std::uint64_t{1} << (b - 1);
    ++size_;
  }

  /// Removes and returns the earliest event (the first pushed among equal times). Throws std::logic_error when empty.
  Event pop() {
    if (size_ == 0) throw std::logic_error("event queue: pop from an empty queue");
    if (head_ == buckets_[0].size()) refill();
    --size_;
    Event e = buckets_[0][head_++];
    if (head_ == buckets_[0].size()) {
      buckets_[0].clear();
      head_ = 0;
    }
    return e;
  }

 private:
  std::array<std::vector<Event>, 65> buckets_;
  std::size_t head_ = 0;  // next event of bucket 0
  std::size_t size_ = 0;
  Nanoseconds last_ = 0;        // the time of bucket 0's events
  std::uint64_t nonempty_ = 0;  // bit b - 1: bucket b (1..64) holds events

  std::size_t bucket(Nanoseconds t) const {
    const auto diff = static_cast<std::uint64_t>(t) ^ static_cast<std::uint64_t>(last_);
    return diff == 0 ? 0 : static_cast<std::size_t>(64 - std::countl_zero(diff));
  }

  // Bucket 0 is empty: the lowest non-empty bucket's earliest time becomes the current one and its events move
  // down, in order.
  void refill() {
    buckets_[0].clear();
    head_ = 0;
    const auto b = static_cast<std::size_t>(std::countr_zero(nonempty_)) + 1;
    std::vector<Event>& from = buckets_[b];
    nonempty_ &= ~(std::uint64_t{1} << (b - 1));
    Nanoseconds earliest = from.front().time;
    for (const Event& e : from) earliest = std::min(earliest, e.time);
    last_ = earliest;
    for (const Event& e : from) {
      const std::size_t to = bucket(e.time);
      buckets_[to].push_back(e);
      if (to > 0) nonempty_ |= std::uint64_t{1} << (to - 1);
    }
    from.clear();
  }
};

}  // namespace orrery
