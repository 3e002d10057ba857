#include "sentry/net/http_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "sentry/base/fiber_loop.h"
#include "sentry/net/netns_socket.h"

namespace sentry::net {
namespace {

constexpr size_t kMaxHead = 64 << 10;
constexpr int kIoSliceMs = 250;                        // how often a stop is noticed
constexpr auto kIdleLimit = std::chrono::seconds(60);  // no byte either way for this long: done
// Connections served at once, each on a fiber of the sentry's (see
// base/fiber_loop.h; outside the guest's cgroups): past it, 503 at once.
constexpr int kMaxProxyConnections = 512;

bool IsToken(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) &&
        std::strchr("!#$%&'*+-.^_`|~", c) == nullptr) {
      return false;
    }
  }
  return true;
}

// Headers a proxy never forwards (hop-by-hop), and those it sets itself.
bool DroppedHeader(const std::string& lower, const SecretRule& rule) {
  static const char* kDropped[] = {
      "host", "connection", "proxy-connection", "keep-alive", "proxy-authorization",
      "te",   "upgrade",    "trailer"};
  for (const char* h : kDropped) {
    if (lower == h) return true;
  }
  return lower == absl::AsciiStrToLower(rule.header);
}

std::string StatusReply(int status, const std::string& why) {
  const char* text = status == 400   ? "Bad Request"
                     : status == 411 ? "Length Required"
                     : status == 431 ? "Request Header Fields Too Large"
                     : status == 503 ? "Service Unavailable"
                                     : "Bad Gateway";
  std::string body = absl::StrCat("sentry proxy: ", why, "\n");
  return absl::StrCat("HTTP/1.1 ", status, " ", text,
                      "\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: ",
                      body.size(), "\r\n\r\n", body);
}

SSL_CTX* ClientContext() {
  static SSL_CTX* ctx = [] {
    SSL_CTX* c = SSL_CTX_new(TLS_client_method());
    if (c) {
      SSL_CTX_set_default_verify_paths(c);
      SSL_CTX_set_verify(c, SSL_VERIFY_PEER, nullptr);
      SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION);
    }
    return c;
  }();
  return ctx;
}

