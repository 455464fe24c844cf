// aclInit's configuration file: a JSON object (CANN's acl.json holds "dump", "profiler" and other sections, which
// are accepted and ignored here). portable-aclnn reads one section of its own:
//
//   {"portable_aclnn": {"device": "cpu"}}      (or another choice of backend.h: "cuda", "cuda,cpu", "auto")
//
// NOTE: the whole file is checked as JSON (RFC 8259: objects, arrays, strings with escapes, numbers, true, false,
// null; nesting at most 64 deep), so a broken file fails aclInit with the line and column of the first error
// instead of being half read.
#include "config.h"

#include <cctype>
#include <cstddef>
#include <string>

#include "backend.h"
#include "pacl/error.h"

namespace pacl::rt {
namespace {

constexpr int kMaxDepth = 64;

class JsonReader {
 public:
  explicit JsonReader(const std::string& text) : text_(text) {}

  // Parses the whole text; fills *config from the top-level "portable_aclnn" object.
  bool Parse(RuntimeConfig* config, std::string* error) {
    config_ = config;
    SkipSpace();
    if (!Value(0, /*top_level=*/true)) return Report(error);
    SkipSpace();
    if (at_ != text_.size()) {
      Fail("unexpected text after the JSON value");
      return Report(error);
    }
    if (!top_level_object_) {
      Fail("the configuration must be a JSON object");
      position_of_error_ = 0;
      return Report(error);
    }
    return true;
  }

  // A value of the "portable_aclnn" section that is not what it must be (ACL_ERROR_FILE_ATTR_INVALID).
  bool attribute_error() const { return attribute_error_; }

 private:
  bool Value(int depth, bool top_level) {
    if (depth > kMaxDepth) return Fail("nested deeper than 64 levels");
    if (at_ >= text_.size()) return Fail("unexpected end of file, expected a value");
    const char c = text_[at_];
    if (c == '{') return Object(depth, top_level);
    if (c == '[') return Array(depth);
    if (c == '"') return String(nullptr);
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) return Number();
    for (const char* literal : {"true", "false", "null"}) {
      if (Consume(literal)) return true;
    }
    return Fail(StrFormat("unexpected character '%c', expected a value", c));
  }

  bool Object(int depth, bool top_level) {
    if (top_level) top_level_object_ = true;
    return Members([&](const std::string& key) {
      return top_level && key == "portable_aclnn" ? Section() : Value(depth + 1, false);
    });
  }

  // The "portable_aclnn" section: {"device": a device choice (backend.h), "strict": true | false}; other
  // keys are refused (a typo would otherwise be silently ignored).
  bool Section() {
    if (!Peek('{')) return Attribute("\"portable_aclnn\" must be an object, e.g. {\"device\": \"cpu\"}");
    return Members([&](const std::string& key) {
      if (key == "strict") return Strict();
      if (key != "device") {
        return Attribute(StrFormat("\"portable_aclnn\" has no key \"%s\" (it has: \"device\", \"strict\")",
                                   key.c_str()));
      }
      std::string device;
      if (!Peek('"')) {
        return Attribute(StrFormat("\"portable_aclnn\".\"device\" must be a string: %s",
                                   DeviceChoicesText("\"").c_str()));
      }
      if (!String(&device)) return false;
      if (!IsDeviceChoice(device)) {
        return Attribute(StrFormat("\"portable_aclnn\".\"device\" is \"%s\": expected %s", device.c_str(),
                                   DeviceChoicesText("\"").c_str()));
      }
      config_->device = device;
      return true;
    });
  }

  bool Strict() {
    for (const bool value : {true, false}) {
      if (Consume(value ? "true" : "false")) {
        config_->strict = value ? 1 : 0;
        return true;
      }
    }
    return Attribute("\"portable_aclnn\".\"strict\" must be true or false");
  }

  // Steps over `literal` if the text continues with it.
  bool Consume(const std::string& literal) {
    if (text_.compare(at_, literal.size(), literal) != 0) return false;
    at_ += literal.size();
    return true;
  }

