// The sentry's own diagnostics: what the sentry says about itself on stderr
// (a warning that a part of the sandbox could not be made, a pool's events,
// debugging detail), as opposed to the guest's output, a command's usage
// errors, the --json result and the per-run audit line, which keep their own
// channels. Written through spdlog (Debian's, header-only: the static binary
// links no shared library), one "sentry: MESSAGE" line each, at a level chosen
// with --log-level or SENTRY_LOG_LEVEL (trace, debug, info, warn, error,
// off; default info).
//
// The interface takes finished strings (absl::StrCat) so that only log.cc
// compiles spdlog's headers.
#ifndef SENTRY_BASE_LOG_H_
#define SENTRY_BASE_LOG_H_

#include <string_view>

namespace sentry::log {

enum class Level { kTrace, kDebug, kInfo, kWarn, kError, kOff };

// Sets the level by name; false (and nothing changed) for an unknown name.
bool SetLevel(std::string_view name);
// The level from SENTRY_LOG_LEVEL, if set and known (called once at start).
void LevelFromEnvironment();
bool Enabled(Level level);

void Trace(std::string_view message);
void Debug(std::string_view message);
void Info(std::string_view message);
void Warn(std::string_view message);
void Error(std::string_view message);

}  // namespace sentry::log

#endif  // SENTRY_BASE_LOG_H_
