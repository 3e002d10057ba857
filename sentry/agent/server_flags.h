// What `sentry serve` and `sentry mcp` take from their command line (parsed by
// sentry/cli/server_flags.h): the server-wide limits and network policy (a
// request may only tighten them), --log and the concurrency caps.
#ifndef SENTRY_AGENT_SERVER_FLAGS_H_
#define SENTRY_AGENT_SERVER_FLAGS_H_

#include <string>

#include "sentry/agent/run_request.h"

namespace sentry::agent {

struct ServerFlags {
  ServerPolicy policy;
  std::string log_path;    // --log: one JSON line per run
  int max_concurrent = 4;  // runs at once
  int max_queue = 16;      // requests waiting for a slot; past it, 429
  // The bytes of results (returned files, output) the server may hold at
  // once, each run counted at the most its result can be (service.h).
  uint64_t result_memory = 256 << 20;
};

}  // namespace sentry::agent

#endif  // SENTRY_AGENT_SERVER_FLAGS_H_
