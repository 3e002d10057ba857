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

#include <atomic>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "sentry/agent/fd_stream.h"
#include "sentry/base/json_out.h"
#include "sentry/base/status_macros.h"
#include "sentry/base/unique_fd.h"
#include "sentry/run/result.h"

namespace sentry::agent {
namespace {

namespace http = boost::beast::http;
using nlohmann::json;

std::string ErrorBody(const std::string& message) { return RequestError{400, "", message}.Json(); }

// The connections in progress, so that a shutdown can end the idle ones.
class Connections {
 public:
  bool Add(int fd, int max) {
    std::lock_guard<std::mutex> lock(mu_);
    if (static_cast<int>(fds_.size()) >= max) return false;
    fds_.insert(fd);
    return true;
  }
  void Remove(int fd) {
    std::lock_guard<std::mutex> lock(mu_);
    fds_.erase(fd);
    cv_.notify_all();
  }
  // No more requests are read: a connection waiting for one sees its end; one
  // in a run still writes its answer.
  void StopReading() {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    for (int fd : fds_) shutdown(fd, SHUT_RD);
  }
  bool stopping() {
    std::lock_guard<std::mutex> lock(mu_);
    return stopping_;
  }
  void WaitEmpty() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return fds_.empty(); });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<int> fds_;
  bool stopping_ = false;
};

// Where the bytes of a UTF-8 text can be cut: before any incomplete
// sequence at its end (kept for the next chunk).
size_t CompleteUtf8(std::string_view s) {
  size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    auto c = static_cast<unsigned char>(s[n - back]);
    if ((c & 0xc0) == 0x80) continue;  // a continuation byte: look further back
    size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    return len > back ? n - back : n;
  }
  return n;
}

// The live output of POST /v1/runs?stream=1, as NDJSON chunks: the headers
// go with the first line (a request refused before its run gets an
// ordinary answer instead).
class NdjsonSink final : public OutputSink {
 public:
  NdjsonSink(FdStream& s, uint64_t max_per_stream) : s_(s), max_(max_per_stream) {}

  void Chunk(int stream, std::string_view data) override {
    uint64_t& sent = sent_[stream - 1];
    std::string& carry = carry_[stream - 1];
    if (sent >= max_) return;  // the rest is in the result (head and tail)
    carry.append(data.substr(0, static_cast<size_t>(std::min<uint64_t>(data.size(), max_ - sent))));
    size_t cut = CompleteUtf8(carry);
    if (cut == 0) return;
    sent += cut;
    nlohmann::ordered_json line = {{"stream", stream == 1 ? "stdout" : "stderr"},
                                   {"data", JsonText(carry.substr(0, cut))}};
    Line(JsonDump(line) + "\n");
    carry.erase(0, cut);
  }
  bool started() const { return started_; }
  void Finish(const std::string& last_line) {
    Line(last_line);
    if (ok_) boost::asio::write(s_, http::make_chunk_last(), ec_);
  }

 private:
  void Line(const std::string& line) {
    if (!ok_) return;  // the client left: the run goes on to its end
    if (!started_) {
      started_ = true;
      http::response<http::empty_body> res{http::status::ok, 11};
      res.set(http::field::server, "sentry");
      res.set(http::field::content_type, "application/x-ndjson");
      res.set(http::field::cache_control, "no-store");
      res.chunked(true);
      http::response_serializer<http::empty_body> sr{res};
      http::write_header(s_, sr, ec_);
      ok_ = !ec_;
    }
    if (ok_) boost::asio::write(s_, http::make_chunk(boost::asio::buffer(line)), ec_);
    ok_ = ok_ && !ec_;
  }

  FdStream& s_;
  uint64_t max_;
  uint64_t sent_[2] = {0, 0};
  std::string carry_[2];
  bool started_ = false;
  bool ok_ = true;
  boost::system::error_code ec_;
};

class Server {
 public:
  Server(AgentService& service, const HttpOptions& options)
      : service_(service), options_(options) {}

  void Serve(int fd);
  Connections& connections() { return connections_; }

 private:
  // Answers one request whose header is read; false to close the connection.
  bool Handle(FdStream& s, boost::beast::flat_buffer& buf,
              http::request_parser<http::string_body>& parser);
  bool Send(FdStream& s, http::status status, const std::string& body, bool keep_alive,
            const char* content_type = "application/json",
            const std::vector<std::pair<http::field, std::string>>& extra = {});
  bool Authorized(const http::request_header<>& req) const;
  bool Runs(FdStream& s, const std::string& body, bool stream, bool keep_alive);

  AgentService& service_;
  const HttpOptions options_;
  Connections connections_;
};

