// The audit log (--log FILE): one JSON line per run, appended with a single
// write on an O_APPEND file, so concurrent runs never interleave their lines.
#ifndef SENTRY_RUN_AUDIT_LOG_H_
#define SENTRY_RUN_AUDIT_LOG_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "sentry/run/phase_clock.h"
#include "sentry/run/result.h"
#include "sentry/run/run.h"
#include "sentry/run/script_copy.h"

namespace sentry {

struct AuditRecord {
  std::string run_id;
  std::vector<std::string> argv;
  std::string code;               // the script's text, capped
  std::string code_hash;          // sha-256... of the whole script (hex), or ""
  nlohmann::ordered_json limits;  // LimitsJson's object
  const RunResult* result = nullptr;
  // The result already as JSON text (serve, mcp), if result is null; text that
  // is not JSON is logged as null.
  std::string result_json;
  uint64_t sentry_max_rss_bytes = 0;  // the sentry process's own peak RSS
  nlohmann::ordered_json phases_ms;   // each phase's wall time (--timings), or null
};

// The line, without its newline: {"runId", "time", "argv", "code",
// "codeSha256", "limits", "result", "sentryMaxRssBytes", "phasesMs"} in that
// order. time is an ISO 8601 UTC second ("2026-12-02T15:49:16Z").
std::string AuditLine(const AuditRecord& record, const std::string& time);

absl::Status AppendAuditRecord(const std::string& path, const AuditRecord& record);

// The run's limits as the audit log shows them: {"timeoutSec", "memoryBytes",
// "pids", "cpus", "diskBytes", "maxOutputBytes", "nofile"}.
nlohmann::ordered_json LimitsJson(const RunOptions& o);

// {"prepare": 0.71, ...}: each phase's milliseconds, to the hundredth.
nlohmann::ordered_json PhasesJson(const PhaseClock& clock);

// Appends the run's line to o.log_path: its argv, the script (the bytes the
// guest got, as copied in) and its hash, the limits, the result and
// the phases. A failure is said on stderr; the run's outcome stays.
void LogRun(const RunOptions& o, const std::string& run_id, const ScriptCopy& script,
            const RunResult& r, const PhaseClock& clock);

}  // namespace sentry

#endif  // SENTRY_RUN_AUDIT_LOG_H_