  // An object (at '{'): for each member, its key is read and member(key) reads the value.
  template <class Member>
  bool Members(Member&& member) {
    ++at_;  // '{'
    SkipSpace();
    if (Peek('}')) {
      ++at_;
      return true;
    }
    while (true) {
      SkipSpace();
      std::string key;
      if (!Peek('"')) return Fail("expected a string as the object's key");
      if (!String(&key)) return false;
      SkipSpace();
      if (!Peek(':')) return Fail("expected ':' after the key");
      ++at_;
      SkipSpace();
      if (!member(key)) return false;
      SkipSpace();
      if (Peek(',')) {
        ++at_;
        continue;
      }
      if (Peek('}')) {
        ++at_;
        return true;
      }
      return Fail("expected ',' or '}' in the object");
    }
  }

  bool Array(int depth) {
    ++at_;  // '['
    SkipSpace();
    if (Peek(']')) {
      ++at_;
      return true;
    }
    while (true) {
      SkipSpace();
      if (!Value(depth + 1, false)) return false;
      SkipSpace();
      if (Peek(',')) {
        ++at_;
        continue;
      }
      if (Peek(']')) {
        ++at_;
        return true;
      }
      return Fail("expected ',' or ']' in the array");
    }
  }

  // A string (at '"'); its value (escapes decoded, \u kept as UTF-8 only for ASCII) into *value when not null.
  bool String(std::string* value) {
    ++at_;  // '"'
    while (at_ < text_.size()) {
      const char c = text_[at_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return Fail("control character inside a string");
      if (c != '\\') {
        if (value != nullptr) value->push_back(c);
        continue;
      }
      if (at_ >= text_.size()) break;
      const char escape = text_[at_++];
      switch (escape) {
        case '"':
        case '\\':
        case '/':
          if (value != nullptr) value->push_back(escape);
          break;
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't':
          if (value != nullptr) value->push_back(' ');
          break;
        case 'u':
          for (int i = 0; i < 4; ++i, ++at_) {
            if (at_ >= text_.size() || !std::isxdigit(static_cast<unsigned char>(text_[at_]))) {
              return Fail("\\u must be followed by 4 hexadecimal digits");
            }
          }
          if (value != nullptr) value->push_back('?');
          break;
        default:
          return Fail(StrFormat("unknown escape '\\%c' in a string", escape));
      }
    }
    return Fail("unterminated string");
  }

  bool Number() {
    const size_t start = at_;
    if (Peek('-')) ++at_;
    if (Peek('0')) {
      ++at_;
    } else if (!Digits()) {
      return Fail("a number needs digits");
    }
    if (Peek('.')) {
      ++at_;
      if (!Digits()) return Fail("a number needs digits after '.'");
    }
    if (Peek('e') || Peek('E')) {
      ++at_;
      if (Peek('+') || Peek('-')) ++at_;
      if (!Digits()) return Fail("a number needs digits in its exponent");
    }
    return at_ > start;
  }

  bool Digits() {
    const size_t start = at_;
    while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_]))) ++at_;
    return at_ > start;
  }

  bool Peek(char c) const { return at_ < text_.size() && text_[at_] == c; }

  void SkipSpace() {
    while (at_ < text_.size() &&
           (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' || text_[at_] == '\r')) {
      ++at_;
    }
  }

  bool Fail(const std::string& what) {
    if (message_.empty()) {
      message_ = what;
      position_of_error_ = at_;
    }
    return false;
  }

  bool Attribute(const std::string& what) {
    attribute_error_ = true;
    return Fail(what);
  }

  // "line L, column C: <what>"; always false.
  bool Report(std::string* error) {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < position_of_error_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    *error = StrFormat("line %zu, column %zu: %s", line, column, message_.c_str());
    return false;
  }

  const std::string& text_;
  size_t at_ = 0;
  RuntimeConfig* config_ = nullptr;
  bool top_level_object_ = false;
  bool attribute_error_ = false;
  std::string message_;
  size_t position_of_error_ = 0;
};

}  // namespace

aclError ParseRuntimeConfig(const std::string& text, RuntimeConfig* config, std::string* error) {
  JsonReader reader(text);
  if (reader.Parse(config, error)) return ACL_SUCCESS;
  return reader.attribute_error() ? ACL_ERROR_FILE_ATTR_INVALID : ACL_ERROR_PARSE_FILE;
}

}  // namespace pacl::rt
