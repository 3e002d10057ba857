// WarmPythonPool: warm interpreters for a server in the same process
// (`sentry serve`, `sentry mcp`).
//
// A pool is a `sentry pool --python` daemon this object starts (fork and
// exec of the sentry binary: the caller may have threads, and each warm
// sandbox needs a process of its own, whose children only it waits for),
// listening on a socket in a fresh 0700 directory. Run() hands one request
// to a warm interpreter: its stdin bytes and the result's stdout/stderr travel
// in memfds, its files go into the VFS, and the answer is the `sentry run
// --json` result object. When no interpreter is warm within accept_timeout_ms
// (all busy, still refilling) or the request is not one a warm interpreter
// runs as a cold start would (WarmPythonCanServe), Run returns nullopt and
// the caller runs cold: a run is never failed for want of a warm sandbox.
//
// Each interpreter serves one run and is destroyed; the daemon makes the next
// with at most `refill` being made at once. Thread-safe: concurrent Run calls
// each take their own interpreter.
#ifndef SENTRY_POOL_WARM_PYTHON_H_
#define SENTRY_POOL_WARM_PYTHON_H_

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "sentry/base/unique_fd.h"
#include "sentry/run/run.h"

namespace sentry {

struct WarmPythonOptions {
  int size = 2;                      // interpreters kept warm
  int refill = 1;                    // made at the same time
  int refill_nice = 10;              // the nice they are made at (runs preempt it)
  std::vector<std::string> preload;  // modules imported ahead (numpy, pandas)
  std::string sentry_binary = "/proc/self/exe";
  int accept_timeout_ms = 100;  // wait for a warm interpreter before nullopt
  std::string log_path;         // the daemon's stderr ("" : /dev/null)
};

struct WarmRunRequest {
  // `python3 SCRIPT ARGS...` or `python3 -c CODE ARGS...`. Empty: `code` runs
  // as the script main.py in the guest's home (`python3 main.py`).
  std::vector<std::string> argv;
  std::string code;
  std::string stdin_bytes;
  std::vector<std::pair<std::string, std::string>> files;  // guest path → bytes
  // The run's limits and settings: timeout_sec, memory_bytes, pids, cpus,
  // max_output, nofile, env, workdir (argv, files, json and stdin are set
  // from the fields above; no host file is copied in).
  RunOptions limits;
  // Readable when the caller gives up: the connection is closed (the warm
  // sandbox's supervisor then kills it) and Run returns nullopt with
  // *why "cancelled". -1: never.
  int cancel_fd = -1;
};

class WarmPythonPool final {
 public:
  static absl::StatusOr<std::unique_ptr<WarmPythonPool>> Start(const WarmPythonOptions& options);
  // Stops the daemon: runs in progress finish, warm interpreters go.
  ~WarmPythonPool();
  WarmPythonPool(const WarmPythonPool&) = delete;
  WarmPythonPool& operator=(const WarmPythonPool&) = delete;

  // Gets the guest's output as it comes (stream 1: stdout, 2: stderr), on
  // Run's thread. A copy: the result holds the output too. A reader slower
  // than the guest misses chunks (the guest is never held up), not bytes of
  // the result.
  using OutputFn = std::function<void(int stream, std::string_view data)>;

  // The run's `--json` result object, or nullopt (with *why if given) when
  // the caller must run it cold. With on_output, the output is also given as
  // it comes.
  std::optional<std::string> Run(const WarmRunRequest& request, std::string* why = nullptr,
                                 const OutputFn& on_output = nullptr);

  // The RunOptions a request stands for (what a cold run of it is given).
  static RunOptions OptionsOf(const WarmRunRequest& request);

  // Interpreters ready now (made, not serving), as the daemon last said.
  int Ready() const;

  const std::string& socket_path() const { return socket_path_; }
  pid_t daemon_pid() const { return daemon_; }

 private:
  WarmPythonPool() = default;
  WarmPythonOptions options_;
  std::string dir_;
  std::string socket_path_;
  UniqueFd lock_;  // held while the pool lives (warm_sweep.h)
  pid_t daemon_ = -1;
};

}  // namespace sentry

#endif  // SENTRY_POOL_WARM_PYTHON_H_
