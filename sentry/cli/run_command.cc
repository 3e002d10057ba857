// sentry run: flag parsing for one sandboxed run.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "sentry/cli/commands.h"
#include "sentry/cli/limits_file.h"
#include "sentry/run/pool.h"
#include "sentry/run/run.h"

namespace sentry::cli {
namespace {

constexpr const char* kRunUsage = R"(usage: sentry run [FLAGS] -- CMD [ARGS...]

Runs CMD in a fresh sandbox. The guest sees the host's /usr, /bin, /sbin and
/lib read-only, the /etc files programs need, an empty in-memory /tmp and a
home directory /home/sandbox (its cwd). Everything it writes stays in memory
and is gone when the run ends. Its environment is clean (PATH, HOME, LANG,
LC_ALL, TERM if stdout is a terminal, and --env).

The script argument (the first after CMD that does not start with '-') is
copied to the same relative path under the guest's cwd, and only if it is a
relative path below the current directory (no '..', no symlink on the way), a
regular file of at most 4 MiB that the caller's real uid may read, and a
script (a suffix such as .py .sh .js .rb .pl .R, or a '#!' first line).
Anything else that names a host file, and any later argument with a script
suffix, is not copied: one line on stderr says why. --copy HOST:GUEST copies
any file or directory the caller names.

Flags (SIZE is a number of MiB, or a number with k, m or g: 256m, 1g):
  --json              print one JSON result object (stdout, stderr, exitCode,
                      timedOut, limit, usage...) instead of streaming the output
  --timeout SECONDS   kill the whole sandbox after this wall-clock time
                      (default 30; 0 for none)
  --memory SIZE       memory cap for the whole sandbox (default 1g)
  --pids-limit N      cap on the sandbox's processes and threads (default 128)
  --cpus N            CPU quota, fractional (default: none)
  --nofile N          open files per process (default 1024)
  --disk SIZE         cap on what the guest may store in memory (default 512m)
  --max-output BYTES  with --json, keep this much of each stream (default 65536):
                      its first and last halves, with a count of what was dropped
  --stdin FILE        the guest's stdin ("-": sentry's own; default with --json: empty)
  --log FILE          append one JSON line per run (argv, code, limits, result,
                      the phases' wall times)
  --limits-file FILE  limits as JSON: {"timeoutMs": 5000, "memoryMb": 256,
                      "maxProcesses": 64, "cpus": 1, "diskMb": 100,
                      "maxOutputBytes": 65536, "nofile": 256, "network": "none"};
                      flags on the command line win over the file
  --copy HOST:GUEST   copy a host file or directory into the sandbox before the run
  --env K=V           add a variable to the guest's environment (repeatable)
  --workdir DIR       the guest's working directory (made if missing, owned
                      by the guest); the script argument is copied there
  --no-cgroups        make no cgroups (where the caller's own cgroup caps the
                      run): per-sandbox rlimits alone hold memory (RLIMIT_AS,
                      per process), processes (RLIMIT_NPROC) and CPU time
  --allow-net HOST[:PORT]
                      let connections out to HOST (a name, *.domain, or an IP),
                      on PORT or any (repeatable); the sentry resolves names
                      and never connects to loopback, private or link-local
                      addresses, whatever a name resolves to
  --add-host NAME:IP  resolve NAME to IP for the allowlist (not a way around it)
  --unsafe-allow-private-address
                      let allowlisted IP literals and --add-host entries be
                      private or loopback addresses (for tests; never in production)
  --secret [http://]HOST[:PORT]=HEADER:SOURCE
                      the guest's plain-HTTP requests to http://HOST go through
                      sentry's proxy, which adds "HEADER: value" and speaks TLS
                      to HOST (port 443) unless http:// is given; SOURCE is
                      env:VAR or file:PATH, read by sentry, never in the sandbox
  --net-bytes SIZE    cap on the bytes that cross the sandbox's edge; past it
                      every connection out is cut
  --network MODE      none (the default: loopback only) or allow (--allow-net)
  --root              the guest is uid 0 inside the sandbox (no host privilege)
  --no-namespaces     do not make namespaces: the sandbox stands on the seccomp
                      wall alone (what a run does by itself, with a notice,
                      where the kernel refuses namespaces): the guest runs as
                      a host uid of its own, sees host pids, has no network
  --require-namespaces
                      fail (exit 125) rather than run without namespaces
  --no-copy-script    do not copy the script argument in (nor say why not)
  --trace             log every trapped syscall to stderr, strace-style
  --census FILE       count every syscall the guest makes (native ones too, at
                      a trap's cost each) and write the counts to FILE as JSON
                      (format: docs/census.md)
  --timings           print to stderr where the run's wall time went (sandbox
                      set-up, the guest, teardown), in milliseconds
  --pool SOCKET       run in a sandbox made ahead by the `sentry pool` that
                      listens on SOCKET (also: SENTRY_POOL=SOCKET); where none
                      can serve the run (see `sentry pool --help`), it starts
                      cold, with a notice
  -h, --help          this text

Exit codes:
  0-123               the guest's own exit code
  124                 --timeout ended the run
  125                 sentry's own error (bad flags, the sandbox could not start)
  126                 CMD exists in the sandbox but cannot be executed
  127                 CMD is not in the sandbox
  128+N               the guest was killed by signal N (or sentry got signal N)
)";

// "256" (MiB), "256m", "1g", "512k".
bool ParseSize(const std::string& v, uint64_t* out) {
  if (v.empty()) return false;
  uint64_t unit = 1 << 20;
  std::string digits = v;
  switch (v.back()) {
    case 'k':
    case 'K':
      unit = 1 << 10;
      digits.pop_back();
      break;
    case 'm':
    case 'M':
      unit = 1 << 20;
      digits.pop_back();
      break;
    case 'g':
    case 'G':
      unit = 1 << 30;
      digits.pop_back();
      break;
    default:
      break;
  }
  uint64_t n;
  if (!absl::SimpleAtoi(digits, &n) || n == 0 || n > (1ull << 44) / unit) return false;
  *out = n * unit;
  return true;
}

int Usage(const std::string& problem) {
  std::fprintf(stderr, "sentry run: %s\n(see 'sentry run --help')\n", problem.c_str());
  return kExitSentryError;
}

// Parses the flags into *o; returns -1 to go on, else the exit code (after
// --help or a usage error). *limits_file gets --limits-file's value, *pool
// --pool's.
int ParseFlags(const std::vector<std::string>& args, RunOptions* out, std::string* limits_file,
               std::string* pool) {
  RunOptions& o = *out;
  std::string mode;
  std::string* network_mode = &mode;
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
    } else if (a == "--census") {
      if (!value(a, &v) || v.empty()) return Usage("--census needs a file to write the counts to");
      o.census_path = v;
    } else if (a == "--timings") {
      o.timings = true;
    } else if (a == "--allow-net") {
      net::AllowRule rule;
      std::string why;
      if (!value(a, &v) || !net::ParseAllowRule(v, &rule, &why)) {
        return Usage("--allow-net needs HOST[:PORT], e.g. api.example.com:443 (" + why + ")");
      }
      o.net.allow.push_back(rule);
    } else if (a == "--add-host") {
      size_t colon = value(a, &v) ? v.find(':') : std::string::npos;
      std::optional<net::IpAddr> ip;
      if (colon != std::string::npos) ip = net::IpAddr::Parse(v.substr(colon + 1));
      if (colon == std::string::npos || colon == 0 || !ip) {
        return Usage("--add-host needs NAME:IP, e.g. api.internal:203.0.113.7");
      }
      std::string name = absl::AsciiStrToLower(v.substr(0, colon));
      o.net.static_hosts[name] = *ip;
    } else if (a == "--secret") {
      net::SecretRule rule;
      std::string why;
      if (!value(a, &v) || !net::ParseSecretRule(v, &rule, &why)) {
        return Usage("--secret needs [http://]HOST[:PORT]=HEADER:env:VAR or ...:file:PATH (" + why +
                     ")");
      }
      o.net.secrets.push_back(rule);
    } else if (a == "--unsafe-allow-private-address") {
      o.net.allow_private = true;
    } else if (a == "--net-bytes") {
      if (!value(a, &v) || !ParseSize(v, &o.net_bytes)) {
        return Usage("--net-bytes needs a size, e.g. 10m");
      }
    } else if (a == "--network") {
      if (!value(a, &v) || (v != "none" && v != "allow")) {
        return Usage("--network needs none (the default) or allow (with --allow-net)");
      }
      *network_mode = v;
    } else if (a == "--no-cgroups") {
      o.cgroups = false;
    } else if (a == "--root") {
      o.root = true;
    } else if (a == "--no-namespaces") {
      o.namespaces = NamespaceMode::kOff;
    } else if (a == "--require-namespaces") {
      o.namespaces = NamespaceMode::kRequire;
    } else if (a == "--no-copy-script") {
      o.copy_script = false;
    } else if (a == "--copy") {
      if (!value(a, &v)) return Usage("--copy needs HOST:GUEST");
      size_t colon = v.rfind(':');
      if (colon == std::string::npos || colon == 0 || colon + 1 == v.size()) {
        return Usage("--copy needs HOST:GUEST, e.g. --copy data.csv:/home/sandbox/data.csv");
      }
      o.copies.emplace_back(v.substr(0, colon), v.substr(colon + 1));
    } else if (a == "--workdir") {
      if (!value(a, &v) || v.empty() || v[0] != '/') {
        return Usage("--workdir needs an absolute path in the sandbox, e.g. --workdir /work");
      }
      o.workdir = v;
    } else if (a == "--env") {
      if (!value(a, &v) || v.find('=') == std::string::npos || v[0] == '=') {
        return Usage("--env needs K=V");
      }
      o.env.push_back(v);
    } else if (a == "--json") {
      o.json = true;
    } else if (a == "--timeout") {
      if (!value(a, &v) || !absl::SimpleAtod(v, &o.timeout_sec) || o.timeout_sec < 0) {
        return Usage("--timeout needs a number of seconds (0 for none)");
      }
    } else if (a == "--disk") {
      if (!value(a, &v) || !ParseSize(v, &o.disk_bytes)) {
        return Usage("--disk needs a size, e.g. 512m or 2g");
      }
    } else if (a == "--memory") {
      if (!value(a, &v) || !ParseSize(v, &o.memory_bytes) || o.memory_bytes < (8 << 20)) {
        return Usage("--memory needs a size of at least 8m, e.g. 256m or 1g");
      }
    } else if (a == "--pids-limit") {
      if (!value(a, &v) || !absl::SimpleAtoi(v, &o.pids) || o.pids < 1) {
        return Usage("--pids-limit needs a positive number");
      }
    } else if (a == "--cpus") {
      if (!value(a, &v) || !absl::SimpleAtod(v, &o.cpus) || o.cpus <= 0 || o.cpus > 1024) {
        return Usage("--cpus needs a positive number, e.g. 0.5 or 2");
      }
    } else if (a == "--nofile") {
      if (!value(a, &v) || !absl::SimpleAtoi(v, &o.nofile) || o.nofile < 16 ||
          o.nofile > (1 << 20)) {
        return Usage("--nofile needs a number of open files (16 to 1048576)");
      }
    } else if (a == "--max-output") {
      if (!value(a, &v) || !absl::SimpleAtoi(v, &o.max_output) || o.max_output < 16) {
        return Usage("--max-output needs a number of bytes (at least 16)");
      }
    } else if (a == "--stdin") {
      if (!value(a, &v)) return Usage("--stdin needs a file (or - for sentry's own stdin)");
      o.stdin_path = v;
    } else if (a == "--log") {
      if (!value(a, &v) || v.empty()) return Usage("--log needs a file");
      o.log_path = v;
    } else if (a == "--pool") {
      if (!value(a, &v) || v.empty()) return Usage("--pool needs the socket of a `sentry pool`");
      *pool = v;
    } else if (a == "--limits-file") {
      if (!value(a, &v) || v.empty()) return Usage("--limits-file needs a JSON file");
      *limits_file = v;
    } else if (!a.empty() && a[0] == '-') {
      return Usage("unknown flag " + a);
    } else {
      break;  // the command starts here (a "--" is optional)
    }
  }
  o.argv.assign(args.begin() + static_cast<long>(i), args.end());
  if (o.argv.empty()) return Usage("no command given");
  if (o.namespaces == NamespaceMode::kOff && (!o.net.allow.empty() || !o.net.secrets.empty())) {
    return Usage("--no-namespaces leaves the sandbox no network: no --allow-net or --secret");
  }
  if (mode == "none" && !o.net.allow.empty()) {
    return Usage("--network none and --allow-net contradict each other");
  }
  if (mode == "allow" && o.net.allow.empty()) {
    return Usage("--network allow needs the hosts: --allow-net HOST[:PORT]");
  }
  return -1;
}

}  // namespace

int RunCommand(const std::vector<std::string>& args) {
  RunOptions o;
  std::string limits_file;
  const char* pool_env = getenv("SENTRY_POOL");
  std::string pool = pool_env ? pool_env : "";
  if (int rc = ParseFlags(args, &o, &limits_file, &pool); rc >= 0) return rc;
  if (!limits_file.empty()) {
    // The file sets the limits; flags given on the command line win over it,
    // wherever they stand, so the flags are parsed again on top of the file.
    o = RunOptions();
    if (std::string why = ApplyLimitsFile(limits_file, &o); !why.empty()) return Usage(why);
    if (int rc = ParseFlags(args, &o, &limits_file, &pool); rc >= 0) return rc;
  }
  std::string why;
  if (!pool.empty() && PoolCanServe(o, &why)) {
    if (std::optional<int> code = RunInPool(pool, o, &why)) return *code;
  }
  // On sentry's stderr (a --json result stays clean), like every notice.
  if (!pool.empty() && !why.empty()) {
    std::fprintf(stderr, "sentry: notice: a cold start (%s)\n", why.c_str());
  }
  return RunSandbox(o);
}

}  // namespace sentry::cli
