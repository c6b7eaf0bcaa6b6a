#pragma once
// The engine's event queue: a radix heap (Ahuja, Mehlhorn, Orlin and Tarjan, "Faster algorithms for the shortest
// path problem", J. ACM 37(2), 1990) over integer nanoseconds. A discrete-event run never schedules an event before
// the last one it took out, which is the monotone property a radix heap needs; push is O(1) and an entry moves
// between buckets at most 64 times, where a binary heap sifts every pop through log2(n) cache-missing levels (54% of
// an --expand-ranks run at 16,384 GPUs, issue 22).
//
// Order: earliest time first, and among equal times first pushed first, exactly as a binary heap on (time, push
// number) would give, without storing the number: bucket 0 holds only entries of the last popped time and is read
// first-in first-out, and every other bucket stays in push order (a push appends the latest; a redistribution empties
// one bucket, in order, into empty lower ones).
//
// Runs of ties: the ranks of a symmetric job do the same thing at the same nanosecond, so in a 16,384-rank run 93% of
// pushes have the time of the push before (Llama-3.1-405B, --expand-ranks). With `group_ties`, consecutive pushes of
// one time form a run that enters the heap once, and the heap moves runs instead of events (2.6 moves per event
// there). Runs of equal time leave in the order they were opened and each is read first-in first-out, and a run only
// ever holds consecutive pushes, so the order is the same as without.

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

/// The radix heap itself, over any entry with a `time` (Nanoseconds). Entries of equal time leave in push order.
template <typename Entry>
class RadixHeap {
 public:
  bool empty() const { return size_ == 0; }
  /// The time of the entries last popped (0 before the first pop).
  Nanoseconds now() const { return last_; }

  /// Queues `e`. Throws std::logic_error if e.time is before the last popped time (an engine bug).
  void push(const Entry& e) {
    if (e.time < last_) throw std::logic_error("event queue: an event before the current time");
    const std::size_t b = bucket(e.time);
    buckets_[b].push_back(e);
    if (b > 0) nonempty_ |= std::uint64_t{1} << (b - 1);
    ++size_;
  }

  /// Removes and returns the earliest entry (the first pushed among equal times). Throws std::logic_error when
  /// empty.
  Entry pop() {
    if (size_ == 0) throw std::logic_error("event queue: pop from an empty queue");
    if (head_ == buckets_[0].size()) refill();
    --size_;
    Entry e = buckets_[0][head_++];
    if (head_ == buckets_[0].size()) {
      buckets_[0].clear();
      head_ = 0;
    }
    return e;
  }

 private:
  std::array<std::vector<Entry>, 65> buckets_;
  std::size_t head_ = 0;  // next entry of bucket 0
  std::size_t size_ = 0;
  Nanoseconds last_ = 0;        // the time of bucket 0's entries
  std::uint64_t nonempty_ = 0;  // bit b - 1: bucket b (1..64) holds entries

  std::size_t bucket(Nanoseconds t) const {
    const auto diff = static_cast<std::uint64_t>(t) ^ static_cast<std::uint64_t>(last_);
    return diff == 0 ? 0 : static_cast<std::size_t>(64 - std::countl_zero(diff));
  }

  // Bucket 0 is empty: the lowest non-empty bucket's earliest time becomes the current one and its entries move
  // down, in order.
  void refill() {
    buckets_[0].clear();
    head_ = 0;
    const auto b = static_cast<std::size_t>(std::countr_zero(nonempty_)) + 1;
    std::vector<Entry>& from = buckets_[b];
    nonempty_ &= ~(std::uint64_t{1} << (b - 1));
    Nanoseconds earliest = from.front().time;
    for (const Entry& e : from) earliest = std::min(earliest, e.time);
    last_ = earliest;
    for (const Entry& e : from) {
      const std::size_t to = bucket(e.time);
      buckets_[to].push_back(e);
      if (to > 0) nonempty_ |= std::uint64_t{1} << (to - 1);
    }
    from.clear();
  }
};

