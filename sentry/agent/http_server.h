// HttpServer: the HTTP/1.1 side of `sentry serve`, on Boost.Beast's parser
// (header-only, from Debian's libboost-dev: no hand-written HTTP parsing).
//
//   POST /v1/runs           a run request (run_request.h) → the result object
//   POST /v1/runs?stream=1  NDJSON: {"stream":"stdout","data":"..."} lines as
//                           the output comes, then {"result": {...}}
//   GET  /v1/health         {"status": "ok", ...} (no token needed)
//   GET  /metrics           Prometheus text (metrics.h)
//
// Every request but /v1/health needs "Authorization: Bearer TOKEN" (compared
// in constant time). A connection is a thread; a run also needs a slot of the
// service (429 with Retry-After when its queue is full). Bodies past the cap
// are refused (413) before they are read; a client that stalls is cut off.
#ifndef SENTRY_AGENT_HTTP_SERVER_H_
#define SENTRY_AGENT_HTTP_SERVER_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "sentry/agent/service.h"

namespace sentry::agent {

struct HttpOptions {
  std::string listen;  // "HOST:PORT" (an IP address; port 0 picks one) or "unix:PATH"
  // The bearer tokens, each with its name (its tenant: the sessions it makes
  // are its own). A lone --token or one-token file is named "default".
  std::vector<std::pair<std::string, std::string>> tokens;
  int max_connections = 256;
  // Connections from one client address at once (TCP; 0: no cap), so that
  // one client cannot hold every slot.
  int max_connections_per_peer = 64;
  // A read or write that stalls this long ends the connection, and so does
  // a request head that takes this long in all.
  int io_timeout_sec = 60;
};

// Listens, prints "sentry serve: listening on ..." to stderr, and serves
// until SIGTERM or SIGINT; then takes no new run, lets those in progress end
// (each at its own timeout at worst) and returns. Call with SIGTERM and
// SIGINT blocked in every thread.
absl::Status ServeHttp(AgentService& service, const HttpOptions& options);

// a == b without a timing that depends on where they differ.
bool TokensEqual(const std::string& a, const std::string& b);

}  // namespace sentry::agent

#endif  // SENTRY_AGENT_HTTP_SERVER_H_
