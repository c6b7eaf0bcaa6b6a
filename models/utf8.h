#pragma once
// UTF-8 well-formedness (RFC 3629, section 4: no overlong forms, no surrogates, nothing above U+10FFFF), for
// errors that must name the offending byte of an input and for messages that must stay valid UTF-8 when they
// quote bytes that are not (file names, command-line values).

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

namespace orrery {

/// Length (1 to 4) of the well-formed UTF-8 sequence that starts at byte `i` of `text`, or 0 when none does.
inline std::size_t utf8_sequence_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned lead = byte(i);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  unsigned lo = 0x80, hi = 0xBF;  // the second byte's range (RFC 3629's table of well-formed sequences)
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) lo = 0xA0;  // overlong below U+0800
    if (lead == 0xED) hi = 0x9F;  // surrogates U+D800-U+DFFF
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) lo = 0x90;  // overlong below U+10000
    if (lead == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (std::size_t k = 1; k < length; ++k) {
    const unsigned c = byte(i + k);
    if (c < (k == 1 ? lo : 0x80u) || c > (k == 1 ? hi : 0xBFu)) return 0;
  }
  return length;
}

/// Offset of the first byte of `text` that starts no well-formed UTF-8 sequence, or std::string_view::npos.
inline std::size_t first_invalid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_sequence_length(text, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

/// `text` with each byte outside well-formed UTF-8 written as \xNN and each control character as \u00NN: C0 (a NUL
/// would end the message, ESC starts a terminal's escape sequences), DEL and C1 (U+0080-U+009F; U+009B is a
/// terminal's CSI too). Newline and tab are kept when `keep_line_breaks`, for text we wrote; a quoted value or field
/// name escapes them too, so it cannot start a line of its own. The result prints whole and can go into JSON output.
inline std::string printable_utf8(std::string_view text, bool keep_line_breaks = true) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  const auto escape = [&](const char* prefix, unsigned c) {
    out += prefix;
    out += kHex[c >> 4];
    out += kHex[c & 0xF];
  };
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_sequence_length(text, i);
    const auto c = static_cast<unsigned char>(text[i]);
    const bool line_break = c == '\n' || c == '\t';
    if (n == 0) {
      escape("\\x", c);
      ++i;
    } else if ((c < 0x20 && !(line_break && keep_line_breaks)) || c == 0x7F) {
      escape("\\u00", c);
      ++i;
    } else if (n == 2 && c == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0) {
      escape("\\u00", static_cast<unsigned char>(text[i + 1]));  // C1: U+0080-U+009F
      i += 2;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

/// `text` cut to at most `limit` bytes at a UTF-8 sequence boundary, with a note of its full length when cut: a
/// message quotes what it was given, and a 10 MB key must not be echoed whole.
inline std::string clipped_utf8(std::string_view text, std::size_t limit) {
  if (text.size() <= limit) return std::string(text);
  std::size_t end = 0;
  while (end < text.size()) {
    const std::size_t n = std::max<std::size_t>(utf8_sequence_length(text, end), 1);
    if (end + n > limit) break;
    end += n;
  }
  return std::string(text.substr(0, end)) + "... (" + std::to_string(text.size()) + " bytes in all)";
}

}  // namespace orrery
