// WarmRunner: the Runner of `sentry serve` and `sentry mcp` with a pool of
// warm Python interpreters (sentry/pool/warm_python.h) in front of the cold
// runner.
//
// A request goes warm only when a warm interpreter runs it exactly as a cold
// start would: `python3 SCRIPT` (run_python, language python), request files
// of the default mode 0644 only, and the pool's sandbox shape (no network,
// the default disk, cgroups and namespaces). A streamed run's output comes
// through pipes the warm sandbox tees it into, and returnFiles are read back
// by its supervisor, as a cold run's are. Everything else, and every request
// the pool cannot take at once (none free within the accept wait, the daemon
// gone), runs cold: a run never fails for want of a warm sandbox. Each warm
// interpreter serves one run and is destroyed; the pool daemon makes the
// next in the background.
#ifndef SENTRY_AGENT_WARM_RUNNER_H_
#define SENTRY_AGENT_WARM_RUNNER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sentry/agent/runner.h"
#include "sentry/pool/warm_python.h"

namespace sentry::agent {

// The flags of the warm pool (serve and mcp; sentry/cli/server_flags.h).
struct WarmFlags {
  // Back to back, runs take interpreters as fast as they are made: two made
  // at once (both CPUs of a small machine, at a lower priority than runs)
  // keep a client at 0.8x the rate of native cold starts; one did 0.63x.
  int pool_size = 4;  // 0: every run cold
  int pool_refill = 2;
  int pool_wait_ms = 100;  // for a free interpreter, before a cold start
  std::vector<std::string> preload;
};

// The server's runner: the cold one (whose zygote is forked now: call while
// the process has one thread) behind a warm pool unless pool_size is 0 or
// the server's options give runs a shape the pool does not keep (a network,
// --disk, --no-cgroups, namespace flags). A pool that cannot start leaves
// the cold runner alone, with a warning on stderr.
absl::StatusOr<std::unique_ptr<Runner>> MakeRunner(const RunOptions& base, const WarmFlags& warm);

class WarmRunner final : public Runner {
 public:
  WarmRunner(std::unique_ptr<Runner> cold, std::unique_ptr<WarmPythonPool> pool)
      : cold_(std::move(cold)), pool_(std::move(pool)) {}

  absl::StatusOr<RunOutcome> Run(const RunJob& job, OutputSink* sink) override;
  uint64_t Ready() const override;

  // Whether job may run warm; "" if so, else why not (for tests and logs).
  static std::string WhyCold(const RunJob& job);

  uint64_t WarmRuns() const override { return warm_runs_; }

 private:
  std::unique_ptr<Runner> cold_;
  std::unique_ptr<WarmPythonPool> pool_;
  std::atomic<uint64_t> warm_runs_{0};
};

}  // namespace sentry::agent

#endif  // SENTRY_AGENT_WARM_RUNNER_H_
