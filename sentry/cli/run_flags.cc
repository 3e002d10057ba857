// sentry run's flags, as data: one line per flag in DefineFlags.
#include "sentry/cli/run_flags.h"

#include <sched.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace sentry::cli {
namespace {

constexpr const char* kOutput = "Output";
constexpr const char* kLimits = "Limits (SIZE: 512m, 1.5g, 64MiB; a bare number is MiB)";
constexpr const char* kFiles = "Files and environment";
constexpr const char* kNetwork = "Network";
constexpr const char* kSandbox = "Sandbox";

constexpr const char* kDescription = R"(usage: sentry run [FLAGS] -- CMD [ARGS...]

Runs CMD in a fresh sandbox. The guest sees the host's /usr, /bin, /sbin and
/lib read-only, the /etc files programs need, an empty in-memory /tmp and a
home directory /home/sandbox (its cwd). Everything it writes stays in memory
and is gone when the run ends (-v HOST:GUEST:rw aside). Its environment is
clean (PATH, HOME, LANG, LC_ALL, TERM if stdout is a terminal, and -e).

The script argument (the first after CMD that does not start with '-') is
copied to the same relative path under the guest's cwd, and only if it is a
relative path below the current directory (no '..', no symlink on the way), a
regular file of at most 4 MiB that the caller's real uid may read, and a
script (a suffix such as .py .sh .js .rb .pl .R, or a '#!' first line).
Anything else that names a host file, and any later argument with a script
suffix, is not copied: one line on stderr says why. --copy HOST:GUEST copies
any file or directory the caller names.

A flag takes its value as --timeout 5 or --timeout=5.)";

constexpr const char* kFooter = R"(Exit codes:
  0-123               the guest's own exit code
  124                 --timeout ended the run
  125                 sentry's own error (bad flags, the sandbox could not start);
                      with --json, the result object's "error" says which
  126                 CMD exists in the sandbox but cannot be executed
  127                 CMD is not in the sandbox
  128+N               the guest was killed by signal N (or sentry got signal N)
)";

// A flag's check: "" when the value is taken, else what it needs.
using Parse = std::function<std::string(const std::string&)>;

// Declares flags on a CLI11 app: each flag is one call.
class FlagSet final {
 public:
  explicit FlagSet(CLI::App& app) : app_(app) {}

  // A flag with a value. Repeatable: each occurrence is checked in turn (a
  // single-valued flag given twice keeps the last, as docker does).
  CLI::Option* Value(const std::string& names, const char* group, const char* type,
                     const std::string& help, Parse parse) {
    std::string shown = names.substr(names.rfind(',') + 1);
    auto each = [shown, parse](const std::vector<std::string>& values) {
      for (const std::string& v : values) {
        if (std::string why = parse(v); !why.empty()) {
          throw CLI::ValidationError(absl::StrCat(shown, " ", v.empty() ? "\"\"" : v, ": ", why));
        }
      }
    };
    return app_.add_option_function<std::vector<std::string>>(names, each, help)
        ->type_name(type)
        ->group(group)
        ->allow_extra_args(false)
        ->take_all();
  }
  // A flag without a value.
  CLI::Option* Switch(const std::string& names, const char* group, const std::string& help,
                      std::function<void()> set) {
    return app_.add_flag_callback(names, std::move(set), help)->group(group);
  }

 private:
  CLI::App& app_;
};

Parse Text(std::string* out, const char* need) {
  return [out, need](const std::string& v) -> std::string {
    if (v.empty()) return need;
    *out = v;
    return "";
  };
}

template <typename T>
Parse Whole(T* out, T lo, T hi, const char* need) {
  return [=](const std::string& v) -> std::string {
    T n;
    if (!absl::SimpleAtoi(v, &n) || n < lo || n > hi) return need;
    *out = n;
    return "";
  };
}

Parse Size(uint64_t* out, uint64_t bare_unit, uint64_t min, const char* need) {
  return [=](const std::string& v) -> std::string {
    std::string why;
    uint64_t n;
    if (!ParseSize(v, bare_unit, &n, &why)) return why.empty() ? need : why;
    if (n < min) return need;
    *out = n;
    return "";
  };
}

