#include "tests/limits/sentry_rss.h"

namespace sentry::limits {

SampledRun RunSentrySampled(const std::vector<std::string>& flags,
                            const std::vector<std::string>& cmd, double timeout_sec,
                            int interval_ms) {
  SampledRun run;
  Child child = SpawnSentry(flags, cmd);
  SentryRssSampler sampler(child.pid, interval_ms);
  run.finished = Collect(child, timeout_sec);
  sampler.Stop();
  run.peak_kb = sampler.peak_rss_kb();
  run.samples = static_cast<int>(sampler.samples());
  return run;
}

}  // namespace sentry::limits
