#include "sentry/oci/oci_log.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sentry/base/log.h"

namespace sentry::oci {

std::string NowRfc3339() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  tm t;
  gmtime_r(&ts.tv_sec, &t);
  return absl::StrFormat("%04d-%02d-%02dT%02d:%02d:%02d.%09dZ", t.tm_year + 1900, t.tm_mon + 1,
                         t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, static_cast<int>(ts.tv_nsec));
}

OciLog::~OciLog() {
  if (fd_ > 2) close(fd_);
}

void OciLog::Open(const std::string& path, bool json, bool debug) {
  json_ = json;
  debug_ = debug;
  if (path.empty()) return;
  int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    log::Warn(absl::StrCat("cannot open the log ", path, "; logging to stderr"));
    return;
  }
  fd_ = fd;
}

void OciLog::Error(const std::string& msg) {
  Write("error", msg);
  if (fd_ > 2) std::fprintf(stderr, "sentry: %s\n", msg.c_str());
}

void OciLog::Write(const char* level, const std::string& msg) {
  std::string line;
  if (json_) {
    nlohmann::json j = {{"level", level}, {"msg", msg}, {"time", NowRfc3339()}};
    // Bytes that are not UTF-8 (a path from a config) are replaced, not thrown on.
    line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  } else {
    line = absl::StrFormat("time=\"%s\" level=%s msg=\"%s\"\n", NowRfc3339(), level, msg);
  }
  // One write per line: lines of concurrent commands do not interleave.
  (void)!write(fd_, line.data(), line.size());
}

}  // namespace sentry::oci