// -e K=V adds a variable; -e K passes the caller's K through if it is set
// (and nothing if not), as docker does. The rest of the host's environment
// never enters.
std::string AddEnv(const std::string& v, std::vector<std::string>* env) {
  size_t eq = v.find('=');
  std::string key = v.substr(0, eq);
  if (key.empty()) return "needs K=V, or K to pass the caller's K through";
  if (key.find_first_of(" \t") != std::string::npos) return "a variable's name has no blanks";
  if (eq != std::string::npos) {
    env->push_back(v);
  } else if (const char* host = getenv(key.c_str())) {
    env->push_back(absl::StrCat(key, "=", host));
  }
  return "";
}

// docker's --env-file: one K=V or K a line; blank lines and # comments
// skipped; no quoting (a value is everything after the first '=').
std::string AddEnvFile(const std::string& path, std::vector<std::string>* env) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::StrCat("cannot read it: ", std::strerror(errno));
  constexpr size_t kMax = 1 << 20;
  std::string text(kMax + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMax) return "larger than 1 MiB";
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    absl::string_view trimmed = absl::StripLeadingAsciiWhitespace(line);
    if (trimmed.empty() || trimmed[0] == '#') continue;
    if (std::string why = AddEnv(std::string(trimmed), env); !why.empty()) {
      return absl::StrCat("line ", line_no, ": ", why);
    }
  }
  return "";
}

// -v HOST:GUEST[:ro|:rw]. HOST is an existing host directory (absolute or
// ./relative, resolved now); GUEST an absolute sandbox path outside /proc
// and /dev.
std::string AddMount(const std::string& v, std::vector<BindMount>* mounts) {
  std::vector<std::string> parts = absl::StrSplit(v, ':');
  if (parts.size() < 2 || parts.size() > 3 || parts[0].empty() || parts[1].empty()) {
    return "needs HOST:GUEST, HOST:GUEST:ro or HOST:GUEST:rw";
  }
  BindMount m;
  if (parts.size() == 3) {
    if (parts[2] == "ro") {
      m.mode = BindMount::Mode::kReadOnly;
    } else if (parts[2] == "rw") {
      m.mode = BindMount::Mode::kReadWrite;
    } else {
      return absl::StrCat("sentry knows the modes ro and rw, not \"", parts[2], "\"");
    }
  }
  const std::string& host = parts[0];
  if (host[0] != '/' && host[0] != '.') {
    return "sentry has no named volumes: HOST is a directory path (absolute, or ./relative)";
  }
  char real[PATH_MAX];
  if (!realpath(host.c_str(), real)) {
    return absl::StrCat(host, ": ", std::strerror(errno),
                        " (sentry does not make a missing HOST, docker -v would)");
  }
  struct stat st;
  if (stat(real, &st) < 0 || !S_ISDIR(st.st_mode)) {
    return "HOST must be a directory; --copy HOST:GUEST copies a single file in";
  }
  m.host_path = real;
  const std::string& guest = parts[1];
  if (guest[0] != '/') return "GUEST must be an absolute path in the sandbox";
  std::vector<std::string> comps = absl::StrSplit(guest, '/', absl::SkipEmpty());
  if (comps.empty()) return "GUEST cannot be /";
  for (const std::string& c : comps) {
    if (c == "." || c == "..") return "GUEST must not hold . or ..";
  }
  if (comps[0] == "proc" || comps[0] == "dev") return "GUEST cannot be under /proc or /dev";
  m.guest_path = "/" + absl::StrJoin(comps, "/");
  for (const BindMount& other : *mounts) {
    if (other.guest_path == m.guest_path) return "GUEST is mounted twice";
  }
  mounts->push_back(std::move(m));
  return "";
}

std::string AddCopy(const std::string& v, RunOptions* o) {
  size_t colon = v.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == v.size()) {
    return "needs HOST:GUEST, e.g. --copy data.csv:/home/sandbox/data.csv";
  }
  o->copies.emplace_back(v.substr(0, colon), v.substr(colon + 1));
  return "";
}

std::string AddHost(const std::string& v, RunOptions* o) {
  size_t colon = v.find(':');
  std::optional<net::IpAddr> ip;
  if (colon != std::string::npos) ip = net::IpAddr::Parse(v.substr(colon + 1));
  if (colon == std::string::npos || colon == 0 || !ip) {
    return "needs NAME:IP, e.g. api.internal:203.0.113.7";
  }
  o->net.static_hosts[absl::AsciiStrToLower(v.substr(0, colon))] = *ip;
  return "";
}

