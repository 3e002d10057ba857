#include "sentry/agent/mcp_calls.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

namespace sentry::agent {
namespace {

using nlohmann::json;

// An id as a map key: 7 and "7" stay apart (a JSON dump of a string or
// integer, which the parser bounded).
std::string Key(const json& id) { return id.dump(); }

bool ValidId(const json& id) { return id.is_string() || id.is_number_integer(); }

bool IsRequest(const json& msg, const char* method) {
  if (!msg.is_object()) return false;
  auto m = msg.find("method");
  auto v = msg.find("jsonrpc");
  return m != msg.end() && m->is_string() && *m == method && v != msg.end() && *v == "2.0";
}

}  // namespace

McpCalls::Call::Call(std::string key)
    : key_(std::move(key)), cancel_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

bool McpCalls::IsToolCall(const json& msg) {
  if (!IsRequest(msg, "tools/call")) return false;
  auto id = msg.find("id");
  return id != msg.end() && ValidId(*id);
}

bool McpCalls::IsCancel(const json& msg) {
  if (!IsRequest(msg, "notifications/cancelled") || msg.contains("id")) return false;
  auto p = msg.find("params");
  if (p == msg.end() || !p->is_object()) return false;
  auto id = p->find("requestId");
  return id != p->end() && ValidId(*id);
}

std::shared_ptr<McpCalls::Call> McpCalls::Begin(const json& id) {
  auto call = std::make_shared<Call>(Key(id));
  std::lock_guard<std::mutex> lock(mu_);
  calls_.emplace(call->key_, call);
  return call;
}

void McpCalls::Cancel(const json& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [from, to] = calls_.equal_range(Key(id));
  for (auto it = from; it != to; ++it) {
    Call& c = *it->second;
    if (c.cancelled_) continue;
    c.cancelled_ = true;
    uint64_t one = 1;
    if (c.cancel_) (void)!write(c.cancel_.get(), &one, sizeof(one));
  }
}

bool McpCalls::Cancelled(const std::shared_ptr<Call>& call) {
  std::lock_guard<std::mutex> lock(mu_);
  return call->cancelled_;
}

void McpCalls::End(const std::shared_ptr<Call>& call) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [from, to] = calls_.equal_range(call->key_);
  for (auto it = from; it != to; ++it) {
    if (it->second == call) {
      calls_.erase(it);
      break;
    }
  }
  cv_.notify_all();
}

void McpCalls::WaitNone() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return calls_.empty(); });
}

}  // namespace sentry::agent
