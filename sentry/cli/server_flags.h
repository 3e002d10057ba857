// The command line `sentry serve` and `sentry mcp` share, parsed with CLI11
// as `sentry run`'s is (flag_set.h): the server-wide limits and network
// policy (a request may only tighten them), --limits-file under the flags,
// the warm interpreters, --log, the concurrency caps and --log-level. Sizes
// and durations read as run's do (512m, 1.5g, 64MiB; 1500ms, 2m), and what
// the host cannot honour (--cpus past its CPUs, --memory past its RAM) is
// refused with the host's figure.
#ifndef SENTRY_CLI_SERVER_FLAGS_H_
#define SENTRY_CLI_SERVER_FLAGS_H_

#include <functional>
#include <string>
#include <vector>

#include "sentry/agent/server_flags.h"
#include "sentry/agent/warm_runner.h"
#include "sentry/cli/flag_set.h"

namespace sentry::cli {

// What one server command adds to the shared flags.
struct ServerCommand {
  const char* name;         // "serve": errors say "sentry serve: ..."
  const char* description;  // the help's first part: usage and what it does
  const char* own_group;    // the group its own flags are in (nullptr: none)
  const char* footer;       // the help's last part: exit codes
  // Declares the command's own flags (called for each parse).
  std::function<void(FlagSet&)> define_own;
};

// Parses args on top of the defaults into *server and *warm. The limits file
// is read first and the flags win over it, wherever they stand. kHelp's text
// is the whole help.
FlagsOutcome ParseServerFlags(const ServerCommand& command, const std::vector<std::string>& args,
                              agent::ServerFlags* server, agent::WarmFlags* warm);

}  // namespace sentry::cli

#endif  // SENTRY_CLI_SERVER_FLAGS_H_
