// JSON from a client (a `sentry serve` body, a `sentry mcp` line), parsed
// with its size and nesting bounded before any value exists: nlohmann's
// parser is iterative, but copying, comparing or dumping a value recurses
// once per level, and a 100,000-deep array in 200 KB overflows the stack.
// The depth is checked while parsing (a callback that stops at the first
// level too deep), so no deep value is ever built.
#ifndef SENTRY_AGENT_JSON_BOUNDED_H_
#define SENTRY_AGENT_JSON_BOUNDED_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "nlohmann/json.hpp"

namespace sentry::agent {

// Deep enough for every request the servers take (an MCP tools/call with
// files is 5 levels), shallow enough that any recursion over it is cheap.
inline constexpr size_t kMaxJsonDepth = 64;

enum class JsonRefusal { kNone, kTooLarge, kTooDeep, kMalformed };

// Parses text into *out. On a refusal *out is null and *why says what was
// wrong ("nested deeper than 64 levels", the parser's message, ...).
JsonRefusal ParseBoundedJson(std::string_view text, size_t max_bytes, size_t max_depth,
                             nlohmann::json* out, std::string* why);

}  // namespace sentry::agent

#endif  // SENTRY_AGENT_JSON_BOUNDED_H_
