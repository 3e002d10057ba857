// ColdRunner: each run in a fresh sandbox started from nothing, by a child of
// a small fork server (a "zygote") that the server process makes at its start.
//
// Why a zygote: a run's supervisor (RunSandbox) owns its process (it blocks
// signals, reaps every child, names its cgroup after its pid), so each run
// needs a process of its own. Forking the server itself would copy a process
// with many threads (and their locks); exec'ing `sentry run` again costs the
// static binary's start-up on every run. The zygote is forked while the
// server is still one thread, stays one thread, and forks a child per run:
// a copy of a small process that needs no exec, runs RunSandbox with the
// job's options and writes the --json result into a pipe.
//
// The job travels as a memfd (its options, file contents included), with the
// pipes for the result and the live output, and the stdin memfd: nothing of
// a request is written on the host's file system.
#ifndef SENTRY_AGENT_COLD_RUNNER_H_
#define SENTRY_AGENT_COLD_RUNNER_H_

#include <memory>

#include "sentry/agent/runner.h"
#include "sentry/base/unique_fd.h"

namespace sentry::agent {

class ColdRunner final : public Runner {
 public:
  // Forks the zygote, which keeps base (the server's options: what a job
  // does not set). Call while the process has one thread.
  static absl::StatusOr<std::unique_ptr<ColdRunner>> Start(const RunOptions& base);
  ~ColdRunner() override;
  ColdRunner(const ColdRunner&) = delete;
  ColdRunner& operator=(const ColdRunner&) = delete;

  absl::StatusOr<RunOutcome> Run(const RunJob& job, OutputSink* sink) override;

 private:
  ColdRunner(UniqueFd sock, pid_t zygote) : sock_(std::move(sock)), zygote_(zygote) {}
  UniqueFd sock_;  // to the zygote: one message per run
  pid_t zygote_;
};

}  // namespace sentry::agent

#endif  // SENTRY_AGENT_COLD_RUNNER_H_
