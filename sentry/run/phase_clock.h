// PhaseClock: the wall time of each phase of a run, in order, for --timings
// and the audit log's phasesMs.
#ifndef SENTRY_RUN_PHASE_CLOCK_H_
#define SENTRY_RUN_PHASE_CLOCK_H_

#include <time.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "sentry/base/timeline.h"

namespace sentry {

inline double MonotonicMs() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

// Each Mark closes the phase that began at the previous one (or at start_ms).
class PhaseClock {
 public:
  explicit PhaseClock(double start_ms) : last_ms_(start_ms) {}
  void Mark(const char* phase) {
    double now = MonotonicMs();
    phases_.emplace_back(phase, now - last_ms_);
    last_ms_ = now;
    timeline::Mark(phase);  // with SENTRY_TIMELINE: the phases' ends on one clock
  }
  std::string Text() const {
    std::string out = "sentry: timings (ms):";
    double total = 0;
    for (const auto& [phase, ms] : phases_) {
      absl::StrAppendFormat(&out, " %s %.1f,", phase, ms);
      total += ms;
    }
    absl::StrAppendFormat(&out, " total %.1f\n", total);
    return out;
  }
  // Each phase's name and milliseconds, in order: the audit log's phasesMs.
  const std::vector<std::pair<const char*, double>>& phases() const { return phases_; }

 private:
  double last_ms_;
  std::vector<std::pair<const char*, double>> phases_;
};

}  // namespace sentry

#endif  // SENTRY_RUN_PHASE_CLOCK_H_
