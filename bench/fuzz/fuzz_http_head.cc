// libFuzzer target: `sentry serve`'s HTTP side (sentry/agent/http_connection.cc):
// what an unauthenticated or authenticated client sends on one connection.
//
// The bytes go, whole, into one end of a unix socket pair and the writing
// side is shut; HttpSession::Serve (Beast's parser, the token check, the
// routes, the body's JSON, the run, streaming) serves the other end, as
// `sentry serve` does a connection, with the real AgentService over a runner
// that runs nothing (fuzz_agent_fake.h); a thread reads what it answers.
// The token is "t0k3n" (in the dictionary; "Bearer" in any case). Checked
// beyond "no crash":
//  - the answers are HTTP/1.1 responses: each starts with "HTTP/1.1 NNN ",
//    its head ends in a blank line, and a status is one the server sends;
//  - a 200 for /v1/runs or /metrics is only given to a request that carried
//    the token (no answer but /v1/health's without it).
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <string_view>
#include <thread>

#include "fuzz_agent_fake.h"
#include "sentry/agent/http_connection.h"

namespace {

[[noreturn]] void Fail(const char* what, std::string_view in, std::string_view out) {
  std::fprintf(stderr, "fuzz_http_head invariant broken: %s\nin: %.*s\nout: %.*s\n", what,
               static_cast<int>(std::min<size_t>(in.size(), 2000)), in.data(),
               static_cast<int>(std::min<size_t>(out.size(), 2000)), out.data());
  std::abort();
}

const std::set<int> kStatuses = {100, 200, 400, 401, 403, 404, 405, 411, 413, 429, 431, 500, 503};

void Check(std::string_view in, const std::string& out) {
  std::string lower(in);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  bool has_token = lower.find("bearer t0k3n") != std::string::npos;
  size_t at = 0;
  while (at < out.size()) {
    if (out.compare(at, 9, "HTTP/1.1 ") != 0) Fail("not a status line", in, out.substr(at));
    int status = std::atoi(out.substr(at + 9, 3).c_str());
    if (!kStatuses.count(status)) Fail("a status the server does not send", in, out.substr(at));
    size_t end = out.find("\r\n\r\n", at);
    if (end == std::string::npos) Fail("a head without its blank line", in, out.substr(at));
    std::string head = out.substr(at, end - at);
    // /v1/health's object (its keys sorted) is the only 200 without the token.
    if (status == 200 && !has_token && out.compare(end + 4, 11, "{\"inFlight\"") != 0) {
      Fail("a 200 other than /v1/health without the token", in, out.substr(at));
    }
    // The next response: after this one's Content-Length body, or (chunked)
    // after its last chunk.
    size_t cl = head.find("Content-Length: ");
    if (cl != std::string::npos) {
      at = end + 4 + std::strtoull(head.c_str() + cl + 16, nullptr, 10);
    } else if (head.find("chunked") != std::string::npos) {
      size_t last = out.find("\r\n0\r\n\r\n", end);
      at = last == std::string::npos ? out.size() : last + 7;
    } else {
      at = end + 4;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (256 << 10)) return 0;
  static sentry::agent::HttpOptions options = [] {
    sentry::agent::HttpOptions o;
    o.token = "t0k3n";
    o.io_timeout_sec = 1;
    return o;
  }();
  static sentry::agent::Connections connections;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0) std::abort();
  std::string out;
  if (size == 0) shutdown(sv[0], SHUT_WR);
  std::thread client([&] {
    int fd = sv[0];
    size_t sent = 0;
    char buf[1 << 14];
    while (true) {
      pollfd p{fd, static_cast<short>(POLLIN | (sent < size ? POLLOUT : 0)), 0};
      if (poll(&p, 1, 5000) <= 0) break;
      if ((p.revents & POLLOUT) && sent < size) {
        ssize_t n = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
        if (n > 0) sent += n;
        if (sent == size) shutdown(fd, SHUT_WR);
      }
      if (p.revents & (POLLIN | POLLHUP)) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n <= 0) break;
        out.append(buf, n);
      }
    }
  });
  sentry::agent::HttpSession(fuzz_agent::Service(), options, connections).Serve(sv[1]);
  close(sv[1]);
  client.join();
  close(sv[0]);
  Check(std::string_view(reinterpret_cast<const char*>(data), size), out);
  return 0;
}
