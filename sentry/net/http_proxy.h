// HttpProxy: the credentials proxy for --secret hosts.
//
// The guest speaks plain HTTP to a --secret host (its DNS answer is a
// 198.18.0.N address; see NetPolicy::SecretAddress). The sentry connects such
// a connect to this proxy, which listens on the sandbox's own loopback. For
// each connection the proxy reads the request head, drops any header of the
// secret's name the guest sent (and hop-by-hop headers), adds the secret,
// sets Host and "Connection: close", and sends it to the real host (resolved
// and checked by the sentry, over TLS with the system's CA store and hostname
// checks unless the rule says http://), then relays the body and the response.
// The guest never sees the value: not in its environment, its memory, /proc,
// nor on the wire it can read.
#ifndef SENTRY_NET_HTTP_PROXY_H_
#define SENTRY_NET_HTTP_PROXY_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "sentry/base/sys_result.h"
#include "sentry/base/unique_fd.h"
#include "sentry/net/net_policy.h"

namespace sentry::net {

class HttpProxy final {
 public:
  // count(bytes_out, bytes_in): traffic with upstream hosts, for the result.
  using CountFn = std::function<void(uint64_t, uint64_t)>;
  HttpProxy(NetPolicy& policy, CountFn count) : policy_(policy), count_(std::move(count)) {}
  ~HttpProxy() { Stop(); }
  HttpProxy(const HttpProxy&) = delete;
  HttpProxy& operator=(const HttpProxy&) = delete;

  // How upstream sockets are made (default: socket() in the sentry's own
  // namespace): Egress makes them where its connections leave from.
  using SocketFn = std::function<SysResult<UniqueFd>(int family)>;
  void set_upstream_socket(SocketFn fn) { upstream_socket_ = std::move(fn); }

  // Listens on 127.0.0.1 (a free port) in the namespace of netns_fd.
  SysStatus Start(int netns_fd);
  void Stop();
  uint16_t port() const { return port_; }

  // The connection the sandbox will open from client_port is for rule.
  void Expect(uint16_t client_port, const SecretRule* rule);

 private:
  void AcceptLoop();
  void Serve(UniqueFd client);
  // Past kMaxConnections served at once: a 503, and the connection closed.
  void Refuse(UniqueFd client);
  const SecretRule* TakeExpected(uint16_t client_port);
  // Registers fd as live (false: the proxy is stopping, do not use it), or
  // forgets it.
  bool Live(int fd);
  void Forget(int fd);

  NetPolicy& policy_;
  CountFn count_;
  SocketFn upstream_socket_;
  UniqueFd listener_;
  UniqueFd wake_;
  uint16_t port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint16_t, const SecretRule*> expected_;
  // Sockets of connections being served: Stop shuts them down, so no
  // connection waits on the network past the run.
  std::set<int> live_;
  std::atomic<int> active_{0};
  bool stopping_ = false;
};

// The request head the proxy sends upstream for head (the guest's, up to and
// including its blank line): secret header dropped and added, Host set,
// hop-by-hop headers dropped, "Connection: close". "" if head is not a
// request the proxy serves (*status: the HTTP status to answer instead).
std::string RewriteRequestHead(const std::string& head, const SecretRule& rule,
                               uint64_t* content_length, int* status);

}  // namespace sentry::net

#endif  // SENTRY_NET_HTTP_PROXY_H_
