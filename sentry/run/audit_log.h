// The audit log (--log FILE): one JSON line per run, appended with a single
// write on an O_APPEND file, so concurrent runs never interleave their lines.
#ifndef SENTRY_RUN_AUDIT_LOG_H_
#define SENTRY_RUN_AUDIT_LOG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "sentry/run/result.h"
#include "sentry/run/run.h"
#include "sentry/run/script_copy.h"

namespace sentry {

struct AuditRecord {
  std::string run_id;
  std::vector<std::string> argv;
  std::string code;       // the script's text, capped
  std::string code_hash;  // sha-256... of the whole script (hex), or ""
  std::string limits;     // a JSON object
  const RunResult* result = nullptr;
  std::string result_json;            // the result already as JSON (serve, mcp), if result is null
  uint64_t sentry_max_rss_bytes = 0;  // the sentry process's own peak RSS
  std::string phases_ms;              // a JSON object: each phase's wall time (--timings)
};

absl::Status AppendAuditRecord(const std::string& path, const AuditRecord& record);

// Appends the run's line to o.log_path: its argv, the script (the bytes the
// guest got, as copied in) and its hash, the limits, the result and
// the phases. A failure is said on stderr; the run's outcome stays.
void LogRun(const RunOptions& o, const std::string& run_id, const ScriptCopy& script,
            const RunResult& r, const std::string& phases_json);

}  // namespace sentry

#endif  // SENTRY_RUN_AUDIT_LOG_H_
