// A run's result as a model reads it (MCP's text content): stdout, then
// stderr, then one status line naming the exit code, whether it timed out,
// the limit that ended it and each denial with its hint. Each part clipped
// (first and last halves kept: a traceback is at the end).
#ifndef SENTRY_AGENT_RESULT_TEXT_H_
#define SENTRY_AGENT_RESULT_TEXT_H_

#include <cstddef>
#include <string>

#include "nlohmann/json.hpp"

namespace sentry::agent {

inline constexpr size_t kMaxStreamText = 32 << 10;  // each of stdout and stderr
inline constexpr size_t kMaxStatusText = 4 << 10;

// s whole, or its first and last halves of max bytes with a marker between
// (cut on UTF-8 boundaries).
std::string Clip(const std::string& s, size_t max);

// "exit code 1; timedOut false; limit none; denied: ..."
std::string StatusLine(const nlohmann::json& result);

// Whether the run failed as the model should hear it: a non-zero exit, a
// timeout, a limit, or sentry's own error.
bool RunFailed(const nlohmann::json& result);

}  // namespace sentry::agent

#endif  // SENTRY_AGENT_RESULT_TEXT_H_
