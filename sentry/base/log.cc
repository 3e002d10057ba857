#include "sentry/base/log.h"

// Header-only spdlog over Debian's header-only use of fmt: Debian 12 ships
// both as shared libraries only, and the sentry binary is static.
#define SPDLOG_HEADER_ONLY
#define FMT_HEADER_ONLY
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace sentry::log {
namespace {

// Made on first use: a run that says nothing pays nothing at start-up.
spdlog::logger& Logger() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = std::make_shared<spdlog::logger>("sentry",
                                              std::make_shared<spdlog::sinks::stderr_sink_mt>());
    l->set_pattern("sentry: %v");
    l->set_level(spdlog::level::info);
    l->flush_on(spdlog::level::trace);  // every line at once: stderr is a log, not a stream
    return l;
  }();
  return *logger;
}

bool LevelOf(std::string_view name, spdlog::level::level_enum* out) {
  static constexpr std::pair<std::string_view, spdlog::level::level_enum> kNames[] = {
      {"trace", spdlog::level::trace},  {"debug", spdlog::level::debug},
      {"info", spdlog::level::info},    {"warn", spdlog::level::warn},
      {"warning", spdlog::level::warn}, {"error", spdlog::level::err},
      {"off", spdlog::level::off}};
  for (const auto& [n, level] : kNames) {
    if (n == name) {
      *out = level;
      return true;
    }
  }
  return false;
}

void Write(spdlog::level::level_enum level, std::string_view message) {
  spdlog::logger& l = Logger();
  if (l.should_log(level)) l.log(level, "{}", message);
}

}  // namespace

bool SetLevel(std::string_view name) {
  spdlog::level::level_enum level;
  if (!LevelOf(name, &level)) return false;
  Logger().set_level(level);
  return true;
}

void LevelFromEnvironment() {
  if (const char* v = std::getenv("SENTRY_LOG_LEVEL")) SetLevel(v);
}

bool Enabled(Level level) {
  spdlog::level::level_enum l = spdlog::level::off;
  switch (level) {
    case Level::kTrace:
      l = spdlog::level::trace;
      break;
    case Level::kDebug:
      l = spdlog::level::debug;
      break;
    case Level::kInfo:
      l = spdlog::level::info;
      break;
    case Level::kWarn:
      l = spdlog::level::warn;
      break;
    case Level::kError:
      l = spdlog::level::err;
      break;
    case Level::kOff:
      return false;
  }
  return Logger().should_log(l);
}

// stdout_sink_base writes to the FILE* it is given and flushes each line;
// no lock of its own (the caller has one).
LineLog::LineLog(FILE* out)
    : logger_(std::make_shared<spdlog::logger>(
          "lines",
          std::make_shared<spdlog::sinks::stdout_sink_base<spdlog::details::console_nullmutex>>(
              out))) {
  logger_->set_pattern("%v");
  logger_->set_level(spdlog::level::trace);
}

LineLog::~LineLog() = default;

void LineLog::Write(std::string_view line) { logger_->log(spdlog::level::info, "{}", line); }

void Trace(std::string_view m) { Write(spdlog::level::trace, m); }
void Debug(std::string_view m) { Write(spdlog::level::debug, m); }
void Info(std::string_view m) { Write(spdlog::level::info, m); }
void Warn(std::string_view m) { Write(spdlog::level::warn, m); }
void Error(std::string_view m) { Write(spdlog::level::err, m); }

namespace {
std::mutex notices_mu;
std::vector<std::string>& Notices() {
  static auto* kept = new std::vector<std::string>;  // never destroyed: no exit-order trouble
  return *kept;
}
}  // namespace

void Notice(std::string_view m, Level level) {
  Write(level == Level::kWarn    ? spdlog::level::warn
        : level == Level::kDebug ? spdlog::level::debug
                                 : spdlog::level::info,
        m);
  std::string_view text = m;
  if (text.substr(0, 8) == "notice: ") text.remove_prefix(8);
  std::lock_guard<std::mutex> lock(notices_mu);
  if (Notices().size() < kMaxNotices) Notices().emplace_back(text);
}

std::vector<std::string> TakeNotices() {
  std::lock_guard<std::mutex> lock(notices_mu);
  return std::exchange(Notices(), {});
}

}  // namespace sentry::log