struct Extra {
  std::string network;  // --network
  bool interactive = false;
};

void DefineFlags(FlagSet& f, RunFlags* flags, Extra* x) {
  RunOptions& o = flags->options;
  // Output.
  f.Switch("--json", kOutput,
           "print one JSON result object (stdout, stderr, exitCode, timedOut, limit, "
           "usage...) instead of streaming the output; errors too",
           [&o] { o.json = true; });
  f.Value("--max-output", kOutput, "BYTES",
          "with --json, keep this much of each stream (default 65536): its first and "
          "last halves, with a count of what was dropped",
          Size(&o.max_output, 1, 16, "needs a number of bytes (at least 16)"));
  f.Value("--stdin", kOutput, "FILE",
          "the guest's stdin (\"-\": sentry's own; default with --json: empty)",
          Text(&o.stdin_path, "needs a file (or - for sentry's own stdin)"));
  f.Switch("-i,--interactive", kOutput, "docker's -i: the guest reads sentry's stdin (--stdin -)",
           [x] { x->interactive = true; });
  f.Switch("-t,--tty", kOutput,
           "accepted for docker's habit: a terminal on sentry's stdio is the guest's", [] {});
  f.Value("--log", kOutput, "FILE",
          "append one JSON line per run (argv, code, limits, result, the phases' wall "
          "times); a FILE sentry cannot write fails the run before it starts",
          Text(&o.log_path, "needs a file"));
  f.Switch("--trace", kOutput, "log every trapped syscall to stderr, strace-style",
           [&o] { o.trace = true; });
  f.Switch("--timings", kOutput,
           "print to stderr where the run's wall time went (set-up, the guest, teardown)",
           [&o] { o.timings = true; });

  // Limits.
  f.Value("--timeout", kLimits, "SECONDS",
          "kill the whole sandbox after this wall-clock time (default 30; 0 for none; "
          "units ms, s, m, h)",
          [&o](const std::string& v) -> std::string {
            if (!ParseDuration(v, &o.timeout_sec)) return "needs a number of seconds (0 for none)";
            return "";
          });
  f.Value("-m,--memory", kLimits, "SIZE",
          "memory cap for the whole sandbox (default 1g); at most the host's",
          Size(&o.memory_bytes, 1 << 20, 8 << 20, "needs a size of at least 8m, e.g. 256m or 1g"));
  f.Value("--pids-limit", kLimits, "N",
          "cap on the sandbox's processes and threads (default 128); fork fails with "
          "EAGAIN past it",
          Whole<uint64_t>(&o.pids, 1, 1 << 22, "needs a positive number"));
  f.Value("--cpus", kLimits, "N", "CPU quota, fractional (default: none); at most the host's CPUs",
          [&o](const std::string& v) -> std::string {
            double n;
            if (!absl::SimpleAtod(v, &n) || !std::isfinite(n) || n <= 0) {
              return "needs a positive number, e.g. 0.5 or 2";
            }
            o.cpus = n;
            return "";
          });
  f.Value("--nofile", kLimits, "N", "open files per process (default 1024): EMFILE past it",
          Whole<uint64_t>(&o.nofile, 16, 1 << 20, "needs a number of open files (16 to 1048576)"));
  f.Value("--disk", kLimits, "SIZE",
          "cap on what the guest may store in memory (default 512m): ENOSPC past it",
          Size(&o.disk_bytes, 1 << 20, 1, "needs a size, e.g. 512m or 2g"));
  f.Value("--net-bytes", kLimits, "SIZE",
          "cap on the bytes that cross the sandbox's edge; past it every connection out is cut",
          Size(&o.net_bytes, 1 << 20, 1, "needs a size, e.g. 10m"));
  f.Value("--limits-file", kLimits, "FILE",
          "limits as JSON: {\"timeoutMs\": 5000, \"memoryMb\": 256, \"maxProcesses\": 64, "
          "\"cpus\": 1, \"diskMb\": 100, \"maxOutputBytes\": 65536, \"nofile\": 256, "
          "\"network\": \"none\"}; flags on the command line win over the file",
          Text(&flags->limits_file, "needs a JSON file"));

  // Files and environment.
  f.Value("-v,--volume", kFiles, "HOST:GUEST[:ro|:rw]",
          "show the host directory HOST at GUEST. No suffix: the guest may write, but "
          "its writes stay in memory and the host is unchanged (docker's default writes "
          "through: use :rw for that). :ro read-only (EROFS). :rw writes reach the host, "
          "confined beneath HOST (new files are owned by root on the host, as the sentry "
          "writes them). The guest reads HOST as an unprivileged host user: files must "
          "be world-readable",
          [&o](const std::string& v) { return AddMount(v, &o.mounts); });
  f.Value("--copy", kFiles, "HOST:GUEST", "copy a host file or directory in before the run",
          [&o](const std::string& v) { return AddCopy(v, &o); });
  f.Value("-e,--env", kFiles, "K=V|K",
          "add K=V to the guest's environment, or pass the caller's K (repeatable); "
          "nothing else of the host's environment enters",
          [&o](const std::string& v) { return AddEnv(v, &o.env); });
  f.Value("--env-file", kFiles, "FILE", "docker's env file: one K=V or K a line, # comments",
          [&o](const std::string& v) { return AddEnvFile(v, &o.env); });
  f.Value("-w,--workdir", kFiles, "DIR",
          "the guest's working directory (made if missing, owned by the guest); the script "
          "argument is copied there",
          [&o](const std::string& v) -> std::string {
            if (v.empty() || v[0] != '/') return "needs an absolute path in the sandbox";
            o.workdir = v;
            return "";
          });
  f.Switch("--no-copy-script", kFiles, "do not copy the script argument in (nor say why not)",
           [&o] { o.copy_script = false; });
  f.Switch("--root", kFiles, "the guest is uid 0 inside the sandbox (no host privilege)",
           [&o] { o.root = true; });

  // Network.
  f.Value("--network", kNetwork, "MODE",
          "none (the default: loopback only) or allow (with --allow-net)",
          [x](const std::string& v) -> std::string {
            if (v != "none" && v != "allow") {
              return "sentry knows none (the default) and allow (with --allow-net); it has no "
                     "host or bridge network";
            }
            x->network = v;
            return "";
          });
  f.Value("--allow-net", kNetwork, "HOST[:PORT]",
          "let connections out to HOST (a name, *.domain, or an IP), on PORT or any "
          "(repeatable); never to loopback, private or link-local addresses",
          [&o](const std::string& v) -> std::string {
            net::AllowRule rule;
            std::string why;
            if (!net::ParseAllowRule(v, &rule, &why)) {
              return "needs HOST[:PORT], e.g. api.example.com:443 (" + why + ")";
            }
            o.net.allow.push_back(rule);
            return "";
          });
  f.Value("--add-host", kNetwork, "NAME:IP",
          "resolve NAME to IP for the allowlist (not a way around it)",
          [&o](const std::string& v) { return AddHost(v, &o); });
  f.Value("--secret", kNetwork, "[http://]HOST[:PORT]=HEADER:SOURCE",
          "the guest's plain-HTTP requests to HOST go through sentry's proxy, which adds "
          "\"HEADER: value\" and speaks TLS to HOST unless http:// is given; SOURCE is "
          "env:VAR or file:PATH, read by sentry, never in the sandbox",
          [&o](const std::string& v) -> std::string {
            net::SecretRule rule;
            std::string why;
            if (!net::ParseSecretRule(v, &rule, &why)) {
              return "needs [http://]HOST[:PORT]=HEADER:env:VAR or ...:file:PATH (" + why + ")";
            }
            o.net.secrets.push_back(rule);
            return "";
          });
  f.Switch("--unsafe-allow-private-address", kNetwork,
           "let allowlisted IP literals and --add-host entries be private or loopback "
           "addresses (for tests; never in production)",
           [&o] { o.net.allow_private = true; });

  // Sandbox.
  f.Switch("--no-namespaces", kSandbox,
           "make no namespaces: the seccomp wall alone (the guest runs as a host uid of "
           "its own, sees host pids, has no network)",
           [&o] { o.namespaces = NamespaceMode::kOff; });
  f.Switch("--require-namespaces", kSandbox, "fail (exit 125) rather than run without namespaces",
           [&o] { o.namespaces = NamespaceMode::kRequire; });
  f.Switch("--no-cgroups", kSandbox,
           "make no cgroups: per-sandbox rlimits alone hold memory, processes and CPU time",
           [&o] { o.cgroups = false; });
  f.Value("--pool", kSandbox, "SOCKET",
          "run in a sandbox made ahead by `sentry pool` (also SENTRY_POOL=SOCKET); where "
          "none can serve the run, it starts cold, with a notice",
          Text(&flags->pool, "needs the socket of a `sentry pool`"));
  f.Switch("--rm", kSandbox, "accepted for docker's habit: every sandbox is removed", [] {});
}

