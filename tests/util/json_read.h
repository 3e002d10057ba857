// Reading the JSON sentry writes (a --json result, a --log line, check
// --json) in a test, parsed by nlohmann. A test must fail an assertion on a
// missing or mistyped field, with the value shown, not abort: nlohmann's
// const operator[] on a missing key is undefined and get<T>() throws. So a
// test reads fields through At and the scalars through Str, Num and Int,
// which give null or a default instead; a value compares as it is
// (EXPECT_EQ(At(r, "exitCode"), 3)).
#ifndef TESTS_UTIL_JSON_READ_H_
#define TESTS_UTIL_JSON_READ_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace sentry::testing {

// The whole text as one JSON value; nullopt when it is not JSON.
std::optional<nlohmann::json> ParseJson(const std::string& text);

// j's member key, or null when j is not an object or has no such member.
const nlohmann::json& At(const nlohmann::json& j, std::string_view key);

// The string j holds, or "" when j is no string.
std::string Str(const nlohmann::json& j);
// The number j holds, or def when j is no number.
double Num(const nlohmann::json& j, double def = -1);
int64_t Int(const nlohmann::json& j, int64_t def = -1);

}  // namespace sentry::testing

#endif  // TESTS_UTIL_JSON_READ_H_
