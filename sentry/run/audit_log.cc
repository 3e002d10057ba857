#include "sentry/run/audit_log.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "sentry/base/log.h"
#include "sentry/base/sha256.h"
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
  std::string line = absl::StrCat(
      "{\"runId\":", JsonString(r.run_id), ",\"time\":\"", when, "\",\"argv\":[",
      absl::StrJoin(argv, ","), "],\"code\":", JsonString(r.code),
      ",\"codeSha256\":", JsonString(r.code_hash), ",\"limits\":", r.limits, ",\"result\":",
      r.result                 ? ResultJson(*r.result)
      : !r.result_json.empty() ? r.result_json
                               : "null",
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

void LogRun(const RunOptions& o, const std::string& run_id, const ScriptCopy& script,
            const RunResult& r, const std::string& phases_json) {
  AuditRecord rec;
  rec.run_id = run_id;
  rec.argv = o.argv;
  if (!script.host_path.empty()) {
    rec.code_hash = Sha256Hex(script.text);
    rec.code = script.text.substr(0, 64 << 10);
  }
  rec.limits = absl::StrFormat(
      "{\"timeoutSec\":%g,\"memoryBytes\":%d,\"pids\":%d,\"cpus\":%g,\"diskBytes\":%d,"
      "\"maxOutputBytes\":%d,\"nofile\":%d}",
      o.timeout_sec, o.memory_bytes, o.pids, o.cpus, o.disk_bytes, o.max_output, o.nofile);
  rec.result = &r;
  rec.phases_ms = phases_json;
  rusage self;
  if (getrusage(RUSAGE_SELF, &self) == 0) {
    rec.sentry_max_rss_bytes = static_cast<uint64_t>(self.ru_maxrss) * 1024;
  }
  if (absl::Status s = AppendAuditRecord(o.log_path, rec); !s.ok()) {
    log::Error(std::string(s.message()));
  }
}

}  // namespace sentry