// The help text: the description, each group's flags with their help
// wrapped beside them, the exit codes.
std::string Help(const CLI::App& app) {
  constexpr size_t kColumn = 24, kWidth = 80;
  std::string out = absl::StrCat(app.get_description(), "\n");
  for (const char* group : {kOutput, kLimits, kFiles, kNetwork, kSandbox}) {
    absl::StrAppend(&out, "\n", group, ":\n");
    for (const CLI::Option* opt : app.get_options()) {
      if (opt->get_group() != group) continue;
      std::string names = absl::StrCat("  ", opt->get_name(false, true));
      if (!opt->get_type_name().empty() && opt->get_type_name() != "FLAG") {
        absl::StrAppend(&names, " ", opt->get_type_name());
      }
      std::string line = names;
      if (line.size() + 2 > kColumn) {
        absl::StrAppend(&out, line, "\n");
        line.clear();
      }
      line.resize(kColumn, ' ');
      for (absl::string_view word : absl::StrSplit(opt->get_description(), ' ')) {
        if (line.size() > kColumn && line.size() + 1 + word.size() > kWidth) {
          absl::StrAppend(&out, line, "\n");
          line = std::string(kColumn, ' ');
        }
        absl::StrAppend(&line, line.size() > kColumn ? " " : "", word);
      }
      absl::StrAppend(&out, line, "\n");
    }
  }
  absl::StrAppend(&out, "\n  -h, --help", std::string(kColumn - 12, ' '), "this text\n\n",
                  app.get_footer());
  return out;
}

