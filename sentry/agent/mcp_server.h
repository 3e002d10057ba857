// McpServer: the Model Context Protocol (revision 2025-06-18) over stdio:
// JSON-RPC 2.0, one message a line. Methods: initialize, ping, tools/list,
// tools/call; notifications (initialized, cancelled) are taken and need no
// answer; a cancelled tools/call is ended (its sandbox killed) and gets no
// answer, as the spec's cancellation says. Every line is parsed with its size
// and depth bounded (json_bounded.h) before anything copies it. Tools:
//   run_python {code, stdin?, files?, returnFiles?, timeoutMs?}: code runs as a script
//   run_command {argv, stdin?, files?, returnFiles?, timeoutMs?}: a program runs
// A call's result is content for the model (mcp_content.h: text, an image
// block for each returned image) and the whole `sentry run --json` object as
// structuredContent (with an outputSchema in tools/list); isError when the
// code failed, its error text intact. Where the service has sessions, the
// session tools (mcp_sessions.h) come too, and run_python / run_command take
// a sessionId.
#ifndef SENTRY_AGENT_MCP_SERVER_H_
#define SENTRY_AGENT_MCP_SERVER_H_

#include <memory>
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
  // Answers one parsed message; a tools/call's run ends early when cancel_fd
  // (an eventfd, or -1) becomes readable. *memory (if given) gets the run's
  // share of the result memory: to be kept until the answer is written.
  std::optional<std::string> HandleMessage(const nlohmann::json& msg, int cancel_fd,
                                           std::shared_ptr<void>* memory = nullptr);

  // Reads lines from in_fd and writes answers to out_fd until in_fd ends,
  // tools/calls on threads of their own (at most the service's cap); waits
  // for those in progress at the end.
  void Serve(int in_fd, int out_fd);

 private:
  struct Outcome {
    bool error = false;
    int code = 0;
    std::string message;
    std::shared_ptr<void> memory;
  };
  nlohmann::json Dispatch(const std::string& method, const nlohmann::json& params, int cancel_fd,
                          Outcome* out);
  nlohmann::json CallTool(const nlohmann::json& params, int cancel_fd, Outcome* out);

  AgentService& service_;
};

// The tools as tools/list gives them.
nlohmann::json McpTools();

}  // namespace sentry::agent

#endif  // SENTRY_AGENT_MCP_SERVER_H_