// The upstream end: a TCP socket, with TLS on it or not.
class Upstream {
 public:
  ~Upstream() {
    if (ssl_) SSL_free(ssl_);
  }
  // Connects to host's checked addresses on port; "" or what went wrong.
  // live(fd) registers each socket it tries with the proxy (false: stop).
  std::string Connect(NetPolicy& policy, const SecretRule& rule,
                      const std::function<bool(int)>& live, const HttpProxy::SocketFn& make) {
    std::string why;
    std::vector<IpAddr> addrs = policy.ResolveUpstream(rule.host, &why);
    if (addrs.empty()) return why;
    for (const IpAddr& a : addrs) {
      sockaddr_storage ss;
      socklen_t len = a.ToSockaddr(rule.port, &ss);
      // Kept open until this object goes (after the proxy forgot them).
      if (make) {
        SysResult<UniqueFd> made = make(a.family);
        tried_.push_back(made.ok() ? std::move(*made) : UniqueFd());
      } else {
        tried_.emplace_back(socket(a.family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
      }
      const UniqueFd& fd = tried_.back();
      if (fd.get() < 0) continue;
      if (!live(fd.get())) return "the sandbox is ending";
      if (connect(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) < 0 && errno != EINPROGRESS) {
        why = absl::StrCat("cannot connect to ", rule.host, ": ", std::strerror(errno));
        continue;
      }
      pollfd p{fd.get(), POLLOUT, 0};
      int err = ETIMEDOUT;
      socklen_t n = sizeof(err);
      if (WaitPoll(&p, 1, 10000) == 1) getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &n);
      if (err) {
        why = absl::StrCat("cannot connect to ", rule.host, ": ", std::strerror(err));
        continue;
      }
      fd_ = fd.get();
      return rule.tls ? StartTls(rule.host) : "";
    }
    return why;
  }
  // Bytes written, or -1 when the upstream is gone.
  ssize_t Write(const char* p, size_t n) {
    size_t done = 0;
    while (done < n) {
      ssize_t w;
      if (ssl_) {
        w = SSL_write(ssl_, p + done, static_cast<int>(std::min<size_t>(n - done, 1 << 20)));
        if (w <= 0 && !Wait(SSL_get_error(ssl_, static_cast<int>(w)))) return -1;
      } else {
        w = send(fd_, p + done, n - done, MSG_NOSIGNAL);
        if (w < 0 && !Wait(errno == EAGAIN ? SSL_ERROR_WANT_WRITE : SSL_ERROR_SYSCALL)) return -1;
      }
      if (w > 0) done += static_cast<size_t>(w);
    }
    return static_cast<ssize_t>(done);
  }
  // >0 bytes, 0 at the end, -1 on error, -2 when nothing is there yet.
  ssize_t Read(char* p, size_t n) {
    if (ssl_) {
      int r = SSL_read(ssl_, p, static_cast<int>(n));
      if (r > 0) return r;
      int e = SSL_get_error(ssl_, r);
      if (e == SSL_ERROR_ZERO_RETURN) return 0;
      if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return -2;
      // A server that closes without close_notify: the end, as browsers take it.
      if (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) return 0;
      return -1;
    }
    ssize_t r = recv(fd_, p, n, MSG_DONTWAIT);
    if (r < 0) return errno == EAGAIN ? -2 : -1;
    return r;
  }
  int fd() const { return fd_; }
  bool pending() const { return ssl_ && SSL_pending(ssl_) > 0; }

 private:
  std::string StartTls(const std::string& host) {
    SSL_CTX* ctx = ClientContext();
    if (!ctx || !(ssl_ = SSL_new(ctx))) return "TLS is not available";
    SSL_set_fd(ssl_, fd_);
    SSL_set_tlsext_host_name(ssl_, host.c_str());
    SSL_set1_host(ssl_, host.c_str());
    while (true) {
      int r = SSL_connect(ssl_);
      if (r == 1) return "";
      if (!Wait(SSL_get_error(ssl_, r))) {
        long v = SSL_get_verify_result(ssl_);
        if (v != X509_V_OK) {
          return absl::StrCat("TLS to ", host, " failed: ", X509_verify_cert_error_string(v));
        }
        return absl::StrCat("TLS to ", host, " failed");
      }
    }
  }
  // Waits for the socket as an OpenSSL error asks; false for a real error.
  bool Wait(int ssl_error) {
    short ev = ssl_error == SSL_ERROR_WANT_READ    ? POLLIN
               : ssl_error == SSL_ERROR_WANT_WRITE ? POLLOUT
                                                   : 0;
    if (!ev) return false;
    pollfd p{fd_, ev, 0};
    return WaitPoll(&p, 1, 30000) == 1;
  }

  std::vector<UniqueFd> tried_;
  int fd_ = -1;  // the connected one, among tried_
  SSL* ssl_ = nullptr;
};

bool SendAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EAGAIN) {
      pollfd q{fd, POLLOUT, 0};
      if (WaitPoll(&q, 1, 30000) != 1) return false;
      continue;
    }
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

std::string RewriteRequestHead(const std::string& head, const SecretRule& rule,
                               uint64_t* content_length, int* status) {
  *status = 400;
  *content_length = 0;
  std::vector<std::string> lines = absl::StrSplit(head, "\r\n");
  if (lines.size() < 2) return "";
  // A bare CR or LF, or a NUL, inside a line could smuggle a header past the
  // rewrite to a server that splits lines differently: refused.
  for (const std::string& line : lines) {
    if (line.find_first_of(std::string("\r\n\0", 3)) != std::string::npos) return "";
  }
  std::vector<std::string> first = absl::StrSplit(lines[0], ' ');
  if (first.size() != 3 || !IsToken(first[0]) ||
      (first[2] != "HTTP/1.1" && first[2] != "HTTP/1.0")) {
    return "";
  }
  std::string target = first[1];
  // Absolute form (a client configured with this proxy): keep the path.
  for (const char* scheme : {"http://", "https://"}) {
    if (absl::StartsWithIgnoreCase(target, scheme)) {
      size_t slash = target.find('/', std::strlen(scheme));
      target = slash == std::string::npos ? "/" : target.substr(slash);
    }
  }
  if (target.empty() || target[0] != '/' || target.find_first_of("\r\n\t ") != std::string::npos) {
    return "";
  }
  std::string out = absl::StrCat(first[0], " ", target, " HTTP/1.1\r\nHost: ", rule.host);
  if (rule.port != (rule.tls ? 443 : 80)) absl::StrAppend(&out, ":", rule.port);
  out += "\r\n";
  bool have_length = false;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (line.empty()) continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos || line[0] == ' ' || line[0] == '\t' ||
        !IsToken(absl::string_view(line).substr(0, colon))) {
      return "";
    }
    std::string name = absl::AsciiStrToLower(line.substr(0, colon));
    std::string value(absl::StripAsciiWhitespace(line.substr(colon + 1)));
    if (name == "transfer-encoding") {
      *status = 411;  // a chunked request body: not relayed
      return "";
    }
    if (name == "content-length") {
      // 1*DIGIT (RFC 9110 8.6): SimpleAtoi alone takes "+4", which a server
      // may read otherwise, and then the body would be a request of its own.
      uint64_t n;
      if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos ||
          !absl::SimpleAtoi(value, &n) || (have_length && n != *content_length)) {
        return "";
      }
      have_length = true;
      *content_length = n;
    }
    if (DroppedHeader(name, rule)) continue;
    absl::StrAppend(&out, line, "\r\n");
  }
  absl::StrAppend(&out, rule.header, ": ", rule.value, "\r\nConnection: close\r\n\r\n");
  *status = 0;
  return out;
}

