// McpCalls: the tools/calls of one `sentry mcp` session in progress, by
// their JSON-RPC id, so that notifications/cancelled can end one: its
// eventfd becomes readable, the runner kills the sandbox (cold_runner.h,
// warm_runner.h), and the call's answer is dropped.
#ifndef SENTRY_AGENT_MCP_CALLS_H_
#define SENTRY_AGENT_MCP_CALLS_H_

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "nlohmann/json.hpp"
#include "sentry/base/unique_fd.h"

namespace sentry::agent {

class McpCalls final {
 public:
  class Call final {
   public:
    explicit Call(std::string key);
    int cancel_fd() const { return cancel_.get(); }

   private:
    friend class McpCalls;
    std::string key_;
    UniqueFd cancel_;  // an eventfd, written once at a cancel
    bool cancelled_ = false;
  };

  // A tools/call request (with a string or integer id), and a cancel
  // notification naming a request.
  static bool IsToolCall(const nlohmann::json& msg);
  static bool IsCancel(const nlohmann::json& msg);

  std::shared_ptr<Call> Begin(const nlohmann::json& id);
  // Cancels every call in progress with this id (a client may reuse one).
  void Cancel(const nlohmann::json& id);
  // Whether the call was cancelled (its answer is not sent).
  bool Cancelled(const std::shared_ptr<Call>& call);
  // The call is over (WaitNone may return).
  void End(const std::shared_ptr<Call>& call);
  void WaitNone();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::multimap<std::string, std::shared_ptr<Call>> calls_;
};

}  // namespace sentry::agent

#endif  // SENTRY_AGENT_MCP_CALLS_H_
