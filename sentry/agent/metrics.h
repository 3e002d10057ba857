// What `sentry serve` reports on GET /metrics, in Prometheus' text format:
// runs by outcome, their latency, the requests turned away, the denials.
#ifndef SENTRY_AGENT_METRICS_H_
#define SENTRY_AGENT_METRICS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace sentry::agent {

class Metrics final {
 public:
  // outcome: ok, failed (non-zero exit), timeout, limit, error (sentry's own).
  void RecordRun(const std::string& outcome, double seconds, uint64_t denials);
  // reason: busy, bad_request, unauthorized, too_large.
  void RecordRejected(const std::string& reason);
  std::atomic<int64_t> in_flight{0};
  std::atomic<int64_t> queued{0};
  // The text of GET /metrics; ready: sandboxes waiting in a pool; warm:
  // runs a pool served (the others started cold).
  std::string Text(uint64_t ready, uint64_t warm = 0) const;

 private:
  static constexpr std::array<double, 12> kBuckets = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                      1,    2.5,   5,    10,  30,   60};
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> runs_;
  std::map<std::string, uint64_t> rejected_;
  std::array<uint64_t, kBuckets.size()> bucket_counts_{};
  uint64_t count_ = 0;
  double sum_ = 0;
  uint64_t denials_ = 0;
};

}  // namespace sentry::agent

#endif  // SENTRY_AGENT_METRICS_H_
