// A tiny strict JSON reader: the limits file, and in the tests `sentry run --json`
// results and `--log` lines (objects, arrays, strings with \u escapes, numbers, true,
// false, null). Strict: trailing garbage or a malformed value is an error.
#ifndef SENTRY_BASE_JSON_LITE_H_
#define SENTRY_BASE_JSON_LITE_H_

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sentry::json_lite {

struct Value {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Value> array;
  std::map<std::string, Value> object;

  bool is_null() const { return kind == Kind::kNull; }
  bool is_string() const { return kind == Kind::kString; }
  bool is_number() const { return kind == Kind::kNumber; }
  bool is_object() const { return kind == Kind::kObject; }
  bool has(const std::string& key) const { return kind == Kind::kObject && object.count(key) > 0; }
  // A member, or a null value when absent.
  const Value& operator[](const std::string& key) const {
    static const Value kNull;
    auto it = object.find(key);
    return it == object.end() ? kNull : it->second;
  }
  // Conveniences with defaults for a missing or mistyped value.
  std::string str(const std::string& def = "") const { return is_string() ? string : def; }
  double num(double def = -1) const { return is_number() ? number : def; }
  int64_t integer(int64_t def = -1) const {
    return is_number() ? static_cast<int64_t>(number) : def;
  }
  bool truthy() const { return kind == Kind::kBool && boolean; }
};

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  // The whole text as one value; nullopt (and error()) when it is not JSON.
  std::optional<Value> ParseDocument() {
    Value v;
    if (!ParseValue(&v, 0)) return std::nullopt;
    SkipSpace();
    if (i_ != s_.size()) {
      Fail("trailing characters");
      return std::nullopt;
    }
    return v;
  }
  const std::string& error() const { return error_; }

 private:
  bool Fail(const std::string& why) {
    if (error_.empty()) error_ = why + " at offset " + std::to_string(i_);
    return false;
  }
  void SkipSpace() {
    while (i_ < s_.size() &&
           (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) {
      ++i_;
    }
  }
  bool Literal(const char* word) {
    size_t n = std::char_traits<char>::length(word);
    if (s_.compare(i_, n, word) != 0) return false;
    i_ += n;
    return true;
  }
  bool ParseValue(Value* v, int depth) {
    if (depth > 64) return Fail("too deep");
    SkipSpace();
    if (i_ >= s_.size()) return Fail("unexpected end");
    char c = s_[i_];
    if (c == '{') return ParseObject(v, depth);
    if (c == '[') return ParseArray(v, depth);
    if (c == '"') {
      v->kind = Value::Kind::kString;
      return ParseString(&v->string);
    }
    if (Literal("true")) {
      v->kind = Value::Kind::kBool;
      v->boolean = true;
      return true;
    }
    if (Literal("false")) {
      v->kind = Value::Kind::kBool;
      return true;
    }
    if (Literal("null")) {
      v->kind = Value::Kind::kNull;
      return true;
    }
    return ParseNumber(v);
  }
  bool ParseNumber(Value* v) {
    size_t start = i_;
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    size_t digits = i_;
    while (i_ < s_.size() && ((s_[i_] >= '0' && s_[i_] <= '9') || s_[i_] == '.' || s_[i_] == 'e' ||
                              s_[i_] == 'E' || s_[i_] == '+' || s_[i_] == '-')) {
      ++i_;
    }
    if (i_ == digits) return Fail("bad value");
    std::string text = s_.substr(start, i_ - start);
    char* end = nullptr;
    v->number = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size()) return Fail("bad number");
    v->kind = Value::Kind::kNumber;
    return true;
  }
  static void AppendUtf8(std::string* out, uint32_t cp) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
      out->push_back(static_cast<char>(0xf0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
  }
  bool Hex4(uint32_t* out) {
    if (i_ + 4 > s_.size()) return false;
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      char c = s_[i_++];
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= c - '0';
      } else if (c >= 'a' && c <= 'f') {
        v |= c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        v |= c - 'A' + 10;
      } else {
        return false;
      }
    }
    *out = v;
    return true;
  }
  bool ParseString(std::string* out) {
    ++i_;  // the opening quote
    while (i_ < s_.size()) {
      auto c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        ++i_;
        return true;
      }
      if (c < 0x20) return Fail("control character in a string");
      if (c != '\\') {
        out->push_back(static_cast<char>(c));
        ++i_;
        continue;
      }
      if (++i_ >= s_.size()) break;
      char e = s_[i_++];
      switch (e) {
        case '"':
          out->push_back('"');
          break;
        case '\\':
          out->push_back('\\');
          break;
        case '/':
          out->push_back('/');
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'u': {
          uint32_t cp;
          if (!Hex4(&cp)) return Fail("bad \\u escape");
          if (cp >= 0xd800 && cp <= 0xdbff && s_.compare(i_, 2, "\\u") == 0) {
            size_t save = i_;
            i_ += 2;
            uint32_t lo;
            if (Hex4(&lo) && lo >= 0xdc00 && lo <= 0xdfff) {
              cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            } else {
              i_ = save;
            }
          }
          AppendUtf8(out, cp);
          break;
        }
        default:
          return Fail("bad escape");
      }
    }
    return Fail("unterminated string");
  }
  bool ParseArray(Value* v, int depth) {
    v->kind = Value::Kind::kArray;
    ++i_;
    SkipSpace();
    if (i_ < s_.size() && s_[i_] == ']') {
      ++i_;
      return true;
    }
    while (true) {
      Value item;
      if (!ParseValue(&item, depth + 1)) return false;
      v->array.push_back(std::move(item));
      SkipSpace();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < s_.size() && s_[i_] == ']') {
        ++i_;
        return true;
      }
      return Fail("expected , or ]");
    }
  }
  bool ParseObject(Value* v, int depth) {
    v->kind = Value::Kind::kObject;
    ++i_;
    SkipSpace();
    if (i_ < s_.size() && s_[i_] == '}') {
      ++i_;
      return true;
    }
    while (true) {
      SkipSpace();
      if (i_ >= s_.size() || s_[i_] != '"') return Fail("expected a key");
      std::string key;
      if (!ParseString(&key)) return false;
      SkipSpace();
      if (i_ >= s_.size() || s_[i_] != ':') return Fail("expected :");
      ++i_;
      Value item;
      if (!ParseValue(&item, depth + 1)) return false;
      v->object[key] = std::move(item);
      SkipSpace();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < s_.size() && s_[i_] == '}') {
        ++i_;
        return true;
      }
      return Fail("expected , or }");
    }
  }

  const std::string& s_;
  size_t i_ = 0;
  std::string error_;
};

// Parses a whole document; nullopt if it is not valid JSON (error in *why).
inline std::optional<Value> Parse(const std::string& text, std::string* why = nullptr) {
  Parser p(text);
  std::optional<Value> v = p.ParseDocument();
  if (!v && why) *why = p.error();
  return v;
}

}  // namespace sentry::json_lite

#endif  // SENTRY_BASE_JSON_LITE_H_
