// The run request of `sentry serve` (POST /v1/runs) and `sentry mcp`
// (run_python, run_command), parsed and checked against the server's policy:
//
//   {"language": "python"|"bash", "code": "..."} or {"argv": ["ls", "-l"]},
//   "stdin": "text" | {"base64": "..."},
//   "files": {"data.csv": "text", "/tmp/x.bin": {"base64": "...", "executable": false}},
//   "limits": {"timeoutMs", "memoryMb", "maxProcesses", "cpus", "diskMb",
//              "maxOutputBytes", "nofile"},
//   "network": "none" | {"allow": ["api.example.com:443"]},
//   "returnFiles": ["out.png"]
//
// A request may only tighten the server's limits and network policy. Every
// field is checked (type, size, count), an unknown one is refused, and every
// guest path is confined: absolute or relative to the home, no "." or "..",
// not under /proc, /dev or /sys. Nothing of a request ever names a host file.
#ifndef SENTRY_AGENT_RUN_REQUEST_H_
#define SENTRY_AGENT_RUN_REQUEST_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "nlohmann/json.hpp"
#include "sentry/agent/runner.h"
#include "sentry/run/run.h"

namespace sentry::agent {

// What the server allows (its flags and --limits-file) and the bounds of a
// request.
struct ServerPolicy {
  RunOptions base;  // the server's limits and network policy: a request's ceiling
  size_t max_request_bytes = 8 << 20;
  size_t max_files = 256;
  size_t max_return_files = 32;
  uint64_t return_file_max = 1 << 20;  // bytes of each returned file
  size_t max_argv = 4096;              // arguments
  size_t max_argv_bytes = 1 << 20;     // all of them
};

struct RequestError {
  int http_status = 400;  // 400 malformed, 403 above the server's policy, 413 too large
  std::string field;      // "limits.memoryMb", "files[\"a.txt\"]"
  std::string message;
  // {"error": {"field": ..., "message": ...}}
  std::string Json() const;
};

inline constexpr const char* kHome = "/home/sandbox";
inline constexpr const char* kPythonScript = "/home/sandbox/main.py";
inline constexpr const char* kBashScript = "/home/sandbox/main.sh";

// Parses a request object into a job; false with *error naming the field.
// stream: the output will be streamed (python then runs unbuffered).
bool ParseRunRequest(const nlohmann::json& request, const ServerPolicy& policy, bool stream,
                     RunJob* job, RequestError* error);

// A guest path made absolute (relative ones under the home) and checked; ""
// with *why if it may not be used.
std::string ConfineGuestPath(const std::string& path, std::string* why);

}  // namespace sentry::agent

#endif  // SENTRY_AGENT_RUN_REQUEST_H_
