// sentry serve: an HTTP API for agents (see sentry/agent/http_server.h).
#include <signal.h>

#include <cstdio>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "sentry/agent/http_server.h"
#include "sentry/agent/server_flags.h"
#include "sentry/agent/service.h"
#include "sentry/agent/warm_runner.h"
#include "sentry/cli/commands.h"
#include "sentry/run/run.h"

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
  GET  /v1/health         {"status": "ok"} (no token needed)
  GET  /metrics           Prometheus text: runs by outcome, latency, refusals, denials
Every other request needs "Authorization: Bearer TOKEN". SIGTERM/SIGINT: no
new run is taken, runs in progress finish, then sentry exits 0.

  --listen ADDR       IP:PORT (127.0.0.1:8080, [::1]:8080; port 0 picks one) or
                      unix:PATH (a socket only the server's user may use)
  --token-file FILE   the bearer token, the file's first line (preferred: a
                      --token is visible to every user in the process list)
  --token TOKEN       the bearer token itself
  --io-timeout SECONDS  a client that stalls this long is cut off (default 60)
  --max-connections N   open connections at once (default 256)

)TXT";

}  // namespace

int ServeCommand(const std::vector<std::string>& args) {
  agent::ServerFlags flags;
  agent::WarmFlags warm;
  agent::HttpOptions http;
  std::string token_file;
  bool help = false;
  std::string why = agent::ParseServerFlags(
      args, &flags,
      [&](const std::string& a, const std::function<bool(std::string*)>& value,
          std::string* why) -> int {
        std::string v;
        if (int taken = agent::ParseWarmFlag(a, value, &warm, why); taken != 0) return taken;
        if (a == "-h" || a == "--help") {
          help = true;
        } else if (a == "--listen") {
          if (!value(&http.listen) || http.listen.empty()) return *why = "--listen needs ADDR", -1;
        } else if (a == "--token") {
          if (!value(&http.token) || http.token.empty()) return *why = "--token needs a token", -1;
        } else if (a == "--token-file") {
          if (!value(&token_file)) return *why = "--token-file needs a file", -1;
        } else if (a == "--io-timeout") {
          if (!value(&v) || !absl::SimpleAtoi(v, &http.io_timeout_sec) || http.io_timeout_sec < 1) {
            return *why = "--io-timeout needs a number of seconds", -1;
          }
        } else if (a == "--max-connections") {
          if (!value(&v) || !absl::SimpleAtoi(v, &http.max_connections) ||
              http.max_connections < 1) {
            return *why = "--max-connections needs a positive number", -1;
          }
        } else {
          return 0;
        }
        return 1;
      });
  if (help) {
    std::printf("%s%s%s", kServeUsage, agent::kServerFlagsHelp, agent::kWarmFlagsHelp);
    return 0;
  }
  if (why.empty() && !token_file.empty()) {
    std::ifstream in(token_file);
    std::string line;
    if (!in || !std::getline(in, line)) {
      why = "cannot read the token file " + token_file;
    } else {
      http.token = std::string(absl::StripAsciiWhitespace(line));
    }
  }
  if (why.empty() && http.listen.empty()) why = "--listen is required (e.g. 127.0.0.1:8080)";
  if (why.empty() && http.token.size() < 16) {
    why = "a token of at least 16 characters is required (--token-file FILE or --token TOKEN)";
  }
  if (!why.empty()) {
    std::fprintf(stderr, "sentry serve: %s\n(see 'sentry serve --help')\n", why.c_str());
    return kExitSentryError;
  }
  signal(SIGPIPE, SIG_IGN);
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
  if (absl::Status s = agent::ServeHttp(service, http); !s.ok()) {
    std::fprintf(stderr, "sentry serve: %s\n", std::string(s.message()).c_str());
    return kExitSentryError;
  }
  return 0;
}

}  // namespace sentry::cli
