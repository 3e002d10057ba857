// Drives the real `sentry serve` and `sentry mcp` for the agent tests: a
// server process, a small HTTP/1.1 client, a JSON-RPC line pipe.
#ifndef SENTRY_TESTS_AGENT_AGENT_UTIL_H_
#define SENTRY_TESTS_AGENT_AGENT_UTIL_H_

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace sentry::testing {

inline constexpr const char* kToken = "test-token-0123456789abcdef";

struct HttpReply {
  int status = 0;                              // 0: no answer (the connection failed or closed)
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
  nlohmann::json Json() const;  // the body parsed (null if it is not JSON)
};

// `sentry serve --listen ... --token-file ... EXTRA`, started and ready.
class ServeProcess final {
 public:
  // listen: "127.0.0.1:0" (the port it picks is read back) or "unix:PATH".
  explicit ServeProcess(const std::vector<std::string>& extra = {},
                        const std::string& listen = "127.0.0.1:0");
  ~ServeProcess();
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;

  bool ok() const { return pid_ > 0 && !address_.empty(); }
  pid_t pid() const { return pid_; }
  const std::string& address() const { return address_; }  // "127.0.0.1:PORT" or "unix:PATH"

  // One request on a connection of its own (Connection: close).
  HttpReply Request(const std::string& method, const std::string& target,
                    const std::string& body = "", bool auth = true,
                    const std::vector<std::string>& headers = {}) const;
  HttpReply Post(const nlohmann::json& request, const std::string& target = "/v1/runs") const {
    return Request("POST", target, request.dump());
  }
  // SIGTERM, then waits: the exit code (128+N if killed by N), -1 on timeout.
  int Stop(double timeout_sec = 30);
  std::string Stderr();  // what it printed so far

 private:
  pid_t pid_ = -1;
  int err_fd_ = -1;
  std::string err_;
  std::string address_;
  std::string token_file_;
};

// Sends raw bytes to an address and reads until the server closes.
std::string RawExchange(const std::string& address, const std::string& bytes,
                        double timeout_sec = 30);
HttpReply ParseHttpReply(const std::string& raw);

// The pids of host processes whose command line (NULs as spaces) holds
// marker. A process that ends during the scan is skipped.
std::vector<int> HostProcessesWith(const std::string& marker);

// `sentry mcp EXTRA`, its stdin and stdout as a JSON-RPC line pipe.
class McpProcess final {
 public:
  explicit McpProcess(const std::vector<std::string>& extra = {});
  ~McpProcess();
  McpProcess(const McpProcess&) = delete;
  McpProcess& operator=(const McpProcess&) = delete;

  void Send(const std::string& line);
  void SendJson(const nlohmann::json& message) { Send(message.dump()); }
  // The next line it writes, or nullopt after timeout_sec.
  std::optional<std::string> ReadLine(double timeout_sec = 30);
  // Sends a request and reads lines until its answer (the id) comes.
  nlohmann::json Call(int id, const std::string& method, const nlohmann::json& params);
  // Closes its stdin and waits: its exit code.
  int Finish();
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int in_ = -1, out_ = -1;
  std::string buf_;
};

}  // namespace sentry::testing

#endif  // SENTRY_TESTS_AGENT_AGENT_UTIL_H_
