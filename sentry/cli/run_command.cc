// sentry run: flag parsing for one sandboxed run.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/numbers.h"
#include "sentry/cli/commands.h"
#include "sentry/run/run.h"

namespace sentry::cli {
namespace {

constexpr const char* kRunUsage = R"(usage: sentry run [FLAGS] -- CMD [ARGS...]

Runs CMD in a fresh sandbox. The guest sees the host's /usr, /bin, /sbin and
/lib read-only, the /etc files programs need, an empty in-memory /tmp and a
home directory /home/sandbox (its cwd). Everything it writes stays in memory
and is gone when the run ends. Its environment is clean (PATH, HOME, LANG,
LC_ALL, TERM if stdout is a terminal, and --env). A first argument that names
a host file (the script) is copied in at the same relative path.

Flags:
  --copy HOST:GUEST   copy a host file or directory into the sandbox before the run
  --env K=V           add a variable to the guest's environment (repeatable)
  --timeout SECONDS   kill the whole sandbox after this wall-clock time
  --disk MIB          cap on what the guest may store in memory (default 512)
  --root              the guest is uid 0 inside the sandbox (no host privilege)
  --no-copy-script    do not copy the script argument in
  --trace             log every trapped syscall to stderr, strace-style
  -h, --help          this text

Exit codes:
  0-123               the guest's own exit code
  124                 --timeout ended the run
  125                 sentry's own error (bad flags, the sandbox could not start)
  126                 CMD exists in the sandbox but cannot be executed
  127                 CMD is not in the sandbox
  128+N               the guest was killed by signal N (or sentry got signal N)
)";

int Usage(const std::string& problem) {
  std::fprintf(stderr, "sentry run: %s\n(see 'sentry run --help')\n", problem.c_str());
  return kExitSentryError;
}

}  // namespace

int RunCommand(const std::vector<std::string>& args) {
  RunOptions o;
  size_t i = 0;
  auto value = [&](const std::string& flag, std::string* out) {
    if (i + 1 >= args.size()) return false;
    *out = args[++i];
    (void)flag;
    return true;
  };
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string v;
    if (a == "--") {
      ++i;
      break;
    } else if (a == "-h" || a == "--help") {
      std::fputs(kRunUsage, stdout);
      return 0;
    } else if (a == "--trace") {
      o.trace = true;
    } else if (a == "--root") {
      o.root = true;
    } else if (a == "--no-copy-script") {
      o.copy_script = false;
    } else if (a == "--copy") {
      if (!value(a, &v)) return Usage("--copy needs HOST:GUEST");
      size_t colon = v.rfind(':');
      if (colon == std::string::npos || colon == 0 || colon + 1 == v.size()) {
        return Usage("--copy needs HOST:GUEST, e.g. --copy data.csv:/home/sandbox/data.csv");
      }
      o.copies.emplace_back(v.substr(0, colon), v.substr(colon + 1));
    } else if (a == "--env") {
      if (!value(a, &v) || v.find('=') == std::string::npos || v[0] == '=') {
        return Usage("--env needs K=V");
      }
      o.env.push_back(v);
    } else if (a == "--timeout") {
      if (!value(a, &v) || !absl::SimpleAtod(v, &o.timeout_sec) || o.timeout_sec <= 0) {
        return Usage("--timeout needs a positive number of seconds");
      }
    } else if (a == "--disk") {
      uint64_t mib;
      if (!value(a, &v) || !absl::SimpleAtoi(v, &mib) || mib == 0 || mib > (1u << 20)) {
        return Usage("--disk needs a size in MiB (1 to 1048576)");
      }
      o.disk_bytes = mib << 20;
    } else if (!a.empty() && a[0] == '-') {
      return Usage("unknown flag " + a);
    } else {
      break;  // the command starts here (a "--" is optional)
    }
  }
  o.argv.assign(args.begin() + static_cast<long>(i), args.end());
  if (o.argv.empty()) return Usage("no command given");
  return RunSandbox(o);
}

}  // namespace sentry::cli
