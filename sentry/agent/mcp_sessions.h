// The session tools of `sentry mcp` (issue 25): a conversation made
// stateful, a thin layer over session::SessionManager as the HTTP routes
// are (session_routes.h). Every session of an `sentry mcp` belongs to its
// one client (the tenant "mcp").
//
//   create_session {limits?, network?, files?, idleTimeoutMs?, maxLifetimeMs?}
//       -> {sessionId, expiresAt}
//   close_session {sessionId}
//   run_python {code, sessionId, timeoutMs?, files?, returnFiles?}: a cell in
//       the session's persistent Python (globals, imports, files kept)
//   run_command {argv, sessionId, ...}: a program in the session's sandbox
//   read_file {sessionId, path}, write_file {sessionId, path, text | base64},
//   list_files {sessionId, dir?, recursive?, glob?}
//
// A cell's result is its MIME results as content (mcp_content.h: an image
// block for each PNG) and the cell's result object as structuredContent.
// What the model can act on (the session ended: its reason; unknown; busy;
// a missing file) is a result with isError, in words; a malformed call is a
// JSON-RPC error. A cancelled call interrupts its cell (state kept).
#ifndef SENTRY_AGENT_MCP_SESSIONS_H_
#define SENTRY_AGENT_MCP_SESSIONS_H_

#include <string>

#include "nlohmann/json.hpp"
#include "sentry/session/session_manager.h"

namespace sentry::agent {

inline constexpr const char* kMcpTenant = "mcp";

// Adds the session tools to tools/list's tools, and sessionId to
// run_python's and run_command's arguments.
void AddSessionTools(nlohmann::json* tools);

// Whether a tools/call goes to a session: a session tool, or run_python /
// run_command with a sessionId.
bool IsSessionCall(const std::string& tool, const nlohmann::json& args);

struct McpCallError {
  int code = 0;  // a JSON-RPC error code, 0 for none
  std::string message;
};

// Runs such a call: the tools/call result, or null with *error set.
// cancel_fd (an eventfd, or -1): readable when the client cancels.
nlohmann::json CallSessionTool(session::SessionManager& sessions, const std::string& tool,
                               const nlohmann::json& args, int cancel_fd, McpCallError* error);

}  // namespace sentry::agent

#endif  // SENTRY_AGENT_MCP_SESSIONS_H_
