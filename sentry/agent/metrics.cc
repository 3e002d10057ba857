#include "sentry/agent/metrics.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sentry::agent {

void Metrics::RecordRun(const std::string& outcome, double seconds, uint64_t denials) {
  std::lock_guard<std::mutex> lock(mu_);
  ++runs_[outcome];
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) ++bucket_counts_[i];
  }
  ++count_;
  sum_ += seconds;
  denials_ += denials;
}

void Metrics::RecordRejected(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  ++rejected_[reason];
}

std::string Metrics::Text(uint64_t ready, uint64_t warm) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string t =
      "# HELP sentry_runs_total Runs finished, by outcome (ok, failed, timeout, limit, error).\n"
      "# TYPE sentry_runs_total counter\n";
  for (const char* o : {"ok", "failed", "timeout", "limit", "error"}) {
    auto it = runs_.find(o);
    absl::StrAppend(&t, "sentry_runs_total{outcome=\"", o, "\"} ",
                    it == runs_.end() ? 0 : it->second, "\n");
  }
  absl::StrAppend(&t,
                  "# HELP sentry_run_duration_seconds Wall time of a run, request to result.\n"
                  "# TYPE sentry_run_duration_seconds histogram\n");
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    absl::StrAppend(&t, "sentry_run_duration_seconds_bucket{le=\"", kBuckets[i], "\"} ",
                    bucket_counts_[i], "\n");
  }
  absl::StrAppend(&t, "sentry_run_duration_seconds_bucket{le=\"+Inf\"} ", count_, "\n",
                  "sentry_run_duration_seconds_sum ", absl::StrFormat("%.6f", sum_), "\n",
                  "sentry_run_duration_seconds_count ", count_, "\n");
  absl::StrAppend(&t,
                  "# HELP sentry_requests_rejected_total Requests turned away, by reason.\n"
                  "# TYPE sentry_requests_rejected_total counter\n");
  for (const char* r : {"busy", "bad_request", "unauthorized", "too_large"}) {
    auto it = rejected_.find(r);
    absl::StrAppend(&t, "sentry_requests_rejected_total{reason=\"", r, "\"} ",
                    it == rejected_.end() ? 0 : it->second, "\n");
  }
  absl::StrAppend(
      &t, "# HELP sentry_denials_total Operations the sandboxes refused (as listed in results).\n",
      "# TYPE sentry_denials_total counter\nsentry_denials_total ", denials_, "\n",
      "# HELP sentry_runs_in_flight Runs in progress.\n# TYPE sentry_runs_in_flight gauge\n",
      "sentry_runs_in_flight ", in_flight.load(), "\n",
      "# HELP sentry_runs_queued Requests waiting for a run slot.\n",
      "# TYPE sentry_runs_queued gauge\nsentry_runs_queued ", queued.load(), "\n",
      "# HELP sentry_pool_ready Sandboxes made ahead and waiting (0: cold starts).\n",
      "# TYPE sentry_pool_ready gauge\nsentry_pool_ready ", ready, "\n",
      "# HELP sentry_pool_runs_total Runs a warm interpreter served.\n",
      "# TYPE sentry_pool_runs_total counter\nsentry_pool_runs_total ", warm, "\n");
  return t;
}

}  // namespace sentry::agent
