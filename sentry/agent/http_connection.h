// One client connection of `sentry serve` (http_server.h), and the set of
// them: the caps on connections (all, and per peer address) and the
// shutdown that ends the idle ones.
//
// A connection reads a request head within the I/O timeout (the whole head,
// not each read of it), then its body within the timeout plus a second per
// 64 KiB, so that a slow client holds its slot for a bounded time.
#ifndef SENTRY_AGENT_HTTP_CONNECTION_H_
#define SENTRY_AGENT_HTTP_CONNECTION_H_

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sentry/agent/fd_stream.h"
#include "sentry/agent/http_server.h"
#include "sentry/agent/service.h"

namespace sentry::agent {

class Connections final {
 public:
  // peer: the client's address without its port ("" for a unix socket: all
  // its clients are the server's user, so no cap per peer). false when
  // either cap is reached.
  bool Add(int fd, const std::string& peer, int max, int max_per_peer);
  void Remove(int fd);
  // No more requests are read: a connection waiting for one sees its end; one
  // in a run still writes its answer.
  void StopReading();
  bool stopping();
  void WaitEmpty();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int, std::string> fds_;  // fd -> peer
  std::map<std::string, int> per_peer_;
  bool stopping_ = false;
};

class HttpSession final {
 public:
  HttpSession(AgentService& service, const HttpOptions& options, Connections& connections)
      : service_(service), options_(options), connections_(connections) {}

  // Serves the connection's requests until it ends, stalls, misbehaves or
  // the server stops. Does not close fd.
  void Serve(int fd);

 private:
  // Answers one request whose header is read; false to close the connection.
  bool Handle(FdStream& s, boost::beast::flat_buffer& buf,
              boost::beast::http::request_parser<boost::beast::http::string_body>& parser);
  bool Send(FdStream& s, boost::beast::http::status status, const std::string& body,
            bool keep_alive, const char* content_type = "application/json",
            const std::vector<std::pair<boost::beast::http::field, std::string>>& extra = {});
  // The name of the caller's token (its tenant), or nullopt.
  std::optional<std::string> Tenant(const boost::beast::http::request_header<>& req) const;
  bool Runs(FdStream& s, const std::string& body, bool stream, bool keep_alive);

  AgentService& service_;
  const HttpOptions& options_;
  Connections& connections_;
};

}  // namespace sentry::agent

#endif  // SENTRY_AGENT_HTTP_CONNECTION_H_
