// What `sentry serve` and `sentry mcp` take from their command line (parsed by
// sentry/cli/server_flags.h): the server-wide limits and network policy (a
// request may only tighten them), --log and the concurrency caps.
#ifndef SENTRY_AGENT_SERVER_FLAGS_H_
#define SENTRY_AGENT_SERVER_FLAGS_H_

#include <string>

#include "sentry/agent/run_request.h"

namespace sentry::agent {

// The sessions (sentry/session/session_manager.h): caps, clocks, spares.
struct SessionFlags {
  int max_sessions = 64;  // 0: no sessions
  int max_per_token = 16;
  double idle_timeout_sec = 600;   // the default, and a request's ceiling
  double max_lifetime_sec = 3600;  // likewise
  int spares = 1;                  // sessions started ahead
  int fork_spares = 2;             // fork children's supervisors started ahead
  std::string kernel_file;         // --session-kernel: a kernel of one's own ("": sentry's)
};

struct ServerFlags {
  ServerPolicy policy;
  std::string log_path;    // --log: one JSON line per run
  int max_concurrent = 4;  // runs at once
  int max_queue = 16;      // requests waiting for a slot; past it, 429
  // The bytes of results (returned files, output) the server may hold at
  // once, each run counted at the most its result can be (service.h).
  uint64_t result_memory = 256 << 20;
  SessionFlags sessions;
};

}  // namespace sentry::agent

#endif  // SENTRY_AGENT_SERVER_FLAGS_H_
