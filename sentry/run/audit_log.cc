#include "sentry/run/audit_log.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "sentry/base/json_out.h"
#include "sentry/base/log.h"
#include "sentry/base/sha256.h"
#include "sentry/base/status_macros.h"
#include "sentry/run/result_object.h"

namespace sentry {
namespace {

using Json = nlohmann::ordered_json;

std::string UtcNow() {
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  char when[64];
  tm tm;
  gmtime_r(&now.tv_sec, &tm);
  strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return when;
}

uint64_t OwnMaxRssBytes() {
  rusage self;
  if (getrusage(RUSAGE_SELF, &self) != 0) return 0;
  return static_cast<uint64_t>(self.ru_maxrss) * 1024;
}

}  // namespace

std::string AuditLine(const AuditRecord& r, const std::string& time) {
  Json argv = Json::array();
  for (const std::string& a : r.argv) argv.push_back(JsonText(a));
  Json result = r.result ? ResultObject(*r.result)
                         : Json::parse(r.result_json, nullptr, /*allow_exceptions=*/false);
  if (result.is_discarded()) result = nullptr;
  Json line = {{"runId", JsonText(r.run_id)},
               {"time", JsonText(time)},
               {"argv", std::move(argv)},
               {"code", JsonText(r.code)},
               {"codeSha256", JsonText(r.code_hash)},
               {"limits", r.limits},
               {"result", std::move(result)},
               {"sentryMaxRssBytes", r.sentry_max_rss_bytes},
               {"phasesMs", r.phases_ms}};
  return JsonDump(line);
}

absl::Status AppendAuditRecord(const std::string& path, const AuditRecord& r) {
  std::string line = AuditLine(r, UtcNow()) + "\n";
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoStatus(absl::StrCat("--log ", path));
  ssize_t n = write(fd, line.data(), line.size());
  int err = errno;
  close(fd);
  if (n != static_cast<ssize_t>(line.size())) return ErrnoStatus("write the log", err);
  return absl::OkStatus();
}

Json LimitsJson(const RunOptions& o) {
  return {{"timeoutSec", JsonNumber(o.timeout_sec)},
          {"memoryBytes", o.memory_bytes},
          {"pids", o.pids},
          {"cpus", JsonNumber(o.cpus)},
          {"diskBytes", o.disk_bytes},
          {"maxOutputBytes", o.max_output},
          {"nofile", o.nofile}};
}

Json PhasesJson(const PhaseClock& clock) {
  Json out = Json::object();
  for (const auto& [phase, ms] : clock.phases())
    out[phase] = JsonNumber(std::round(ms * 100) / 100);
  return out;
}

void LogRun(const RunOptions& o, const std::string& run_id, const ScriptCopy& script,
            const RunResult& r, const PhaseClock& clock) {
  AuditRecord rec;
  rec.run_id = run_id;
  rec.argv = o.argv;
  if (!script.host_path.empty()) {
    rec.code_hash = Sha256Hex(script.text);
    rec.code = script.text.substr(0, 64 << 10);
  }
  rec.limits = LimitsJson(o);
  rec.result = &r;
  rec.phases_ms = PhasesJson(clock);
  rec.sentry_max_rss_bytes = OwnMaxRssBytes();
  if (absl::Status s = AppendAuditRecord(o.log_path, rec); !s.ok()) {
    log::Error(std::string(s.message()));
  }
}

}  // namespace sentry
