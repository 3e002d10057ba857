// sentry pool: keeps sandboxes warm for `sentry run --pool`.
#include <cstdio>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "sentry/cli/commands.h"
#include "sentry/run/pool.h"

namespace sentry::cli {
namespace {

constexpr const char* kPoolUsage =
    R"(usage: sentry pool --socket PATH [--size N] [--refill N] [--refill-nice N]
                   [--python [--preload MODULE,...]]

Keeps N sandboxes made ahead of their commands (namespaces, mount view,
cgroups, the in-memory filesystem, the guest process up to its execve), so
that `sentry run --pool PATH -- CMD` starts CMD in milliseconds. Each sandbox
serves one run and is gone after it; a new one is made at once. Runs as a
foreground daemon until SIGINT, SIGTERM or SIGHUP (runs in progress finish).

Only the pool's own user may use it (the socket is made 0600, and each
connection's uid is checked). A run the warm sandboxes cannot serve (--root,
--disk, --no-cgroups, namespace or network flags, a terminal on its stdio)
runs cold, as without --pool.

With --python each sandbox holds a warm interpreter: python3 has already
started in it (and imported the --preload modules) and waits for its
script. `sentry run --pool PATH -- python3 SCRIPT [ARGS]` or `-- python3 -c
CODE [ARGS]` then runs as `__main__` with the result of a cold run (argv,
__file__, sys.path[0], tracebacks, exit codes, stdin, files), in a few
milliseconds; another command, python3 flags, or an --env that Python reads
at start (PYTHON*, LC_*, LANG, HOME, PATH, LD_*...) runs cold.

Flags:
  --socket PATH   the unix socket to listen on (e.g. /run/sentry.sock)
  --size N        sandboxes kept warm (default 2; each holds a few MiB)
  --refill N      sandboxes made at the same time (default 1): the CPU the
                  refill takes from the runs
  --refill-nice N the nice (0-19) sandboxes are made and torn down at
                  (default 10): a run preempts the refill
  --python        keep warm python3 interpreters (see above)
  --preload M,... modules each warm interpreter imports (e.g. numpy,pandas)
  --ready-file F  keep the count of sandboxes ready (made, not serving) in F,
                  as text, rewritten in place (for a server's metrics)
  -h, --help      this text

Exit codes: 0 when stopped by a signal, 125 if the socket cannot be made or
sandboxes cannot be made on this host (see `sentry check`).
)";

// A dotted Python module name (what the bootstrap passes to __import__).
bool ModuleName(const std::string& m) {
  if (m.empty() || m.size() > 200 || m.front() == '.' || m.back() == '.') return false;
  for (char c : m) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.') return false;
  }
  return !absl::ascii_isdigit(static_cast<unsigned char>(m[0]));
}

int Usage(const std::string& why) {
  std::fprintf(stderr, "sentry pool: %s\n(see 'sentry pool --help')\n", why.c_str());
  return kExitSentryError;
}

}  // namespace

int PoolCommand(const std::vector<std::string>& args) {
  PoolOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string* v) {
      if (i + 1 >= args.size()) return false;
      *v = args[++i];
      return true;
    };
    std::string v;
    if (a == "-h" || a == "--help") {
      std::fputs(kPoolUsage, stdout);
      return 0;
    } else if (a == "--socket") {
      if (!value(&v) || v.empty()) return Usage("--socket needs a path");
      o.socket_path = v;
    } else if (a == "--size") {
      if (!value(&v) || !absl::SimpleAtoi(v, &o.size) || o.size < 1 || o.size > 64) {
        return Usage("--size needs a number of sandboxes from 1 to 64");
      }
    } else if (a == "--refill") {
      if (!value(&v) || !absl::SimpleAtoi(v, &o.refill) || o.refill < 1 || o.refill > 64) {
        return Usage("--refill needs a number of sandboxes from 1 to 64");
      }
    } else if (a == "--refill-nice") {
      if (!value(&v) || !absl::SimpleAtoi(v, &o.refill_nice) || o.refill_nice < 0 ||
          o.refill_nice > 19) {
        return Usage("--refill-nice needs a nice value from 0 to 19");
      }
    } else if (a == "--ready-file") {
      if (!value(&v) || v.empty()) return Usage("--ready-file needs a path");
      o.ready_file = v;
    } else if (a == "--python") {
      o.python = true;
    } else if (a == "--preload") {
      if (!value(&v)) return Usage("--preload needs module names, e.g. numpy,pandas");
      for (std::string m : std::vector<std::string>(absl::StrSplit(v, ',', absl::SkipEmpty()))) {
        if (!ModuleName(m)) return Usage("--preload: not a module name: " + m);
        o.preload.push_back(m);
      }
    } else {
      return Usage("unknown argument " + a);
    }
  }
  if (!o.preload.empty() && !o.python) return Usage("--preload needs --python");
  if (o.socket_path.empty())
    return Usage("--socket PATH is needed, e.g. --socket /run/sentry.sock");
  return RunPool(o);
}

}  // namespace sentry::cli
