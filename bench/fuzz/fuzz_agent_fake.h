// The agent's servers for the fuzz targets fuzz_mcp_line and fuzz_http_head:
// the real AgentService (request checks, slots, metrics) over a runner that
// runs nothing and answers at once with a fixed result object.
#ifndef BENCH_FUZZ_FUZZ_AGENT_FAKE_H_
#define BENCH_FUZZ_FUZZ_AGENT_FAKE_H_

#include <memory>

#include "sentry/agent/runner.h"
#include "sentry/agent/service.h"

namespace fuzz_agent {

class FakeRunner final : public sentry::agent::Runner {
 public:
  absl::StatusOr<sentry::agent::RunOutcome> Run(const sentry::agent::RunJob& job,
                                                sentry::agent::OutputSink* sink) override {
    if (sink) sink->Chunk(1, "out\xe2\x82");  // a UTF-8 sequence cut in two
    if (sink) sink->Chunk(1, "\xac\n");
    sentry::agent::RunOutcome out;
    out.result_json =
        R"({"stdout":"out\n","stderr":"","exitCode":0,"signal":null,"timedOut":false,)"
        R"("limit":null,"error":null,"durationMs":1,"denied":[]})";
    (void)job;
    return out;
  }
};

inline sentry::agent::AgentService& Service() {
  static sentry::agent::AgentService* service = [] {
    sentry::agent::ServerFlags flags;
    flags.policy.max_request_bytes = 1 << 20;
    flags.max_concurrent = 2;
    flags.max_queue = 64;
    return new sentry::agent::AgentService(flags, std::make_unique<FakeRunner>());
  }();
  return *service;
}

}  // namespace fuzz_agent

#endif  // BENCH_FUZZ_FUZZ_AGENT_FAKE_H_
