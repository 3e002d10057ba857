// sentry mcp: an MCP server on stdio (see sentry/agent/mcp_server.h).
#include <signal.h>
#include <unistd.h>

#include <cstdio>

#include "sentry/agent/mcp_server.h"
#include "sentry/agent/service.h"
#include "sentry/agent/warm_runner.h"
#include "sentry/cli/commands.h"
#include "sentry/cli/flag_set.h"
#include "sentry/cli/server_flags.h"
#include "sentry/run/run.h"

namespace sentry::cli {
namespace {

constexpr const char* kMcpUsage = R"(usage: sentry mcp [FLAGS]

An MCP server (Model Context Protocol, revision 2025-06-18) on stdin/stdout,
for an agent to run code in sandboxes. Its tools:
  run_python {code, stdin?, files?, timeoutMs?}   Python code, run as a script
  run_command {argv, stdin?, files?, timeoutMs?}  a program
Each call runs in a fresh sandbox and returns the `sentry run --json` result
(structuredContent) and its text for the model. A client's config:
  {"mcpServers": {"sentry": {"command": "/usr/local/bin/sentry", "args": ["mcp"]}}}

A flag takes its value as --timeout 5 or --timeout=5; a SIZE as 512m, 1.5g or
64MiB (a bare number is MiB).)";

constexpr const char* kMcpFooter =
    R"(Exit codes: 0 when stdin ends, 125 for a bad flag or a server that cannot
start (the sandbox: `sentry check`).
)";

}  // namespace

int McpCommand(const std::vector<std::string>& args) {
  agent::ServerFlags flags;
  agent::WarmFlags warm;
  FlagsOutcome parsed =
      ParseServerFlags({"mcp", kMcpUsage, nullptr, kMcpFooter, nullptr}, args, &flags, &warm);
  if (parsed.kind == FlagsOutcome::Kind::kHelp) {
    std::fputs(parsed.text.c_str(), stdout);
    return 0;
  }
  if (parsed.kind == FlagsOutcome::Kind::kError) return UsageError("mcp", parsed.text);
  signal(SIGPIPE, SIG_IGN);
  // The runner's zygote is forked now, while this process has one thread.
  auto runner = agent::MakeRunner(flags.policy.base, warm);
  if (!runner.ok()) {
    std::fprintf(stderr, "sentry mcp: %s\n", std::string(runner.status().message()).c_str());
    return kExitSentryError;
  }
  agent::AgentService service(flags, std::move(*runner));
  agent::McpServer(service).Serve(0, 1);
  return 0;
}

}  // namespace sentry::cli
