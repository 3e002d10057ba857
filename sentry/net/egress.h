// Egress: connections that leave the sandbox, made by the sentry.
//
// The guest's own sockets live in the sandbox's network namespace, where only
// lo exists. A connect the policy allows is made by the sentry from its own
// namespace (or, for an OCI container whose engine gave it one, from the
// engine's network namespace: its interfaces, routes and loopback, never the
// host's) on a new socket of the same kind, which then replaces the
// guest's socket at the same fd number (seccomp ADDFD with SETFD): the data
// path is native, and the guest never chose where that socket may go. Each
// such connection is counted (TCP_INFO: bytes acked out, bytes received) and
// --net-bytes cuts every one of them once the run's total passes the cap.
#ifndef SENTRY_NET_EGRESS_H_
#define SENTRY_NET_EGRESS_H_

#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "sentry/base/sys_result.h"
#include "sentry/base/unique_fd.h"
#include "sentry/net/http_proxy.h"
#include "sentry/net/net_policy.h"

namespace sentry::net {

// What a guest socket was, for its replacement.
struct SocketShape {
  int domain = 0, type = 0, protocol = 0;
  bool nonblock = false;
  // Options the guest may have set before connecting, copied over.
  int nodelay = 0, keepalive = 0;
  timeval rcvtimeo{}, sndtimeo{};
  static SocketShape Of(int sock);
};

struct EgressStats {
  uint64_t connections = 0;
  uint64_t bytes_out = 0;
  uint64_t bytes_in = 0;
  bool cap_hit = false;
};

class Egress final : public std::enable_shared_from_this<Egress> {
 public:
  // outside_netns: the network namespace connections leave from (an
  // engine's); -1 for the sentry's own.
  Egress(NetPolicyOptions options, uint64_t byte_cap, UniqueFd outside_netns = UniqueFd());
  ~Egress();
  Egress(const Egress&) = delete;
  Egress& operator=(const Egress&) = delete;

  NetPolicy& policy() { return policy_; }
  // The socket inodes the guest's processes hold now: a connection the guest
  // closed is let go (and its peer sees the close) at the next sample.
  void set_guest_sockets(std::function<std::set<ino_t>()> fn) { guest_sockets_ = std::move(fn); }

  // A new socket shaped like the guest's, connected from the sentry's own
  // namespace to addr (waiting up to timeout_ms), and counted from now on.
  // ECONNREFUSED, ETIMEDOUT... as connect(2) gives them; EDQUOT-like refusal
  // (ENETUNREACH) once the byte cap was hit.
  SysResult<UniqueFd> Connect(const SocketShape& shape, const sockaddr* addr, socklen_t len,
                              int timeout_ms);

  // A socket in the namespace connections leave from.
  SysResult<UniqueFd> OutsideSocket(int domain, int type, int protocol) const;

  // The credentials proxy for --secret hosts, listening in the sandbox's
  // network namespace; null until started (and without --secret).
  SysStatus StartProxy(int netns_fd);
  HttpProxy* proxy() { return proxy_.get(); }

  // Final figures (reads every connection still held).
  EgressStats Stats();
  // Cuts every connection and stops the meter.
  void Shutdown();

 private:
  void Meter();
  void SampleLocked();

  NetPolicy policy_;
  uint64_t byte_cap_;  // 0: none
  UniqueFd outside_netns_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  // Duplicates of the connections handed out, for TCP_INFO; each keeps its
  // last sample so a closed one still counts.
  struct Conn {
    UniqueFd fd;
    ino_t ino = 0;
    uint64_t out = 0, in = 0;
  };
  std::vector<Conn> conns_;
  uint64_t closed_out_ = 0, closed_in_ = 0;
  EgressStats stats_;
  std::function<std::set<ino_t>()> guest_sockets_;
  std::thread meter_;
  std::unique_ptr<HttpProxy> proxy_;
};

}  // namespace sentry::net

#endif  // SENTRY_NET_EGRESS_H_
