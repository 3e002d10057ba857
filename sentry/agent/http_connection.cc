#include "sentry/agent/http_connection.h"

#include <sys/socket.h>

#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "sentry/agent/json_bounded.h"
#include "sentry/agent/ndjson_sink.h"
#include "sentry/agent/session_routes.h"
#include "sentry/base/json_out.h"
#include "sentry/run/result.h"

namespace sentry::agent {

namespace http = boost::beast::http;
using nlohmann::json;

namespace {

// The slowest body a client may send (8 MiB: 128 s past the I/O timeout).
constexpr uint64_t kBodyBytesPerSecond = 64 << 10;

std::string ErrorBody(const std::string& message) { return RequestError{400, "", message}.Json(); }

}  // namespace

void HttpSession::Serve(int fd) {
  FdStream s(fd, options_.io_timeout_sec * 1000);
  boost::beast::flat_buffer buf;
  while (!connections_.stopping()) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(16 << 10);
    parser.body_limit(service_.flags().policy.max_request_bytes);
    boost::system::error_code ec;
    // The whole head, not each read of it, within the I/O timeout: a client
    // that sends a byte now and then (slowloris) is cut off all the same.
    s.SetDeadline(options_.io_timeout_sec * 1000);
    http::read_header(s, buf, parser, ec);
    s.SetDeadline(0);
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

bool HttpSession::Send(FdStream& s, http::status status, const std::string& body, bool keep_alive,
                       const char* content_type,
                       const std::vector<std::pair<http::field, std::string>>& extra) {
  http::response<http::string_body> res{status, 11};
  res.set(http::field::server, "sentry");
  res.set(http::field::content_type, content_type);
  res.set(http::field::cache_control, "no-store");
  for (const auto& [f, v] : extra) res.set(f, v);
  res.keep_alive(keep_alive);
  res.body() = body;
  // A JSON or text answer ends its line; a file's bytes are sent as they are.
  bool bytes = std::string_view(content_type) == "application/octet-stream";
  if (!bytes && !body.empty() && body.back() != '\n') res.body() += "\n";
  res.prepare_payload();
  boost::system::error_code ec;
  http::write(s, res, ec);
  return !ec && keep_alive;
}

std::optional<std::string> HttpSession::Tenant(const http::request_header<>& req) const {
  auto it = req.find(http::field::authorization);
  if (it == req.end()) return std::nullopt;
  std::string v(it->value().data(), it->value().size());
  if (!absl::StartsWithIgnoreCase(v, "Bearer ")) return std::nullopt;
  // Every token is compared, whichever matches: the time says nothing of which.
  std::optional<std::string> tenant;
  for (const auto& [name, token] : options_.tokens) {
    if (TokensEqual(v.substr(7), token) && !tenant) tenant = name;
  }
  return tenant;
}

bool HttpSession::Handle(FdStream& s, boost::beast::flat_buffer& buf,
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
  std::optional<std::string> tenant = Tenant(req);
  if (!tenant) {
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
  bool sessions = IsSessionPath(path) && service_.sessions() != nullptr;
  if (path != "/v1/runs" && !sessions) {
    return early(http::status::not_found,
                 ErrorBody("no such endpoint (POST /v1/runs, /v1/sessions, GET /v1/health, GET "
                           "/metrics)"));
  }
  if (!sessions && req.method() != http::verb::post) {
    return early(http::status::method_not_allowed, ErrorBody("use POST"),
                 {{http::field::allow, "POST"}});
  }
  bool stream = false;
  for (absl::string_view kv : absl::StrSplit(sessions ? "" : query, '&', absl::SkipEmpty())) {
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
  // The body too has a deadline of its own: the I/O timeout, and a second
  // for each kBodyBytesPerSecond it holds.
  uint64_t length = parser.content_length().value_or(max);
  s.SetDeadline(options_.io_timeout_sec * 1000 +
                static_cast<int>(length * 1000 / kBodyBytesPerSecond));
  http::read(s, buf, parser, ec);
  s.SetDeadline(0);
  if (ec == http::error::body_limit) {
    service_.metrics().RecordRejected("too_large");
    return Send(
        s, http::status::payload_too_large,
        RequestError{413, "", absl::StrCat("the body is larger than ", max, " bytes")}.Json(),
        false);
  }
  if (ec) return false;
  if (sessions) {
    SessionRequest r{std::string(req.method_string()), path, query, std::move(parser.get().body()),
                     *tenant};
    NdjsonSink sink(s, service_.flags().policy.base.max_output);
    SessionReply reply = RouteSession(*service_.sessions(), r, &sink);
    keep = parser.get().keep_alive();
    if (reply.streamed && sink.started()) {
      sink.Finish(reply.body + "\n");
      return keep;
    }
    return Send(s, static_cast<http::status>(reply.status), reply.body, keep, reply.content_type);
  }
  return Runs(s, parser.get().body(), stream, parser.get().keep_alive());
}

bool HttpSession::Runs(FdStream& s, const std::string& body, bool stream, bool keep) {
  json request;
  std::string why;
  JsonRefusal refused = ParseBoundedJson(body, service_.flags().policy.max_request_bytes,
                                         kMaxJsonDepth, &request, &why);
  if (refused != JsonRefusal::kNone) {
    service_.metrics().RecordRejected("bad_request");
    return Send(
        s, http::status::bad_request,
        ErrorBody(refused == JsonRefusal::kMalformed ? absl::StrCat("the body is not JSON: ", why)
                                                     : absl::StrCat("the body is ", why)),
        keep);
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

}  // namespace sentry::agent

namespace sentry::agent {

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

bool Connections::Add(int fd, const std::string& peer, int max, int max_per_peer) {
  std::lock_guard<std::mutex> lock(mu_);
  if (static_cast<int>(fds_.size()) >= max) return false;
  if (!peer.empty() && max_per_peer > 0 && per_peer_[peer] >= max_per_peer) return false;
  fds_[fd] = peer;
  if (!peer.empty()) ++per_peer_[peer];
  return true;
}

void Connections::Remove(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = fds_.find(fd);
  if (it != fds_.end()) {
    if (!it->second.empty() && --per_peer_[it->second] <= 0) per_peer_.erase(it->second);
    fds_.erase(it);
  }
  cv_.notify_all();
}

void Connections::StopReading() {
  std::lock_guard<std::mutex> lock(mu_);
  stopping_ = true;
  for (const auto& [fd, peer] : fds_) shutdown(fd, SHUT_RD);
}

bool Connections::stopping() {
  std::lock_guard<std::mutex> lock(mu_);
  return stopping_;
}

void Connections::WaitEmpty() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return fds_.empty(); });
}

}  // namespace sentry::agent