void Server::Serve(int fd) {
  FdStream s(fd, options_.io_timeout_sec * 1000);
  boost::beast::flat_buffer buf;
  while (!connections_.stopping()) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(16 << 10);
    parser.body_limit(service_.flags().policy.max_request_bytes);
    boost::system::error_code ec;
    http::read_header(s, buf, parser, ec);
    if (ec == http::error::end_of_stream || ec == boost::asio::error::eof ||
        ec == boost::asio::error::timed_out || ec == boost::asio::error::connection_reset) {
      break;
    }
    if (ec == http::error::body_limit) {  // a Content-Length past the cap, seen in the header
      service_.metrics().RecordRejected("too_large");
      Send(s, http::status::payload_too_large,
           RequestError{413, "",
                        absl::StrCat("the body is larger than ",
                                     service_.flags().policy.max_request_bytes, " bytes")}
               .Json(),
           false);
      break;
    }
    if (ec) {
      service_.metrics().RecordRejected("bad_request");
      Send(s,
           ec == http::error::header_limit ? http::status::request_header_fields_too_large
                                           : http::status::bad_request,
           ErrorBody(absl::StrCat("malformed HTTP request: ", ec.message())), false);
      break;
    }
    if (!Handle(s, buf, parser)) break;
  }
}

bool Server::Send(FdStream& s, http::status status, const std::string& body, bool keep_alive,
                  const char* content_type,
                  const std::vector<std::pair<http::field, std::string>>& extra) {
  http::response<http::string_body> res{status, 11};
  res.set(http::field::server, "sentry");
  res.set(http::field::content_type, content_type);
  res.set(http::field::cache_control, "no-store");
  for (const auto& [f, v] : extra) res.set(f, v);
  res.keep_alive(keep_alive);
  res.body() = body;
  if (!body.empty() && body.back() != '\n') res.body() += "\n";
  res.prepare_payload();
  boost::system::error_code ec;
  http::write(s, res, ec);
  return !ec && keep_alive;
}

bool Server::Authorized(const http::request_header<>& req) const {
  auto it = req.find(http::field::authorization);
  if (it == req.end()) return false;
  std::string v(it->value().data(), it->value().size());
  if (!absl::StartsWithIgnoreCase(v, "Bearer ")) return false;
  return TokensEqual(v.substr(7), options_.token);
}

bool Server::Handle(FdStream& s, boost::beast::flat_buffer& buf,
                    http::request_parser<http::string_body>& parser) {
  const auto& req = parser.get();
  std::string target(req.target().data(), req.target().size());
  std::string path = target.substr(0, target.find('?'));
  std::string query =
      target.find('?') == std::string::npos ? "" : target.substr(target.find('?') + 1);
  bool keep = req.keep_alive();
  bool has_body = parser.content_length().value_or(0) > 0 || parser.chunked();
  // An answer before the body is read: the connection cannot go on.
  auto early = [&](http::status st, const std::string& body,
                   const std::vector<std::pair<http::field, std::string>>& extra = {}) {
    return Send(s, st, body, keep && !has_body, "application/json", extra);
  };
  if (path == "/v1/health") {
    if (req.method() != http::verb::get) {
      return early(http::status::method_not_allowed, ErrorBody("use GET"),
                   {{http::field::allow, "GET"}});
    }
    json h = {{"status", connections_.stopping() ? "draining" : "ok"},
              {"version", SentryVersion()},
              {"inFlight", service_.metrics().in_flight.load()},
              {"queued", service_.metrics().queued.load()}};
    return early(http::status::ok, h.dump());
  }
  if (!Authorized(req)) {
    service_.metrics().RecordRejected("unauthorized");
    return Send(s, http::status::unauthorized,
                ErrorBody("missing or wrong token: send Authorization: Bearer TOKEN"), false,
                "application/json", {{http::field::www_authenticate, "Bearer"}});
  }
  if (path == "/metrics") {
    if (req.method() != http::verb::get) {
      return early(http::status::method_not_allowed, ErrorBody("use GET"),
                   {{http::field::allow, "GET"}});
    }
    return Send(s, http::status::ok, service_.MetricsText(), keep && !has_body,
                "text/plain; version=0.0.4");
  }
  if (path != "/v1/runs") {
    return early(http::status::not_found,
                 ErrorBody("no such endpoint (POST /v1/runs, GET /v1/health, GET /metrics)"));
  }
  if (req.method() != http::verb::post) {
    return early(http::status::method_not_allowed, ErrorBody("use POST"),
                 {{http::field::allow, "POST"}});
  }
  bool stream = false;
  for (absl::string_view kv : absl::StrSplit(query, '&', absl::SkipEmpty())) {
    if (kv == "stream=1" || kv == "stream=true") {
      stream = true;
    } else if (kv != "stream=0" && kv != "stream=false") {
      return early(http::status::bad_request,
                   ErrorBody(absl::StrCat("unknown query parameter: ", kv, " (known: stream=1)")));
    }
  }
  uint64_t max = service_.flags().policy.max_request_bytes;
  if (parser.content_length().value_or(0) > max) {
    service_.metrics().RecordRejected("too_large");
    return Send(
        s, http::status::payload_too_large,
        RequestError{413, "", absl::StrCat("the body is larger than ", max, " bytes")}.Json(),
        false);
  }
  auto expect = req.find(http::field::expect);
  if (expect != req.end() &&
      absl::EqualsIgnoreCase(std::string(expect->value().data(), expect->value().size()),
                             "100-continue")) {
    http::response<http::empty_body> cont{http::status::continue_, 11};
    boost::system::error_code ec;
    http::write(s, cont, ec);
    if (ec) return false;
  }
  boost::system::error_code ec;
  http::read(s, buf, parser, ec);
  if (ec == http::error::body_limit) {
    service_.metrics().RecordRejected("too_large");
    return Send(
        s, http::status::payload_too_large,
        RequestError{413, "", absl::StrCat("the body is larger than ", max, " bytes")}.Json(),
        false);
  }
  if (ec) return false;
  return Runs(s, parser.get().body(), stream, parser.get().keep_alive());
}

