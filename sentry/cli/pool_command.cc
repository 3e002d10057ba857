// sentry pool: keeps sandboxes warm for `sentry run --pool`.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "sentry/cli/commands.h"
#include "sentry/cli/flag_set.h"
#include "sentry/cli/flag_values.h"
#include "sentry/pool/pool.h"

namespace sentry::cli {
namespace {

constexpr const char* kPoolUsage =
    R"(usage: sentry pool --socket PATH [FLAGS]

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

A flag takes its value as --size 4 or --size=4.)";

constexpr const char* kPoolFooter =
    R"(Exit codes: 0 when stopped by a signal, 125 if the socket cannot be made or
sandboxes cannot be made on this host (see `sentry check`).
)";

constexpr const char* kPool = "Pool";
constexpr const char* kPython = "Warm interpreters";

}  // namespace

int PoolCommand(const std::vector<std::string>& args) {
  PoolOptions o;
  CLI::App app(kPoolUsage, "sentry pool");
  app.footer(kPoolFooter);
  FlagSet f(app);
  f.Value("--socket", kPool, "PATH", "the unix socket to listen on (e.g. /run/sentry.sock)",
          Text(&o.socket_path, "needs a path"));
  f.Value("--size", kPool, "N", "sandboxes kept warm (default 2; each holds a few MiB)",
          Whole(&o.size, 1, 64, "needs a number of sandboxes from 1 to 64"));
  f.Value("--refill", kPool, "N",
          "sandboxes made at the same time (default 1): the CPU the refill takes from the runs",
          Whole(&o.refill, 1, 64, "needs a number of sandboxes from 1 to 64"));
  f.Value("--refill-nice", kPool, "N",
          "the nice (0-19) sandboxes are made and torn down at (default 10): a run preempts "
          "the refill",
          Whole(&o.refill_nice, 0, 19, "needs a nice value from 0 to 19"));
  f.Value("--ready-file", kPool, "FILE",
          "keep the count of sandboxes ready (made, not serving) in FILE, as text, rewritten "
          "in place (for a server's metrics)",
          Text(&o.ready_file, "needs a path"));
  f.Value("--userns", kPool, "auto|range|single",
          "without root, the id mode of the sandboxes, as for `sentry run` (a run of "
          "another --userns starts cold)",
          [&o](const std::string& v) { return ParseIdMode(v, &o.userns); });
  f.Value("--log-level", kPool, "LEVEL", kLogLevelHelp, LogLevel());
  f.Switch("--python", kPython, "keep warm python3 interpreters (see above)",
           [&o] { o.python = true; });
  f.Value("--preload", kPython, "M,...",
          "modules each warm interpreter imports (e.g. numpy,pandas)", Modules(&o.preload));
  FlagsOutcome parsed = ParseFlagsOnly(app, args);
  if (parsed.kind == FlagsOutcome::Kind::kHelp) {
    std::fputs(Help(app, {kPool, kPython}).c_str(), stdout);
    return 0;
  }
  if (parsed.kind == FlagsOutcome::Kind::kError) return UsageError("pool", parsed.text);
  if (!o.preload.empty() && !o.python) return UsageError("pool", "--preload needs --python");
  if (o.socket_path.empty()) {
    return UsageError("pool", "--socket PATH is needed, e.g. --socket /run/sentry.sock");
  }
  return RunPool(o);
}

}  // namespace sentry::cli
