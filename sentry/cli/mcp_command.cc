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
#include "sentry/session/session_setup.h"

namespace sentry::cli {
namespace {

constexpr const char* kMcpUsage = R"(usage: sentry mcp [FLAGS]

An MCP server (Model Context Protocol, revision 2025-06-18) on stdin/stdout,
for an agent to run code in sandboxes. Its tools:
  run_python {code, stdin?, files?, returnFiles?, timeoutMs?, sessionId?}
  run_command {argv, stdin?, files?, returnFiles?, timeoutMs?, sessionId?}
Each call runs in a fresh sandbox and returns the `sentry run --json` result
(structuredContent) and its text for the model; returned images come back as
image content. With a sessionId (create_session {limits?, network?, files?,
idleTimeoutMs?, maxLifetimeMs?} -> sessionId; close_session {sessionId}) the
code runs in that session's persistent Python instead: variables, imports
and files stay, the last expression's value, display() and matplotlib
figures come back (PNGs as image content), and read_file, write_file and
list_files {sessionId, ...} reach its files. A client's config:
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
  // The sessions' launcher is forked first, while this process has one thread.
  auto sessions = session::MakeSessionManager(flags, warm.preload);
  if (!sessions.ok()) {
    std::fprintf(stderr, "sentry mcp: %s\n", std::string(sessions.status().message()).c_str());
    return kExitSentryError;
  }
  // The runner's zygote is forked now, while this process has one thread.
  auto runner = agent::MakeRunner(flags.policy.base, warm);
  if (!runner.ok()) {
    std::fprintf(stderr, "sentry mcp: %s\n", std::string(runner.status().message()).c_str());
    return kExitSentryError;
  }
  agent::AgentService service(flags, std::move(*runner));
  if (*sessions) {
    (*sessions)->Start();
    service.set_sessions(sessions->get());
  }
  agent::McpServer(service).Serve(0, 1);
  if (*sessions) (*sessions)->Shutdown();  // at stdin's end: every session's sandbox is gone
  return 0;
}

}  // namespace sentry::cli
