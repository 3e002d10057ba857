// The session routes of `sentry serve` (issue 25), a thin layer of HTTP over
// session::SessionManager:
//
//   POST   /v1/sessions                      {limits, network, files, idleTimeoutMs,
//                                             maxLifetimeMs} -> 201 {id, expiresAt}
//   GET    /v1/sessions                      {sessions: [{id, state, ageMs, idleMs,
//                                             memoryBytes, cells, expiresAt}]}
//   GET    /v1/sessions/ID                   one entry of the list
//   DELETE /v1/sessions/ID                   {id, ended: {reason, at}, gone}
//   POST   /v1/sessions/ID/cells[?stream=1]  {code, timeoutMs} -> the cell's result
//   POST   /v1/sessions/ID/commands[?stream=1] {argv | bash, timeoutMs}
//   POST   /v1/sessions/ID/interrupt         {interrupted: true}
//   PUT    /v1/sessions/ID/files?path=P      body: the bytes -> 201 {path, size}
//   GET    /v1/sessions/ID/files?path=P      the bytes (application/octet-stream)
//   GET    /v1/sessions/ID/files?dir=D[&recursive=1][&glob=G]  {dir, entries, truncated}
//
// A session of another token is 404; an ended one 410 {"error": {"reason",
// "at"}}; a second cell while one runs 409.
#ifndef SENTRY_AGENT_SESSION_ROUTES_H_
#define SENTRY_AGENT_SESSION_ROUTES_H_

#include <string>

#include "sentry/agent/ndjson_sink.h"
#include "sentry/session/session_manager.h"

namespace sentry::agent {

struct SessionRequest {
  std::string method;  // "GET", "POST", "PUT", "DELETE"
  std::string path;    // "/v1/sessions/..."
  std::string query;   // after '?', undecoded
  std::string body;
  std::string tenant;  // the name of the caller's token
};

struct SessionReply {
  int status = 200;
  std::string body;
  const char* content_type = "application/json";
  bool streamed = false;  // the answer went out through the sink (its last line is body)
};

bool IsSessionPath(const std::string& path);

// Answers one request under /v1/sessions. sink: where a ?stream=1 cell's
// output goes as it comes (the reply then says streamed once it started).
SessionReply RouteSession(session::SessionManager& sessions, const SessionRequest& request,
                          NdjsonSink* sink);

}  // namespace sentry::agent

#endif  // SENTRY_AGENT_SESSION_ROUTES_H_
