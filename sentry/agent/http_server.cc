#include "sentry/agent/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "sentry/agent/http_connection.h"
#include "sentry/base/status_macros.h"
#include "sentry/base/unique_fd.h"
#include "sentry/session/session_manager.h"

namespace sentry::agent {
namespace {

// The peer's address without its port; "" for a unix socket.
std::string PeerAddress(const sockaddr_storage& ss) {
  char text[INET6_ADDRSTRLEN] = "";
  if (ss.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&ss)->sin_addr, text, sizeof(text));
  } else if (ss.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_addr, text, sizeof(text));
  }
  return text;
}

// A listening socket for "HOST:PORT" (HOST an IPv4 or [IPv6] address) or
// "unix:PATH"; *shown says where it listens.
absl::StatusOr<UniqueFd> Listen(const std::string& address, std::string* shown) {
  const std::string& listen = address;
  if (absl::StartsWith(listen, "unix:")) {
    std::string path = listen.substr(5);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof(sa.sun_path)) {
      return absl::InvalidArgumentError("--listen unix:PATH needs a path under 108 bytes");
    }
    memcpy(sa.sun_path, path.data(), path.size());
    struct stat st;
    if (lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) unlink(path.c_str());
    UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    // Only the server's user (and root) may connect; the token is checked too.
    mode_t old = umask(0177);
    int r = fd ? bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) : -1;
    umask(old);
    if (r < 0 || ::listen(fd.get(), 128) < 0)
      return ErrnoStatus(absl::StrCat("listen on ", listen));
    *shown = listen;
    return fd;
  }
  size_t colon = listen.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(listen.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError("--listen needs HOST:PORT (an IP address) or unix:PATH");
  }
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  sockaddr_storage ss{};
  socklen_t len;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    len = sizeof(*v4);
  } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    len = sizeof(*v6);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--listen: ", host, " is not an IP address (e.g. 127.0.0.1:8080)"));
  }
  UniqueFd fd(socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  int one = 1;
  if (fd) setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (!fd || bind(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) < 0 ||
      ::listen(fd.get(), 128) < 0) {
    return ErrnoStatus(absl::StrCat("listen on ", listen));
  }
  getsockname(fd.get(), reinterpret_cast<sockaddr*>(&ss), &len);
  char text[INET6_ADDRSTRLEN] = "";
  bool is4 = ss.ss_family == AF_INET;
  inet_ntop(ss.ss_family, is4 ? static_cast<void*>(&v4->sin_addr) : &v6->sin6_addr, text,
            sizeof(text));
  *shown = absl::StrCat(is4 ? "" : "[", text, is4 ? "" : "]", ":",
                        ntohs(is4 ? v4->sin_port : v6->sin6_port));
  return fd;
}

}  // namespace

absl::Status ServeHttp(AgentService& service, const HttpOptions& options) {
  std::string shown;
  ASSIGN_OR_RETURN(UniqueFd listener, Listen(options.listen, &shown));
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  UniqueFd sig(signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!sig) return ErrnoStatus("signalfd");
  std::fprintf(stderr, "sentry serve: listening on %s\n", shown.c_str());
  std::fflush(stderr);
  Connections connections;
  while (true) {
    pollfd p[2] = {{listener.get(), POLLIN, 0}, {sig.get(), POLLIN, 0}};
    if (poll(p, 2, -1) < 0 && errno != EINTR) return ErrnoStatus("poll");
    if (p[1].revents) break;
    if (!p[0].revents) continue;
    sockaddr_storage peer{};
    socklen_t peer_len = sizeof(peer);
    int fd = accept4(listener.get(), reinterpret_cast<sockaddr*>(&peer), &peer_len,
                     SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));  // fails on unix: harmless
    if (!connections.Add(fd, PeerAddress(peer), options.max_connections,
                         options.max_connections_per_peer)) {
      static const std::string kFull = [] {
        std::string body = RequestError{503, "", "too many connections; retry later"}.Json();
        return absl::StrCat(
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            "Retry-After: 1\r\nConnection: close\r\nContent-Length: ",
            body.size(), "\r\n\r\n", body);
      }();
      (void)!send(fd, kFull.data(), kFull.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      close(fd);
      continue;
    }
    std::thread([&service, &options, &connections, fd] {
      HttpSession(service, options, connections).Serve(fd);
      connections.Remove(fd);
      close(fd);
    }).detach();
  }
  std::fprintf(stderr, "sentry serve: shutting down: runs in progress finish\n");
  listener.Reset();
  if (absl::StartsWith(options.listen, "unix:")) unlink(options.listen.substr(5).c_str());
  service.Drain();
  connections.StopReading();
  // Every session ends, "shutdown"; a cell in progress answers with that.
  if (service.sessions()) service.sessions()->Shutdown();
  service.WaitIdle();
  connections.WaitEmpty();
  return absl::OkStatus();
}

}  // namespace sentry::agent
