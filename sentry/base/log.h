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

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace spdlog {
class logger;
}  // namespace spdlog

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

// A notice: a line for the user about this run (a file not copied in, a
// cold start, a wall this host lacks), written as Info (or Warn) writes it
// and also kept, so that the run's result lists it ("notices": an agent
// reading --json learns what the terminal would have shown; with kDebug it
// is kept but written only at --log-level debug). At most
// kMaxNotices are kept; a leading "notice: " is not.
inline constexpr size_t kMaxNotices = 32;
void Notice(std::string_view message, Level level = Level::kInfo);
// The notices kept so far, in order; the list is then empty.
std::vector<std::string> TakeNotices();

// A logger of its own for lines that are the output a user asked for, not
// diagnostics (--trace): each line written as given (pattern "%v"), whole,
// and flushed at once, to `out`, which the caller keeps open for the
// LineLog's life. The --log-level never silences it. Not locked: the caller
// writes one line at a time.
class LineLog final {
 public:
  explicit LineLog(FILE* out);
  LineLog(const LineLog&) = delete;
  LineLog& operator=(const LineLog&) = delete;
  ~LineLog();

  void Write(std::string_view line);

 private:
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace sentry::log

#endif  // SENTRY_BASE_LOG_H_
