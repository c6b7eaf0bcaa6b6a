#pragma once
// Writing large JSON documents as text, piece by piece, without building them in memory: the Chrome trace of a
// 1,120-GPU record is millions of events (issue 26). Pieces gather in a buffer that goes to the sink in chunks of
// about a megabyte.

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <string>
#include <string_view>

#include "models/units.h"

namespace orrery::cli {

/// Where streamed text goes: OutputFile::write, or a string for callers that parse it back.
using TextSink = std::function<void(std::string_view)>;

class JsonStream {
 public:
  explicit JsonStream(const TextSink& sink) : sink_(sink) {}
  JsonStream(const JsonStream&) = delete;
  JsonStream& operator=(const JsonStream&) = delete;

  template <typename... T>
  void print(fmt::format_string<T...> format, T&&... args) {
    fmt::format_to(std::back_inserter(buffer_), format, std::forward<T>(args)...);
    if (buffer_.size() >= kChunk) flush();
  }
  /// `text` as a JSON string, quotes included (UTF-8 passes through; quotes, backslashes, controls are escaped).
  void quoted(std::string_view text) {
    buffer_ += '"';
    for (char ch : text) {
      const auto c = static_cast<unsigned char>(ch);
      if (ch == '"' || ch == '\\') {
        buffer_ += '\\';
        buffer_ += ch;
      } else if (c < 0x20) {
        print("\\u{:04x}", static_cast<unsigned>(c));
      } else {
        buffer_ += ch;
      }
    }
    buffer_ += '"';
  }
  /// A number as JSON takes it: the shortest text that reads back exactly; null for NaN or infinity.
  void number(double value) {
    if (std::isfinite(value)) {
      print("{}", value);
    } else {
      buffer_ += "null";
    }
  }
  /// Nanoseconds as microseconds with three decimals, exactly (the Trace Event Format's ts and dur).
  void micros(Nanoseconds ns) { print("{}{}.{:03}", ns < 0 ? "-" : "", std::abs(ns) / 1000, std::abs(ns) % 1000); }
  /// Hands what is buffered to the sink. The caller calls it once at the end.
  void flush() {
    if (!buffer_.empty()) sink_(buffer_);
    buffer_.clear();
  }

 private:
  static constexpr std::size_t kChunk = std::size_t{1} << 20;
  const TextSink& sink_;
  std::string buffer_;
};

}  // namespace orrery::cli
