#include "sentry/net/egress.h"

#include <fcntl.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "sentry/base/fiber_loop.h"
#include "sentry/net/netns_socket.h"

namespace sentry::net {
namespace {

constexpr auto kMeterPeriod = std::chrono::milliseconds(100);
// Outward connections held at once. Each costs the sentry an fd (the
// duplicate metered with TCP_INFO) for as long as the guest holds it, and the
// sentry's fds (20,000 on a typical host, shared with a pidfd per guest task
// and the late calls) must outlast anything the guest does: past this,
// connect fails with EAGAIN, as connect(2) does when the kernel has no room.
// 512 is far more than a script keeps open to the few hosts it may reach.
constexpr size_t kMaxEgressConnections = 512;

void ReadCounters(int fd, uint64_t* out, uint64_t* in) {
  tcp_info ti{};
  socklen_t len = sizeof(ti);
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0) return;
  *out = ti.tcpi_bytes_acked;
  *in = ti.tcpi_bytes_received;
}

}  // namespace

SocketShape SocketShape::Of(int sock) {
  SocketShape s;
  socklen_t n = sizeof(int);
  getsockopt(sock, SOL_SOCKET, SO_DOMAIN, &s.domain, &n);
  n = sizeof(int);
  getsockopt(sock, SOL_SOCKET, SO_TYPE, &s.type, &n);
  n = sizeof(int);
  getsockopt(sock, SOL_SOCKET, SO_PROTOCOL, &s.protocol, &n);
  s.nonblock = (fcntl(sock, F_GETFL) & O_NONBLOCK) != 0;
  n = sizeof(int);
  getsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &s.nodelay, &n);
  n = sizeof(int);
  getsockopt(sock, SOL_SOCKET, SO_KEEPALIVE, &s.keepalive, &n);
  n = sizeof(timeval);
  getsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &s.rcvtimeo, &n);
  n = sizeof(timeval);
  getsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &s.sndtimeo, &n);
  return s;
}

Egress::Egress(NetPolicyOptions options, uint64_t byte_cap, UniqueFd outside_netns)
    : policy_(std::move(options)), byte_cap_(byte_cap), outside_netns_(std::move(outside_netns)) {
  meter_ = std::thread([this] { Meter(); });
}

Egress::~Egress() { Shutdown(); }

SysResult<UniqueFd> Egress::OutsideSocket(int domain, int type, int protocol) const {
  return SocketInNetns(outside_netns_.get(), domain, type, protocol);
}

SysStatus Egress::StartProxy(int netns_fd) {
  proxy_ = std::make_unique<HttpProxy>(policy_, [this](uint64_t out, uint64_t in) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.connections;
    closed_out_ += out;
    closed_in_ += in;
    stats_.bytes_out += out;
    stats_.bytes_in += in;
  });
  proxy_->set_upstream_socket(
      [this](int family) { return OutsideSocket(family, SOCK_STREAM | SOCK_NONBLOCK, 0); });
  return proxy_->Start(netns_fd);
}

SysResult<UniqueFd> Egress::Connect(const SocketShape& shape, const sockaddr* addr, socklen_t len,
                                    int timeout_ms) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ || stats_.cap_hit) return Errno{ENETUNREACH};
    // Let go of what the guest closed before counting what it holds.
    if (conns_.size() >= kMaxEgressConnections) SampleLocked();
    if (conns_.size() >= kMaxEgressConnections) return Errno{EAGAIN};
  }
  SysResult<UniqueFd> made =
      OutsideSocket(shape.domain, shape.type | SOCK_NONBLOCK, shape.protocol);
  if (!made.ok()) return Errno{made.error()};
  UniqueFd fd = std::move(*made);
  setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &shape.nodelay, sizeof(int));
  setsockopt(fd.get(), SOL_SOCKET, SO_KEEPALIVE, &shape.keepalive, sizeof(int));
  setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &shape.rcvtimeo, sizeof(timeval));
  setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &shape.sndtimeo, sizeof(timeval));
  if (connect(fd.get(), addr, len) < 0) {
    if (errno != EINPROGRESS) return Errno{errno};
    pollfd pfd{fd.get(), POLLOUT, 0};
    int r;
    while ((r = WaitPoll(&pfd, 1, timeout_ms)) < 0 && errno == EINTR) {
    }
    if (r == 0) return Errno{ETIMEDOUT};
    int err = 0;
    socklen_t n = sizeof(err);
    getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &n);
    if (err) return Errno{err};
  }
  if (!shape.nonblock) fcntl(fd.get(), F_SETFL, fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
  Conn c;
  c.fd = UniqueFd(fcntl(fd.get(), F_DUPFD_CLOEXEC, 0));
  struct stat st;
  if (fstat(fd.get(), &st) == 0) c.ino = st.st_ino;
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.connections;
  conns_.push_back(std::move(c));
  return fd;
}

void Egress::SampleLocked() {
  std::set<ino_t> held;
  if (guest_sockets_) held = guest_sockets_();
  uint64_t out = closed_out_, in = closed_in_;
  for (auto it = conns_.begin(); it != conns_.end();) {
    ReadCounters(it->fd.get(), &it->out, &it->in);
    if (guest_sockets_ && !held.count(it->ino)) {
      // The guest let it go: so do we (the peer sees the close now).
      closed_out_ += it->out;
      closed_in_ += it->in;
      out += it->out;
      in += it->in;
      it = conns_.erase(it);
      continue;
    }
    out += it->out;
    in += it->in;
    ++it;
  }
  stats_.bytes_out = out;
  stats_.bytes_in = in;
  if (byte_cap_ && out + in > byte_cap_ && !stats_.cap_hit) {
    stats_.cap_hit = true;
    for (Conn& c : conns_) shutdown(c.fd.get(), SHUT_RDWR);
  }
}

void Egress::Meter() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, kMeterPeriod);
    if (!conns_.empty()) SampleLocked();
  }
}

EgressStats Egress::Stats() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!stop_) SampleLocked();
  return stats_;
}

void Egress::Shutdown() {
  if (proxy_) proxy_->Stop();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stop_) SampleLocked();
    stop_ = true;
    for (Conn& c : conns_) shutdown(c.fd.get(), SHUT_RDWR);
  }
  cv_.notify_all();
  if (meter_.joinable()) meter_.join();
}

}  // namespace sentry::net
