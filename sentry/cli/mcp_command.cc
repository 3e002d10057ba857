// sentry mcp: an MCP server on stdio (see sentry/agent/mcp_server.h).
#include <signal.h>
#include <unistd.h>

#include <cstdio>

#include "sentry/agent/mcp_server.h"
#include "sentry/agent/server_flags.h"
#include "sentry/agent/service.h"
#include "sentry/agent/warm_runner.h"
#include "sentry/cli/commands.h"
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

)";

}  // namespace

int McpCommand(const std::vector<std::string>& args) {
  agent::ServerFlags flags;
  agent::WarmFlags warm;
  bool help = false;
  std::string why = agent::ParseServerFlags(
      args, &flags, [&](const std::string& a, const auto& value, std::string* why) {
        if (int taken = agent::ParseWarmFlag(a, value, &warm, why); taken != 0) return taken;
        if (a == "-h" || a == "--help") help = true;
        return a == "-h" || a == "--help" ? 1 : 0;
      });
  if (help) {
    std::printf("%s%s%s", kMcpUsage, agent::kServerFlagsHelp, agent::kWarmFlagsHelp);
    return 0;
  }
  if (!why.empty()) {
    std::fprintf(stderr, "sentry mcp: %s\n(see 'sentry mcp --help')\n", why.c_str());
    return kExitSentryError;
  }
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
