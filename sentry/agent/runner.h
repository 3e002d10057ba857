// Runner: runs one request of `sentry serve` or `sentry mcp` in a fresh
// sandbox and returns the `sentry run --json` result object. One small
// interface so that the way a sandbox is got (a cold start now, a warm pool
// later) can change without touching the servers.
#ifndef SENTRY_AGENT_RUNNER_H_
#define SENTRY_AGENT_RUNNER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "sentry/run/run.h"

namespace sentry::agent {

// One checked request (see run_request.h): the complete options of the run
// (limits, argv, files in and back) and what its stdin holds.
struct RunJob {
  RunOptions options;
  std::string stdin_data;
  // What the log records: the code of run_python/language requests, the
  // request's network rules as given (HOST[:PORT]), and the limits the
  // request set on top of the server's.
  std::string code;
  std::vector<std::string> allow;
  bool network_none = false;
  // Readable (an eventfd) when the caller gives up on the run (MCP's
  // notifications/cancelled): the runner kills the sandbox; -1 for never.
  int cancel_fd = -1;
};

// Gets the guest's output as it comes (POST /v1/runs?stream=1).
class OutputSink {
 public:
  virtual ~OutputSink() = default;
  // stream: 1 stdout, 2 stderr. Called from the runner's thread.
  virtual void Chunk(int stream, std::string_view data) = 0;
};

struct RunOutcome {
  std::string result_json;  // the --json object, "files" included when asked
  int exit_code = 0;        // as `sentry run` would exit
};

class Runner {
 public:
  virtual ~Runner() = default;
  // Blocks until the run is over. An error only where no result exists (the
  // sandbox's supervisor could not be started or died); a run that failed
  // has a result saying so.
  virtual absl::StatusOr<RunOutcome> Run(const RunJob& job, OutputSink* sink) = 0;
  // Sandboxes made ahead and waiting (0 for a cold runner), for /metrics.
  virtual uint64_t Ready() const { return 0; }
  // Runs served by a warm sandbox so far (the others started cold).
  virtual uint64_t WarmRuns() const { return 0; }
};

}  // namespace sentry::agent

#endif  // SENTRY_AGENT_RUNNER_H_