// What no single flag can say: flags that contradict each other.
std::string CheckCombination(const RunOptions& o, const Extra& x) {
  if (o.namespaces == NamespaceMode::kOff && (!o.net.allow.empty() || !o.net.secrets.empty())) {
    return "--no-namespaces leaves the sandbox no network: no --allow-net or --secret";
  }
  if (x.network == "none" && !o.net.allow.empty()) {
    return "--network none and --allow-net contradict each other";
  }
  if (x.network == "allow" && o.net.allow.empty()) {
    return "--network allow needs the hosts: --allow-net HOST[:PORT]";
  }
  return "";
}

}  // namespace

bool ParseSize(const std::string& text, uint64_t bare_unit, uint64_t* out, std::string* why) {
  std::string s = absl::AsciiStrToLower(text);
  size_t end = s.find_first_not_of("0123456789.");
  std::string number = s.substr(0, end);
  std::string unit = end == std::string::npos ? "" : s.substr(end);
  double n;
  if (number.empty() || !absl::SimpleAtod(number, &n) || !std::isfinite(n) || n < 0) return false;
  static const std::pair<const char*, int> kUnits[] = {
      {"b", 0}, {"k", 10}, {"m", 20}, {"g", 30}, {"t", 40}};
  double bytes;
  if (unit.empty()) {
    if (bare_unit == 0) {
      *why = "needs a unit: docker reads a bare number as bytes, sentry as MiB (512m, 2g)";
      return false;
    }
    bytes = n * static_cast<double>(bare_unit);
  } else {
    int shift = -1;
    for (const auto& [name, s] : kUnits) {
      // "k", "kb", "kib" (and "b" alone) all name the same binary unit.
      if (unit == name ||
          (unit[0] == name[0] && s > 0 && (unit.substr(1) == "b" || unit.substr(1) == "ib"))) {
        shift = s;
      }
    }
    if (shift < 0) return false;
    bytes = std::ldexp(n, shift);
  }
  if (bytes < 1 || bytes > std::ldexp(1, 50)) return false;
  *out = static_cast<uint64_t>(bytes);
  return true;
}

