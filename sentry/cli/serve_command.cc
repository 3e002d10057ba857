// sentry serve: an HTTP API for agents (see sentry/agent/http_server.h).
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "sentry/agent/http_server.h"
#include "sentry/agent/service.h"
#include "sentry/agent/warm_runner.h"
#include "sentry/cli/commands.h"
#include "sentry/cli/flag_set.h"
#include "sentry/cli/server_flags.h"
#include "sentry/run/run.h"
#include "sentry/session/session_manager.h"
#include "sentry/session/session_setup.h"

namespace sentry::cli {
namespace {

constexpr const char* kServeUsage =
    R"TXT(usage: sentry serve --listen ADDR (--token-file FILE | --token TOKEN) [FLAGS]

An HTTP/1.1 JSON API that runs each request in a fresh sandbox:
  POST /v1/runs           {"language": "python", "code": "print(1)"} or {"argv": [...]},
                          with "stdin", "files", "limits", "network", "returnFiles";
                          answers with the `sentry run --json` result object
  POST /v1/runs?stream=1  NDJSON: {"stream": "stdout", "data": "..."} as output comes,
                          then {"result": {...}}
  POST /v1/sessions       a session: a sandbox and a Python kernel kept for one
                          task (cells, commands, files; see sentry/agent/session_routes.h)
  GET  /v1/health         {"status": "ok"} (no token needed)
  GET  /metrics           Prometheus text: runs by outcome, latency, refusals, denials
Every other request needs "Authorization: Bearer TOKEN". SIGTERM/SIGINT: no
new run is taken, runs in progress finish, then sentry exits 0.

A flag takes its value as --timeout 5 or --timeout=5; a SIZE as 512m, 1.5g or
64MiB (a bare number is MiB).)TXT";

constexpr const char* kHttp = "HTTP";

// --token-file: either one token (the first line, as before: its tenant is
// "default"), or lines "NAME TOKEN", one tenant each ('#' starts a comment).
std::string ReadTokenFile(const std::string& path,
                          std::vector<std::pair<std::string, std::string>>* tokens) {
  std::ifstream in(path);
  if (!in) return "cannot read the token file " + path;
  std::string line;
  std::vector<std::vector<std::string>> rows;
  while (std::getline(in, line)) {
    absl::string_view t = absl::StripAsciiWhitespace(line);
    if (t.empty() || t[0] == '#') continue;
    std::vector<std::string> words;
    std::istringstream ws{std::string(t)};
    for (std::string w; ws >> w;) words.push_back(w);
    rows.push_back(std::move(words));
  }
  if (rows.empty()) return "the token file " + path + " holds no token";
  if (rows[0].size() == 1) {
    tokens->emplace_back("default", rows[0][0]);
    return "";
  }
  std::set<std::string> names, seen;
  for (const auto& row : rows) {
    if (row.size() != 2) return "the token file " + path + ": each line is NAME TOKEN";
    const std::string& name = row[0];
    bool ok = !name.empty() && name.size() <= 64;
    for (char c : name) ok = ok && (absl::ascii_isalnum(c) || c == '_' || c == '-' || c == '.');
    if (!ok) return "the token file " + path + ": a NAME is 1-64 of [A-Za-z0-9_.-]";
    if (row[1].size() < 16)
      return "the token file " + path + ": the token of " + name + " is shorter than 16 characters";
    if (!names.insert(name).second || !seen.insert(row[1]).second) {
      return "the token file " + path + ": a name or a token is there twice";
    }
    tokens->emplace_back(name, row[1]);
  }
  return "";
}

constexpr const char* kServeFooter =
    R"(Exit codes: 0 when stopped by SIGTERM or SIGINT, 125 for a bad flag or a
server that cannot start (the address, the token, the sandbox: `sentry check`).
)";

}  // namespace

int ServeCommand(const std::vector<std::string>& args) {
  agent::ServerFlags flags;
  agent::WarmFlags warm;
  agent::HttpOptions http;
  std::string token_file;
  std::string token;
  ServerCommand command{
      "serve", kServeUsage, kHttp, kServeFooter, [&](FlagSet& f) {
        f.Value("--listen", kHttp, "ADDR",
                "IP:PORT (127.0.0.1:8080, [::1]:8080; port 0 picks one) or unix:PATH (a socket "
                "only the server's user may use)",
                Text(&http.listen, "needs ADDR, e.g. 127.0.0.1:8080"));
        f.Value("--token-file", kHttp, "FILE",
                "the bearer token, the file's first line (preferred: a --token is visible to "
                "every user in the process list); or lines NAME TOKEN, a tenant each",
                Text(&token_file, "needs a file"));
        f.Value("--token", kHttp, "TOKEN", "the bearer token itself",
                Text(&token, "needs a token"));
        f.Value("--io-timeout", kHttp, "SECONDS",
                "a client that stalls this long is cut off (default 60)",
                Whole(&http.io_timeout_sec, 1, 86400, "needs a number of seconds (1 to 86400)"));
        f.Value("--max-connections", kHttp, "N", "open connections at once (default 256)",
                Whole(&http.max_connections, 1, 1 << 20, "needs a positive number"));
        f.Value("--max-connections-per-peer", kHttp, "N",
                "open connections from one client address at once (default 64; 0: no cap)",
                Whole(&http.max_connections_per_peer, 0, 1 << 20, "needs a number"));
      }};
  FlagsOutcome parsed = ParseServerFlags(command, args, &flags, &warm);
  if (parsed.kind == FlagsOutcome::Kind::kHelp) {
    std::fputs(parsed.text.c_str(), stdout);
    return 0;
  }
  std::string why = parsed.text;
  if (why.empty() && !token_file.empty()) why = ReadTokenFile(token_file, &http.tokens);
  if (why.empty() && !token.empty()) http.tokens.emplace_back("default", token);
  if (why.empty() && http.listen.empty()) why = "--listen is required (e.g. 127.0.0.1:8080)";
  if (why.empty() && (http.tokens.empty() || http.tokens[0].second.size() < 16)) {
    why = "a token of at least 16 characters is required (--token-file FILE or --token TOKEN)";
  }
  if (!why.empty()) return UsageError("serve", why);
  signal(SIGPIPE, SIG_IGN);
  // The sessions' launcher is forked first, while this process has one
  // thread (the warm pool below starts threads).
  auto sessions = session::MakeSessionManager(flags, warm.preload);
  if (!sessions.ok()) {
    std::fprintf(stderr, "sentry serve: %s\n", std::string(sessions.status().message()).c_str());
    return kExitSentryError;
  }
  // The runner's zygote is forked now, while this process has one thread,
  // and before SIGTERM is blocked (it ignores it).
  auto runner = agent::MakeRunner(flags.policy.base, warm);
  if (!runner.ok()) {
    std::fprintf(stderr, "sentry serve: %s\n", std::string(runner.status().message()).c_str());
    return kExitSentryError;
  }
  // Read from a signalfd by the accept loop; every thread made from here on
  // inherits the mask.
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  agent::AgentService service(flags, std::move(*runner));
  if (*sessions) {
    (*sessions)->Start();
    service.set_sessions(sessions->get());
  }
  if (absl::Status s = agent::ServeHttp(service, http); !s.ok()) {
    std::fprintf(stderr, "sentry serve: %s\n", std::string(s.message()).c_str());
    return kExitSentryError;
  }
  return 0;
}

}  // namespace sentry::cli
