// The flags `sentry serve` and `sentry mcp` share: the server-wide limits and
// network policy (a request may only tighten them), --limits-file, --log and
// the concurrency cap.
#ifndef SENTRY_AGENT_SERVER_FLAGS_H_
#define SENTRY_AGENT_SERVER_FLAGS_H_

#include <functional>
#include <string>
#include <vector>

#include "sentry/agent/run_request.h"

namespace sentry::agent {

struct ServerFlags {
  ServerPolicy policy;
  std::string log_path;    // --log: one JSON line per run
  int max_concurrent = 4;  // runs at once
  int max_queue = 16;      // requests waiting for a slot; past it, 429
};

// The help text of the shared flags.
extern const char* const kServerFlagsHelp;

// Parses args into *out. `own` is offered each flag first (with a way to take
// its value): it returns 1 if it took the flag, 0 if not, -1 on its error
// (having set *why). Returns "" or what is wrong.
std::string ParseServerFlags(
    const std::vector<std::string>& args, ServerFlags* out,
    const std::function<int(const std::string& flag, const std::function<bool(std::string*)>& value,
                            std::string* why)>& own);

}  // namespace sentry::agent

#endif  // SENTRY_AGENT_SERVER_FLAGS_H_
