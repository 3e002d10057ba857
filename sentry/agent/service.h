// AgentService: what `sentry serve` and `sentry mcp` share behind their
// protocols: a request checked and run (run_request.h, Runner), the
// concurrency cap with its bounded queue, the metrics and the --log line.
//
// Results are held in memory (read from the run, parsed, written back out:
// about three copies), so each run is counted against --result-memory at
// the most its result can be: its returned files base64-encoded, its two
// output streams escaped at worst (6 bytes a byte), capped at the 64 MiB a
// runner accepts. A run waits for room (holding its slot); one that could
// not fit alone is refused (413). The server's RSS stays near its base plus
// three times --result-memory, however many large results are asked for.
#ifndef SENTRY_AGENT_SERVICE_H_
#define SENTRY_AGENT_SERVICE_H_

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "nlohmann/json.hpp"
#include "sentry/agent/metrics.h"
#include "sentry/agent/run_request.h"
#include "sentry/agent/runner.h"
#include "sentry/agent/server_flags.h"

namespace sentry::session {
class SessionManager;
}  // namespace sentry::session

namespace sentry::agent {

class AgentService final {
 public:
  // Also sets malloc's mmap threshold for the process (see service.cc).
  AgentService(ServerFlags flags, std::unique_ptr<Runner> runner);

  // A slot to run in: waits while max_concurrent runs are in progress; false
  // at once if max_queue requests already wait (the caller answers "busy").
  bool Acquire();
  void Release();
  // No new run is admitted (Acquire fails); WaitIdle waits for those in progress.
  void Drain();
  void WaitIdle();

  struct Answer {
    int status = 200;       // an HTTP status: 200, or the request's 4xx, or 500
    std::string body;       // the result object, or {"error": {...}}
    nlohmann::json result;  // parsed, when status is 200
    // The run's share of the result memory (--result-memory), given back
    // when the last copy of this goes: keep it until the answer is sent.
    std::shared_ptr<void> memory;
  };
  // Checks and runs one request (the caller holds a slot). stream: the
  // output goes to sink as it comes; cancel_fd as RunJob's.
  Answer Run(const nlohmann::json& request, bool stream, OutputSink* sink, int cancel_fd = -1);

  const ServerFlags& flags() const { return flags_; }
  // The sessions (POST /v1/sessions...), or nullptr where the server has none.
  void set_sessions(session::SessionManager* sessions) { sessions_ = sessions; }
  session::SessionManager* sessions() const { return sessions_; }
  Metrics& metrics() { return metrics_; }
  // The runs' metrics, and the sessions' if the server has them.
  std::string MetricsText() const;

 private:
  void Log(const RunJob& job, const std::string& result_json);
  // Waits for bytes of the result memory (false: the server is draining).
  bool Reserve(uint64_t bytes);
  void Unreserve(uint64_t bytes);

  const ServerFlags flags_;
  std::unique_ptr<Runner> runner_;
  session::SessionManager* sessions_ = nullptr;
  Metrics metrics_;
  std::mutex mu_;
  std::condition_variable cv_;
  int running_ = 0;
  int waiting_ = 0;
  uint64_t reserved_ = 0;
  bool draining_ = false;
};

}  // namespace sentry::agent

#endif  // SENTRY_AGENT_SERVICE_H_
