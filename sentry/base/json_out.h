// Writing JSON. Every object sentry writes (results, the audit log, check
// --json, the serve stream) is built as a nlohmann::ordered_json, so its keys
// come out in the order they were added: the order the README lists them.
// nlohmann throws on a string that is not UTF-8, and guest text is anything:
// JsonText makes it valid first, so JsonDump never throws.
#ifndef SENTRY_BASE_JSON_OUT_H_
#define SENTRY_BASE_JSON_OUT_H_

#include <nlohmann/json.hpp>
#include <string>

namespace sentry {

// Length of the valid UTF-8 sequence at s[i], or 0.
size_t Utf8Len(const std::string& s, size_t i);
bool IsUtf8(const std::string& s);
// Valid UTF-8: each byte that starts no valid sequence becomes U+FFFD (one
// per byte, so a count of replacements is a count of bad bytes).
std::string ValidUtf8(const std::string& s);

// A string value made of s, as ValidUtf8 makes it.
nlohmann::ordered_json JsonText(const std::string& s);
// A number as printf's %g showed it before: an integral value as an integer
// ("30", not "30.0"); NaN and infinities, which JSON cannot say, as null.
nlohmann::ordered_json JsonNumber(double v);
// Compact, UTF-8 as is (no \u escapes but for control characters).
std::string JsonDump(const nlohmann::ordered_json& j);

}  // namespace sentry

#endif  // SENTRY_BASE_JSON_OUT_H_