/// The engine's queue of events: a RadixHeap of events, or with `group_ties` of runs of equal-time pushes (the
/// header comment says when each is faster; both pop the same events in the same order).
class EventQueue {
 public:
  explicit EventQueue(bool group_ties = false) : grouped_(group_ties) {}

  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }

  /// Queues `e`. Throws std::logic_error if e.time is before the last popped time (an engine bug).
  void push(const Event& e) {
    if (!grouped_) {
      events_.push(e);
    } else if (open_ >= 0 && e.time == open_time_) {
      append(open_tail_, e);
    } else {
      // Checked before a run is opened, so a refused push leaves the queue as it was.
      if (e.time < runs_.now()) throw std::logic_error("event queue: an event before the current time");
      open_ = take_chunk();
      open_tail_ = open_;
      open_time_ = e.time;
      append(open_tail_, e);
      runs_.push({e.time, open_});
    }
    ++size_;
  }

  /// Removes and returns the earliest event (the first pushed among equal times). Throws std::logic_error when
  /// empty.
  Event pop() {
    if (size_ == 0) throw std::logic_error("event queue: pop from an empty queue");
    --size_;
    if (!grouped_) return events_.pop();
    for (;;) {
      if (current_ >= 0) {
        Chunk& c = chunks_[static_cast<std::size_t>(current_)];
        if (head_ < c.count) return c.events[head_++];
        // Read to its end. Leaving the open run's last chunk closes that run: a later push of its time comes after
        // every event queued now, so it opens a run of its own.
        if (current_ == open_tail_) open_ = -1;
        const std::int32_t next = c.next;
        free_chunks_.push_back(current_);
        current_ = next;
        head_ = 0;
        if (current_ >= 0) continue;
      }
      current_ = runs_.pop().first;
      head_ = 0;
    }
  }

 private:
  // A run's events live in a list of fixed-size chunks from one pool, so a run of one event costs one chunk and a
  // run of thousands a list, and freed chunks serve any later run (per-run vectors kept their largest capacity:
  // 1.5 GiB at 65,536 ranks).
  static constexpr std::uint32_t kChunkEvents = 15;
  struct Chunk {
    std::array<Event, kChunkEvents> events;
    std::uint32_t count = 0;
    std::int32_t next = -1;  // the run's next chunk, -1: none yet
  };
  struct Run {
    Nanoseconds time = 0;
    std::int32_t first = 0;  // its first chunk
  };

  bool grouped_;
  std::size_t size_ = 0;
  RadixHeap<Event> events_;  // without group_ties
  // With group_ties: the runs in time order; the run that takes pushes of its time (the last opened), with its last
  // chunk; the chunk being popped and its next event.
  RadixHeap<Run> runs_;
  std::vector<Chunk> chunks_;
  std::vector<std::int32_t> free_chunks_;
  std::int32_t open_ = -1;
  std::int32_t open_tail_ = -1;
  Nanoseconds open_time_ = 0;
  std::int32_t current_ = -1;
  std::uint32_t head_ = 0;

  std::int32_t take_chunk() {
    if (free_chunks_.empty()) {
      chunks_.emplace_back();
      return static_cast<std::int32_t>(chunks_.size() - 1);
    }
    const std::int32_t c = free_chunks_.back();
    free_chunks_.pop_back();
    chunks_[static_cast<std::size_t>(c)].count = 0;
    chunks_[static_cast<std::size_t>(c)].next = -1;
    return c;
  }

  void append(std::int32_t& tail, const Event& e) {
    if (chunks_[static_cast<std::size_t>(tail)].count == kChunkEvents) {
      const std::int32_t more = take_chunk();  // may move chunks_: index again below
      chunks_[static_cast<std::size_t>(tail)].next = more;
      tail = more;
    }
    Chunk& c = chunks_[static_cast<std::size_t>(tail)];
    c.events[c.count++] = e;
  }
};

}  // namespace orrery
