// A client of `sentry serve`'s sessions for the tests: the real server
// (tests/agent/agent_util.h) with tokens of several tenants.
#ifndef SENTRY_TESTS_SESSION_SESSION_CLIENT_H_
#define SENTRY_TESTS_SESSION_SESSION_CLIENT_H_

#include <sys/types.h>

#include <set>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/agent/agent_util.h"

namespace sentry::testing {

inline constexpr const char* kAlice = "alice-token-0123456789abcdef";
inline constexpr const char* kBob = "bob-token-0123456789abcdef00";

// A token file of two tenants (alice, bob); removed at the end.
class TenantTokens final {
 public:
  TenantTokens();
  ~TenantTokens();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A server's session calls as one tenant (token "" for the default one).
class SessionClient final {
 public:
  SessionClient(const ServeProcess& server, std::string token = "")
      : server_(server), token_(std::move(token)) {}

  HttpReply Call(const std::string& method, const std::string& target,
                 const std::string& body = "") const;
  // POST /v1/sessions: the id ("" if refused; *reply gets the answer).
  std::string Create(const nlohmann::json& request = nlohmann::json::object(),
                     HttpReply* reply = nullptr) const;
  HttpReply Cell(const std::string& id, const std::string& code, double timeout_ms = 0) const;
  HttpReply Command(const std::string& id, const nlohmann::json& request) const;
  HttpReply Delete(const std::string& id) const { return Call("DELETE", "/v1/sessions/" + id); }
  // A cell's last expression as text/plain ("" if none).
  std::string Eval(const std::string& id, const std::string& code) const;

 private:
  const ServeProcess& server_;
  std::string token_;
};

// The session ids of a fork's answer ({"sessions": [...]}; none if refused).
std::vector<std::string> ForkedIds(const HttpReply& r);
// Every process whose parent chain leads to pid (pid excluded).
std::set<pid_t> Descendants(pid_t pid);
// Host processes whose command line contains marker.
std::vector<pid_t> ProcessesWith(const std::string& marker);
// Whether a cgroup "sentry-PID" of pid exists under this process's own
// cgroup, in any controller (the server runs in the test's cgroup).
bool SentryCgroupExists(pid_t pid);

}  // namespace sentry::testing

#endif  // SENTRY_TESTS_SESSION_SESSION_CLIENT_H_
