// parse_json_text, the one door of JSON input: nlohmann's SAX parser feeding our own document builder. nlohmann's
// DOM keeps the last of a repeated key, and its callback parser, which could see the keys, rescans the enclosing
// array at every object's end (quadratic in the array's length), so the builder checks each key against its object
// as it arrives: the object is the key set. It also bounds the nesting (copying and merging a document recurse
// once per level, and a 100,000-deep override overflowed the stack) and names the file, byte and field of every
// error.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "models/error.h"
#include "models/json_fields.h"
#include "models/limits.h"
#include "models/utf8.h"

namespace orrery {

using nlohmann::json;

namespace {

// Offset of the bracket that opens nesting level `depth` (1: the outermost value), strings skipped; the SAX events
// carry no positions, and this runs only for an error.
std::size_t offset_of_depth(std::string_view text, int depth) {
  int level = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++level == depth) return i;
    } else if (c == '}' || c == ']') {
      --level;
    }
  }
  return text.size();
}

// Offset of the first \u0000 escape inside a string (JSON text cannot hold a raw NUL in a string).
std::size_t offset_of_nul_escape(std::string_view text) {
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (!in_string) {
      in_string = c == '"';
    } else if (c == '\\') {
      if (text.substr(i, 6) == "\\u0000") return i;
      ++i;
    } else if (c == '"') {
      in_string = false;
    }
  }
  return text.size();
}

// Builds the document from SAX events (the interface nlohmann::json::sax_parse calls) and throws Error::invalid
// for what the JSON grammar allows but no input may hold.
class StrictBuilder {
 public:
  StrictBuilder(json& root, std::string_view text, const std::string& what) : root_(root), text_(text), what_(what) {}

  bool null() { return place(json(nullptr)); }
  bool boolean(bool v) { return place(json(v)); }
  bool number_integer(json::number_integer_t v) { return place(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return place(json(v)); }
  bool number_float(json::number_float_t v, const std::string&) { return place(json(v)); }
  bool string(std::string& v) {
    if (v.find('\0') != std::string::npos) {
      refuse_nul(location(), "in a string, which no name, label or file path may hold");
    }
    return place(json(std::move(v)));
  }
  bool binary(json::binary_t& v) { return place(json::binary(std::move(v))); }  // not in JSON text
  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(std::string& k) {
    Frame& f = frames_.back();
    if (k.find('\0') != std::string::npos) {
      refuse_nul(fmt::format("the key {} of {}", json(k).dump(), path().empty() ? "the top level" : path()),
                 "in a key, which no field name has");
    }
    if (f.node->contains(k)) {
      throw Error::invalid(what_, join_path(path(), k),
                           "has a key given twice in one object (the JSON would keep only the last)");
    }
    f.key = std::move(k);
    f.keyed = true;
    return true;
  }

  bool parse_error(std::size_t position, const std::string&, const json::exception& e) {
    // nlohmann's message would quote the bytes themselves; name the first that is not UTF-8 instead.
    const std::size_t bad = first_invalid_utf8(text_);
    if (bad < position) {
      throw Error::invalid(what_,
                           fmt::format("{} at byte {}: 0x{:02X}", location(), bad, static_cast<unsigned char>(text_[bad])),
                           "is not valid UTF-8, which JSON text must be (RFC 8259, section 8.1)");
    }
    throw Error::invalid(what_, fmt::format("{} at byte {}", location(), position > 0 ? position - 1 : 0),
                         std::string("is not valid JSON: ") + e.what());
  }

 private:
  struct Frame {
    json* node;
    std::string key;     // objects: the last key read
    bool keyed = false;  // objects: the key's value is yet to come
  };

  // The dotted path of the innermost open value ("cluster.gpu", "network[2]").
  std::string path() const {
    std::string out;
    for (std::size_t i = 0; i < frames_.size(); ++i) {
      const Frame& f = frames_[i];
      const bool innermost = i + 1 == frames_.size();
      if (f.node->is_array()) {
        out += fmt::format("[{}]", f.node->size() - (innermost ? 0 : 1));
      } else if (!innermost || f.keyed) {
        out = join_path(out, f.key);
      }
    }
    return out;
  }

  // Where the parser stands, for errors: the field whose value it reads, or the object whose key it reads. Long
  // paths are cut (a deep document's path is as deep as the document).
  std::string location() const {
    const bool in_key = !frames_.empty() && frames_.back().node->is_object() && !frames_.back().keyed;
    std::string p = path();
    if (p.size() > 80) p = p.substr(0, 77) + "...";
    if (!in_key) return p.empty() ? "the top level" : p;
    return p.empty() ? "a key at the top level" : "a key of " + p;
  }

  [[noreturn]] void refuse_nul(const std::string& where, const char* rule) const {
    throw Error::invalid(what_, fmt::format("{} at byte {}", where, offset_of_nul_escape(text_)),
                         std::string("holds a NUL character (\\u0000) ") + rule);
  }

  // Puts a value where the parser stands: the root, the next element of an array, or the value of the last key.
  json* place_value(json&& v) {
    if (frames_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Frame& f = frames_.back();
    if (f.node->is_array()) {
      auto& elements = f.node->get_ref<json::array_t&>();
      elements.push_back(std::move(v));
      return &elements.back();
    }
    f.keyed = false;
    return &f.node->get_ref<json::object_t&>().emplace(f.key, std::move(v)).first->second;
  }

  bool place(json&& v) {
    place_value(std::move(v));
    return true;
  }

  bool open(json&& container) {
    if (static_cast<int>(frames_.size()) >= limits::kJsonDepth) {
      const int depth = limits::kJsonDepth + 1;
      throw Error::invalid(what_, fmt::format("depth {} at byte {}, in {}", depth, offset_of_depth(text_, depth), location()),
                           fmt::format("is nested deeper than {} levels of objects and arrays, the most an input may "
                                       "use (no real input needs 10)",
                                       limits::kJsonDepth));
    }
    // A pointer into the parent stays valid while this child is open: only the child grows meanwhile.
    frames_.push_back({place_value(std::move(container)), {}, false});
    return true;
  }

  bool close() {
    frames_.pop_back();
    return true;
  }

  json& root_;
  std::string_view text_;
  const std::string& what_;
  std::vector<Frame> frames_;
};

}  // namespace

json parse_json_text(const std::string& text, const std::string& what) {
  json doc;
  StrictBuilder builder(doc, text, what);
  try {
    json::sax_parse(text, &builder);
  } catch (const json::exception& e) {
    // nlohmann's own refusals outside the grammar (sizes beyond its containers).
    throw Error::invalid(what, "", std::string("is not valid JSON: ") + e.what());
  }
  return doc;
}

}  // namespace orrery