bool ParseDuration(const std::string& text, double* seconds) {
  std::string s = absl::AsciiStrToLower(text);
  double scale = 1;
  for (const auto& [suffix, factor] : std::initializer_list<std::pair<const char*, double>>{
           {"ms", 0.001}, {"s", 1}, {"m", 60}, {"h", 3600}}) {
    std::string sfx = suffix;
    if (s.size() > sfx.size() && s.compare(s.size() - sfx.size(), sfx.size(), sfx) == 0 &&
        std::isdigit(static_cast<unsigned char>(s[s.size() - sfx.size() - 1]))) {
      scale = factor;
      s.resize(s.size() - sfx.size());
      break;
    }
  }
  double n;
  if (!absl::SimpleAtod(s, &n) || !std::isfinite(n) || n < 0 || n * scale > 1e9) return false;
  *seconds = n * scale;
  return true;
}

bool WantsJson(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--") break;
    if (a == "--json" || a.rfind("--json=", 0) == 0) return a != "--json=false" && a != "--json=0";
  }
  return false;
}

std::string CheckAgainstHost(const RunOptions& o) {
  cpu_set_t set;
  if (o.cpus > 0 && sched_getaffinity(0, sizeof(set), &set) == 0 && o.cpus > CPU_COUNT(&set)) {
    return absl::StrFormat("--cpus %g: this host gives sentry %d CPUs; ask for at most that",
                           o.cpus, CPU_COUNT(&set));
  }
  struct sysinfo si;
  RunOptions defaults;
  if (o.memory_bytes != defaults.memory_bytes && sysinfo(&si) == 0) {
    uint64_t total = static_cast<uint64_t>(si.totalram) * si.mem_unit;
    if (o.memory_bytes > total) {
      return absl::StrFormat("--memory %.1fg: this host has %.1fg of memory; ask for at most that",
                             std::ldexp(static_cast<double>(o.memory_bytes), -30),
                             std::ldexp(static_cast<double>(total), -30));
    }
  }
  return "";
}

FlagsOutcome ParseRunFlags(const std::vector<std::string>& args, RunFlags* flags) {
  CLI::App app(kDescription, "sentry run");
  app.prefix_command();  // the command's own flags are its own
  app.footer(kFooter);
  app.set_help_flag("-h,--help", "this text");
  Extra extra;
  FlagSet f(app);
  DefineFlags(f, flags, &extra);
  // docker's -m takes a unit: a bare number means bytes there, MiB here.
  std::vector<std::string> argv(args.rbegin(), args.rend());
  for (size_t i = argv.size(); i-- > 0;) {
    const std::string& a = argv[i];
    if (a == "--") break;
    std::string value = a == "-m" && i > 0 ? argv[i - 1] : a.rfind("-m", 0) == 0 ? a.substr(2) : "";
    if (!value.empty() && value.find_first_not_of("0123456789.") == std::string::npos) {
      return {FlagsOutcome::Kind::kError,
              absl::StrCat("-m ", value,
                           ": needs a unit: docker reads a bare number as bytes, sentry's "
                           "--memory as MiB (512m, 2g)")};
    }
  }
  try {
    app.parse(argv);
  } catch (const CLI::CallForHelp&) {
    return {FlagsOutcome::Kind::kHelp, Help(app)};
  } catch (const CLI::ParseError& e) {
    return {FlagsOutcome::Kind::kError, e.what()};
  }
  RunOptions& o = flags->options;
  std::vector<std::string> rest = app.remaining();
  if (!rest.empty() && rest[0] == "--") {
    rest.erase(rest.begin());
  } else if (!rest.empty() && !rest[0].empty() && rest[0][0] == '-') {
    return {FlagsOutcome::Kind::kError, "unknown flag " + rest[0]};
  }
  if (rest.empty()) return {FlagsOutcome::Kind::kError, "no command given"};
  o.argv = std::move(rest);
  if (extra.interactive && o.stdin_path.empty()) o.stdin_path = "-";
  if (std::string why = CheckCombination(o, extra); !why.empty()) {
    return {FlagsOutcome::Kind::kError, why};
  }
  return {};
}

}  // namespace sentry::cli