SysStatus HttpProxy::Start(int netns_fd) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  SYS_ASSIGN_OR_RETURN(listener_,
                       BoundSocketInNetns(netns_fd, AF_INET, SOCK_STREAM,
                                          reinterpret_cast<sockaddr*>(&addr), sizeof(addr)));
  if (listen(listener_.get(), 64) < 0) return Errno{errno};
  socklen_t len = sizeof(addr);
  getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  wake_ = UniqueFd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  thread_ = std::thread([this] { AcceptLoop(); });
  return {};
}

bool HttpProxy::Live(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return false;
  live_.insert(fd);
  return true;
}

void HttpProxy::Forget(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  live_.erase(fd);
}

void HttpProxy::Stop() {
  if (!thread_.joinable()) return;
  uint64_t one = 1;
  (void)!write(wake_.get(), &one, sizeof(one));
  thread_.join();
  std::unique_lock<std::mutex> lock(mu_);
  stopping_ = true;
  for (int fd : live_) shutdown(fd, SHUT_RDWR);  // wakes every wait on them
  cv_.notify_all();
  // Connections notice within a slice of I/O; wait for them, they use *this.
  cv_.wait(lock, [this] { return active_ == 0; });
}

void HttpProxy::Expect(uint16_t client_port, const SecretRule* rule) {
  std::lock_guard<std::mutex> lock(mu_);
  expected_[client_port] = rule;
  cv_.notify_all();
}

const SecretRule* HttpProxy::TakeExpected(uint16_t client_port) {
  // Polled, not waited on a condition: this runs on a fiber, which must not
  // block its thread. The entry is almost always there at the first look
  // (the sentry writes it before it lets the guest's connect go on).
  constexpr int kLookMs = 5, kGiveUpMs = 2000;
  for (int waited = 0;; waited += kLookMs) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = expected_.find(client_port);
      if (it != expected_.end()) {
        const SecretRule* rule = it->second;
        expected_.erase(it);
        return rule;
      }
      if (stopping_ || waited >= kGiveUpMs) return nullptr;
    }
    WaitMs(kLookMs);
  }
}

void HttpProxy::AcceptLoop() {
  while (true) {
    pollfd p[2] = {{listener_.get(), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
    if (poll(p, 2, -1) < 0 && errno != EINTR) return;
    if (p[1].revents) return;
    if (!(p[0].revents & POLLIN)) continue;
    int c = accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (c < 0) continue;
    if (active_.load() >= kMaxProxyConnections) {
      Refuse(UniqueFd(c));
      continue;
    }
    ++active_;
    bool started = FiberLoop::Shared().Spawn([this, c] {
      Serve(UniqueFd(c));
      std::lock_guard<std::mutex> lock(mu_);
      --active_;
      cv_.notify_all();
    });
    if (!started) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        --active_;
      }
      Refuse(UniqueFd(c));
    }
  }
}

