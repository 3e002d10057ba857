// sentry pool: sandboxes made ahead of their commands, so that a run starts
// in milliseconds. A cold `sentry run` spends ~10 ms before the guest's first
// instruction (namespaces, mount view, cgroups, VFS, the guest process up to
// its execve); the pool does that work before anyone asks.
//
// The pool is one daemon (RunPool) listening on a unix socket, and N warm
// workers it forks, each one sandbox (a WarmSandbox) blocked in accept().
// `sentry run --pool SOCKET` connects, sends its options and its fds 0-2,
// and one worker serves the run exactly once, with the client's stdio, then
// exits; the daemon forks a new worker at once. No sandbox serves twice:
// nothing of one run can reach the next.
//
// Only the run's owner may use it (SO_PEERCRED, and a 0600 socket), and a
// request the warm sandboxes cannot serve (--root, --disk, a network,
// --no-namespaces, --no-cgroups, a terminal on stdio) runs cold instead.
#ifndef SENTRY_POOL_POOL_H_
#define SENTRY_POOL_POOL_H_

#include <optional>
#include <string>
#include <vector>

#include "sentry/run/run.h"

namespace sentry {

struct PoolOptions {
  std::string socket_path;
  int size = 2;    // sandboxes kept warm
  int refill = 1;  // sandboxes made at the same time (the CPU the refill may take)
  // The nice a sandbox is made (and torn down) at: a run preempts the refill.
  // A run takes the normal priority (WarmSandbox::Prioritize).
  int refill_nice = 10;
  // Warm interpreters (warm_bootstrap.h): python3 started in each sandbox,
  // these modules imported, waiting for its script. Serves `python3 SCRIPT`
  // and `python3 -c CODE`; other commands run cold.
  bool python = false;
  std::vector<std::string> preload;
  // Where the count of sandboxes ready (made, not serving) is kept, as text,
  // for a server to report ("": nowhere).
  std::string ready_file;
  // Without root, the id mode of its sandboxes (`sentry run --userns`); a
  // run of another mode is refused and starts cold.
  IdMode userns = IdMode::kAuto;
};

// The daemon: serves until SIGINT/SIGTERM/SIGHUP. Returns the exit code.
int RunPool(const PoolOptions& options);

// Whether a warm sandbox can serve o; if not, *why says what needs a cold run.
bool PoolCanServe(const RunOptions& o, std::string* why);

// Runs o in the pool at socket_path: the exit code, or nullopt (with *why)
// if no warm sandbox took the run, which may then run cold.
std::optional<int> RunInPool(const std::string& socket_path, const RunOptions& o, std::string* why);

}  // namespace sentry

#endif  // SENTRY_POOL_POOL_H_
