// McpServer: the Model Context Protocol (revision 2025-06-18) over stdio:
// JSON-RPC 2.0, one message a line. Methods: initialize, ping, tools/list,
// tools/call; notifications (initialized, cancelled) are taken and need no
// answer. Tools:
//   run_python {code, stdin?, files?, timeoutMs?}: code runs as a script
//   run_command {argv, stdin?, files?, timeoutMs?}: a program runs
// A call's result is text content for the model (result_text.h) and the whole
// `sentry run --json` object as structuredContent (with an outputSchema in
// tools/list); isError when the code failed, its error text intact.
#ifndef SENTRY_AGENT_MCP_SERVER_H_
#define SENTRY_AGENT_MCP_SERVER_H_

#include <optional>
#include <string>

#include "nlohmann/json.hpp"
#include "sentry/agent/service.h"

namespace sentry::agent {

inline constexpr const char* kMcpProtocolVersion = "2025-06-18";

class McpServer final {
 public:
  explicit McpServer(AgentService& service) : service_(service) {}

  // Answers one line of input: the response line, or nothing (a notification).
  std::optional<std::string> HandleLine(const std::string& line);
  // Whether the line is a tools/call (to be answered on a thread of its own).
  static bool IsToolCall(const std::string& line);

  // Reads lines from in_fd and writes answers to out_fd until in_fd ends,
  // tools/calls on threads of their own (at most the service's cap); waits
  // for those in progress at the end.
  void Serve(int in_fd, int out_fd);

 private:
  nlohmann::json Dispatch(const std::string& method, const nlohmann::json& params, bool* error,
                          int* code, std::string* message);
  nlohmann::json CallTool(const nlohmann::json& params, bool* error, int* code,
                          std::string* message);

  AgentService& service_;
};

// The tools as tools/list gives them.
nlohmann::json McpTools();

}  // namespace sentry::agent

#endif  // SENTRY_AGENT_MCP_SERVER_H_
