// sentry mcp: an MCP server on stdio (see sentry/agent/mcp_server.h).
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "absl/strings/str_join.h"
#include "sentry/agent/mcp_server.h"
#include "sentry/agent/service.h"
#include "sentry/agent/warm_runner.h"
#include "sentry/cli/commands.h"
#include "sentry/cli/flag_set.h"
#include "sentry/cli/server_flags.h"
#include "sentry/run/run.h"
#include "sentry/session/kernel_source.h"
#include "sentry/session/sandbox_launcher.h"
#include "sentry/session/session_manager.h"

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
  session::ManagerOptions so;
  so.max_sessions = 8;
  so.max_sessions_per_tenant = 8;
  so.spares = 0;  // a client that never makes one costs no sandbox
  constexpr const char* kSessions = "Sessions";
  ServerCommand command{"mcp", kMcpUsage, kSessions, kMcpFooter, [&](FlagSet& f) {
                          f.Value("--max-sessions", kSessions, "N",
                                  "sessions open at once (default 8; 0: no session tools)",
                                  Whole(&so.max_sessions, 0, 1 << 10, "needs 0 to 1024"));
                          f.Value("--session-idle-timeout", kSessions, "DURATION",
                                  "a session unused this long ends (default 10m)",
                                  Duration(&so.idle_timeout_sec));
                          f.Value("--session-max-lifetime", kSessions, "DURATION",
                                  "a session ends this long after it was made (default 1h)",
                                  Duration(&so.max_lifetime_sec));
                          f.Value("--session-spares", kSessions, "N",
                                  "sessions started ahead, for a create_session in "
                                  "milliseconds (default 0)",
                                  Whole(&so.spares, 0, 8, "needs 0 to 8"));
                        }};
  FlagsOutcome parsed = ParseServerFlags(command, args, &flags, &warm);
  if (parsed.kind == FlagsOutcome::Kind::kHelp) {
    std::fputs(parsed.text.c_str(), stdout);
    return 0;
  }
  if (parsed.kind == FlagsOutcome::Kind::kError) return UsageError("mcp", parsed.text);
  if (so.idle_timeout_sec <= 0 || so.max_lifetime_sec <= 0) {
    return UsageError("mcp", "--session-idle-timeout and --session-max-lifetime must be positive");
  }
  signal(SIGPIPE, SIG_IGN);
  // The sessions' launcher is forked first, while this process has one thread.
  std::unique_ptr<session::SessionManager> sessions;
  if (so.max_sessions > 0) {
    auto launcher = session::SandboxLauncher::Start(flags.policy.base);
    if (!launcher.ok()) {
      std::fprintf(stderr, "sentry mcp: %s\n", std::string(launcher.status().message()).c_str());
      return kExitSentryError;
    }
    so.max_sessions_per_tenant = so.max_sessions;  // one client: the tenant "mcp"
    so.policy = flags.policy;
    so.log_path = flags.log_path;
    so.kernel_argv = {"python3", "-c", std::string(SessionKernelSource())};
    if (!warm.preload.empty()) {
      so.kernel_argv.push_back("--preload");
      so.kernel_argv.push_back(absl::StrJoin(warm.preload, ","));
    }
    sessions = std::make_unique<session::SessionManager>(so, std::move(*launcher));
  }
  // The runner's zygote is forked now, while this process has one thread.
  auto runner = agent::MakeRunner(flags.policy.base, warm);
  if (!runner.ok()) {
    std::fprintf(stderr, "sentry mcp: %s\n", std::string(runner.status().message()).c_str());
    return kExitSentryError;
  }
  agent::AgentService service(flags, std::move(*runner));
  if (sessions) {
    sessions->Start();
    service.set_sessions(sessions.get());
  }
  agent::McpServer(service).Serve(0, 1);
  if (sessions) sessions->Shutdown();  // at stdin's end: every session's sandbox is gone
  return 0;
}

}  // namespace sentry::cli
