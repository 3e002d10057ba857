// The sentry's own memory during a run: a guest must not be able to grow the
// supervisor, which lives outside the guest's memory cgroup (--memory does not
// cap it). RunSentrySampled starts `sentry run`, samples it with
// SentryRssSampler (limits_util.h) while it runs and reports the peak. The pid
// sampled is the one spawned: the sentry itself; the loader and the guest are
// its children, so the guest's memory is never counted here.
#ifndef SENTRY_TESTS_LIMITS_SENTRY_RSS_H_
#define SENTRY_TESTS_LIMITS_SENTRY_RSS_H_

#include <string>
#include <vector>

#include "tests/limits/limits_util.h"

namespace sentry::limits {

// The cap every hostile workload must keep the sentry under (issue 14: "say
// 64 MiB"); a bare run of python3 -c pass peaks near 5 MiB.
inline constexpr long kSentryRssCapKb = 64 << 10;

struct SampledRun {
  Finished finished;
  long peak_kb = 0;  // the largest VmHWM seen: the sentry's peak resident size
  int samples = 0;   // how many reads found the process alive
};

// `sentry run [flags] -- cmd...`, sampled every interval_ms until it exits.
SampledRun RunSentrySampled(const std::vector<std::string>& flags,
                            const std::vector<std::string>& cmd, double timeout_sec = 120,
                            int interval_ms = 20);

}  // namespace sentry::limits

#endif  // SENTRY_TESTS_LIMITS_SENTRY_RSS_H_