bool Server::Runs(FdStream& s, const std::string& body, bool stream, bool keep) {
  json request;
  try {
    request = json::parse(body);
  } catch (const json::exception& e) {
    service_.metrics().RecordRejected("bad_request");
    return Send(s, http::status::bad_request,
                ErrorBody(absl::StrCat("the body is not JSON: ", e.what())), keep);
  }
  if (!service_.Acquire()) {
    service_.metrics().RecordRejected("busy");
    if (connections_.stopping()) {
      return Send(s, http::status::service_unavailable, ErrorBody("the server is shutting down"),
                  false);
    }
    return Send(s, http::status::too_many_requests,
                ErrorBody("as many runs as the server allows are running or waiting; retry"), keep,
                "application/json", {{http::field::retry_after, "1"}});
  }
  NdjsonSink sink(s, service_.flags().policy.base.max_output);
  AgentService::Answer a = service_.Run(request, stream, &sink);
  service_.Release();
  if (!stream || !sink.started()) {
    return Send(s, static_cast<http::status>(a.status), a.body, keep);
  }
  if (a.status != 200) {
    sink.Finish(a.body + "\n");  // a RequestError's object
    return keep;
  }
  // Parsed again, in order: a.result, as the service parsed it, sorts its keys.
  nlohmann::ordered_json result = nlohmann::ordered_json::parse(a.body, nullptr, false);
  if (result.is_discarded()) result = nullptr;
  sink.Finish(JsonDump({{"result", std::move(result)}}) + "\n");
  return keep;
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

bool TokensEqual(const std::string& a, const std::string& b) {
  // Every byte of the longer is looked at, and the lengths compared last.
  size_t n = std::max(a.size(), b.size());
  unsigned char diff = 0;
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= x ^ y;
  }
  return (diff | static_cast<unsigned char>(a.size() != b.size())) == 0 && !b.empty();
}

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
  Server server(service, options);
  while (true) {
    pollfd p[2] = {{listener.get(), POLLIN, 0}, {sig.get(), POLLIN, 0}};
    if (poll(p, 2, -1) < 0 && errno != EINTR) return ErrnoStatus("poll");
    if (p[1].revents) break;
    if (!p[0].revents) continue;
    int fd = accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));  // fails on unix: harmless
    if (!server.connections().Add(fd, options.max_connections)) {
      static const std::string kFull = [] {
        std::string body = ErrorBody("too many connections; retry later");
        return absl::StrCat(
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            "Retry-After: 1\r\nConnection: close\r\nContent-Length: ",
            body.size(), "\r\n\r\n", body);
      }();
      (void)!send(fd, kFull.data(), kFull.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      close(fd);
      continue;
    }
    std::thread([&server, fd] {
      server.Serve(fd);
      server.connections().Remove(fd);
      close(fd);
    }).detach();
  }
  std::fprintf(stderr, "sentry serve: shutting down: runs in progress finish\n");
  listener.Reset();
  if (absl::StartsWith(options.listen, "unix:")) unlink(options.listen.substr(5).c_str());
  service.Drain();
  server.connections().StopReading();
  service.WaitIdle();
  server.connections().WaitEmpty();
  return absl::OkStatus();
}

}  // namespace sentry::agent