void HttpProxy::Refuse(UniqueFd client) {
  sockaddr_in peer{};
  socklen_t len = sizeof(peer);
  if (getpeername(client.get(), reinterpret_cast<sockaddr*>(&peer), &len) == 0) {
    std::lock_guard<std::mutex> lock(mu_);
    expected_.erase(ntohs(peer.sin_port));
  }
  std::string r = StatusReply(503, "too many connections through the proxy at once");
  (void)!send(client.get(), r.data(), r.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

void HttpProxy::Serve(UniqueFd client) {
  sockaddr_in peer{};
  socklen_t len = sizeof(peer);
  getpeername(client.get(), reinterpret_cast<sockaddr*>(&peer), &len);
  const SecretRule* rule = TakeExpected(ntohs(peer.sin_port));
  if (!rule || !Live(client.get())) return;
  Upstream up;
  // Declared after the sockets, so it runs before they close: the proxy
  // must never shut down a number the process has reused.
  std::vector<int> mine = {client.get()};
  struct Unregister {
    HttpProxy* proxy;
    std::vector<int>* fds;
    ~Unregister() {
      for (int fd : *fds) proxy->Forget(fd);
    }
  } unregister{this, &mine};
  auto live = [&](int fd) {
    if (!Live(fd)) return false;
    mine.push_back(fd);
    return true;
  };
  auto stopping = [this] {
    std::lock_guard<std::mutex> lock(mu_);
    return stopping_;
  };
  auto last = std::chrono::steady_clock::now();
  auto idle = [&] { return std::chrono::steady_clock::now() - last > kIdleLimit; };

  // The request head.
  std::string buf;
  char chunk[16384];
  size_t end;
  while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
    if (buf.size() > kMaxHead) {
      std::string r = StatusReply(431, "the request head is larger than 64 KiB");
      SendAll(client.get(), r.data(), r.size());
      return;
    }
    pollfd p{client.get(), POLLIN, 0};
    int n = WaitPoll(&p, 1, kIoSliceMs);
    if (n == 0) {
      if (stopping() || idle()) return;
      continue;
    }
    ssize_t r = recv(client.get(), chunk, sizeof(chunk), 0);
    if (r <= 0) return;
    buf.append(chunk, static_cast<size_t>(r));
    last = std::chrono::steady_clock::now();
  }
  uint64_t body_len;
  int status;
  std::string head = RewriteRequestHead(buf.substr(0, end + 4), *rule, &body_len, &status);
  if (head.empty()) {
    std::string r = StatusReply(
        status, status == 411 ? "send a Content-Length, not chunks" : "not an HTTP/1.x request");
    SendAll(client.get(), r.data(), r.size());
    return;
  }
  if (std::string why = up.Connect(policy_, *rule, live, upstream_socket_); !why.empty()) {
    std::string r = StatusReply(502, why);
    SendAll(client.get(), r.data(), r.size());
    return;
  }
  uint64_t out = 0, in = 0;
  std::string body = buf.substr(end + 4);
  if (body.size() > body_len) body.resize(body_len);
  if (up.Write(head.data(), head.size()) < 0 || up.Write(body.data(), body.size()) < 0) return;
  out += head.size() + body.size();
  // The rest of the body, then the response until the upstream closes.
  uint64_t left = body_len - body.size();
  while (left > 0) {
    pollfd p{client.get(), POLLIN, 0};
    if (WaitPoll(&p, 1, kIoSliceMs) == 0) {
      if (stopping() || idle()) return;
      continue;
    }
    ssize_t r = recv(client.get(), chunk, std::min<uint64_t>(sizeof(chunk), left), 0);
    if (r <= 0 || up.Write(chunk, static_cast<size_t>(r)) < 0) return;
    left -= static_cast<uint64_t>(r);
    out += static_cast<uint64_t>(r);
    last = std::chrono::steady_clock::now();
  }
  while (true) {
    ssize_t r = up.Read(chunk, sizeof(chunk));
    if (r == -2) {
      pollfd p{up.fd(), POLLIN, 0};
      if (!up.pending() && WaitPoll(&p, 1, kIoSliceMs) == 0 && (stopping() || idle())) break;
      continue;
    }
    if (r <= 0) break;
    in += static_cast<uint64_t>(r);
    last = std::chrono::steady_clock::now();
    if (!SendAll(client.get(), chunk, static_cast<size_t>(r))) break;
  }
  count_(out, in);
  shutdown(client.get(), SHUT_WR);
}

}  // namespace sentry::net
