#include "sentry/run/audit_log.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sentry/base/status_macros.h"

namespace sentry {

absl::Status AppendAuditRecord(const std::string& path, const AuditRecord& r) {
  std::vector<std::string> argv;
  for (const std::string& a : r.argv) argv.push_back(JsonString(a));
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  char when[64];
  tm tm;
  gmtime_r(&now.tv_sec, &tm);
  strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
  std::string line =
      absl::StrCat("{\"runId\":", JsonString(r.run_id), ",\"time\":\"", when, "\",\"argv\":[",
                   absl::StrJoin(argv, ","), "],\"code\":", JsonString(r.code),
                   ",\"codeSha256\":", JsonString(r.code_hash), ",\"limits\":", r.limits,
                   ",\"result\":", r.result ? ResultJson(*r.result) : "null",
                   ",\"sentryMaxRssBytes\":", r.sentry_max_rss_bytes,
                   ",\"phasesMs\":", r.phases_ms.empty() ? "null" : r.phases_ms, "}\n");
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoStatus(absl::StrCat("--log ", path));
  ssize_t n = write(fd, line.data(), line.size());
  int err = errno;
  close(fd);
  if (n != static_cast<ssize_t>(line.size())) return ErrnoStatus("write the log", err);
  return absl::OkStatus();
}

}  // namespace sentry
