// sentry run's flags, as data: one line per flag in DefineFlags.
#include "sentry/cli/run_flags.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "sentry/cli/flag_set.h"
#include "sentry/cli/flag_values.h"
#include "sentry/run/copy_out.h"
#include "sentry/tools/host_tool.h"
#include "sentry/trace/trace_writer.h"

namespace sentry::cli {
namespace {

constexpr const char* kOutput = "Output";
constexpr const char* kLimits = "Limits (SIZE: 512m, 1.5g, 64MiB; a bare number is MiB)";
constexpr const char* kFiles = "Files and environment";
constexpr const char* kNetwork = "Network";
constexpr const char* kSandbox = "Sandbox";
constexpr const char* kDocker = "docker's flags that sentry run does not have";

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

std::string AddToolFlag(const std::string& v, std::vector<tools::HostTool>* into) {
  tools::HostTool tool;
  if (std::string why = tools::ParseToolFlag(v, &tool); !why.empty()) return why;
  return tools::AddTool(*into, std::move(tool));
}

struct Extra {
  std::string network;  // --network
  bool interactive = false;
  std::string refused;  // a docker flag sentry run does not have: what it says
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
  f.Switch("--merge-stderr", kOutput,
           "the guest's stderr into its stdout (2>&1): one stream in the order written, "
           "\"stdout\" of --json (streamed, the default where sentry's stdout and stderr are "
           "one file)",
           [&o] { o.merge_stderr = true; });
  f.Value("--stdin", kOutput, "FILE",
          "the guest's stdin (\"-\": sentry's own; default with --json: empty)",
          Text(&o.stdin_path, "needs a file (or - for sentry's own stdin)"));
  f.Switch("-i,--interactive", kOutput,
           "docker's -i: keep stdin open, the guest reads sentry's (--stdin -; with --json too)",
           [x, &o] {
             x->interactive = true;
             o.interactive = true;
           });
  f.Switch("-t,--tty", kOutput,
           "give the guest a terminal of its own on 0-2 (a pty that sentry relays, as docker "
           "run -t); by default it gets one where sentry's stdin, stdout or stderr is a terminal",
           [&o] { o.tty = TtyMode::kOn; });
  f.Switch("--no-tty", kOutput, "never: the guest's stdio are pipes that sentry relays",
           [&o] { o.tty = TtyMode::kOff; });
  f.Value("--log", kOutput, "FILE",
          "append one JSON line per run (argv, code, limits, result, the phases' wall "
          "times); a FILE sentry cannot write fails the run before it starts",
          Text(&o.log_path, "needs a file"));
  f.Switch("--trace", kOutput,
           "log the guest's syscalls to stderr as strace -f does: every trapped call (symbolic "
           "flags, decoded structs, errno names), execve, clone/fork/vfork, signals and each "
           "task's exit, with [pid N] (the guest's pids)",
           [&o] { o.trace = true; });
  f.Value("--trace-file", kOutput, "FILE",
          "the same into FILE (implies --trace; every line starts with the pid, as strace -f -o "
          "FILE)",
          [&o](const std::string& v) -> std::string {
            if (v.empty()) return "needs a file";
            o.trace = true;
            o.trace_file = v;
            return "";
          });
  f.Optional("--trace-timestamps", kOutput, "s|us|unix",
             "start each trace line with the time of day (us: with microseconds, the default, "
             "as strace -tt; s: -t; unix: seconds since the epoch, -ttt); implies --trace",
             "us", [&o](const std::string& v) -> std::string {
               if (v == "none" || !trace::ParseTimestamps(v)) return "takes s, us or unix";
               o.trace = true;
               o.trace_timestamps = v;
               return "";
             });
  f.Value("--census", kOutput, "FILE",
          "count every syscall the guest makes (native ones too, at a trap's cost each) and "
          "write the counts to FILE as JSON (format: docs/census.md)",
          Text(&o.census_path, "needs a file to write the counts to"));
  f.Value("--log-level", kOutput, "LEVEL",
          std::string(kLogLevelHelp) + "; the guest's output is never affected", LogLevel());
  f.Switch("--timings", kOutput,
           "print to stderr where the run's wall time went (set-up, the guest, teardown)",
           [&o] { o.timings = true; });

  // Limits.
  f.Value("--timeout", kLimits, "SECONDS",
          "kill the whole sandbox after this wall-clock time (default 30, none where the "
          "guest has a terminal: -t, or stdin a terminal; 0 for none; units ms, s, m, h)",
          [flags, parse = Duration(&o.timeout_sec)](const std::string& v) {
            flags->timeout_given = true;
            return parse(v);
          });
  f.Value("-m,--memory", kLimits, "SIZE",
          "memory cap for the whole sandbox (default 1g); at most the host's",
          Size(&o.memory_bytes, 1 << 20, 8 << 20, "needs a size of at least 8m, e.g. 256m or 1g"));
  f.Value("--pids-limit", kLimits, "N",
          "cap on the sandbox's processes and threads (default 128); fork fails with "
          "EAGAIN past it",
          Whole<uint64_t>(&o.pids, 1, 1 << 22, "needs a positive number"));
  f.Value("--cpus", kLimits, "N", "CPU quota, fractional (default: none); at most the host's CPUs",
          Cpus(&o.cpus));
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
          "confined beneath HOST, made as the guest's uid and gid (the host sees them as "
          "they are, as with docker); no sockets or FIFOs there. Without :rw the guest "
          "reads HOST as an unprivileged host user: files must be world-readable",
          [&o](const std::string& v) { return AddMount(v, &o.mounts); });
  f.Value("--copy", kFiles, "HOST:GUEST", "copy a host file or directory in before the run",
          [&o](const std::string& v) { return AddCopy(v, &o); });
  f.Value("--copy-out", kFiles, "GUEST:HOST_DIR",
          "after the run, write the guest's file, directory or pattern (out/*.csv; relative: "
          "from the guest's cwd) into HOST_DIR (made if missing) under its own name, as the "
          "caller; symlinks are skipped, never followed, on either side (repeatable)",
          [&o](const std::string& v) {
            CopyOutSpec spec;
            std::string why = ParseCopyOut(v, &spec);
            if (why.empty()) o.copy_out.push_back(std::move(spec));
            return why;
          });
  f.Value("--copy-out-max", kFiles, "SIZE",
          "the bytes --copy-out writes in all (default 1g): past it the copy stops, with an error",
          Size(&o.copy_out_max_bytes, 1 << 20, 1, "needs a size, e.g. 100m"));
  f.Value("--copy-out-max-files", kFiles, "N",
          "the files and directories --copy-out writes in all (default 10000)",
          Whole<size_t>(&o.copy_out_max_files, 1, 1 << 24, "needs a positive number"));
  f.Value("-e,--env", kFiles, "K=V|K",
          "add K=V to the guest's environment, or pass the caller's K (repeatable); "
          "nothing else of the host's environment enters",
          [&o](const std::string& v) { return AddEnv(v, &o.env); });
  f.Value("--tool", kFiles, "NAME=HOST_COMMAND",
          "let the guest call sentry_tools.NAME(**kwargs): HOST_COMMAND runs on the host "
          "(split into words, no shell) with the kwargs as JSON on stdin and answers one "
          "JSON value on stdout (repeatable; README \"Tools inside\")",
          [&o](const std::string& v) { return AddToolFlag(v, &o.tools); });
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
  f.Switch("--root", kFiles,
           "the guest is uid 0 inside the sandbox (no host privilege); its cwd stays "
           "/home/sandbox, so relative paths and -v recipes mean the same (HOME is /root)",
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
          "(repeatable). A loopback, private or link-local IP is refused here unless "
          "--unsafe-allow-private-address; a name that resolves to one is never let out",
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
  f.Value("--userns", kSandbox, "auto|range|single",
          "without root, the ids of the sandbox's user namespace: the caller's subordinate "
          "range from /etc/subuid and /etc/subgid through newuidmap (range), the caller's own "
          "uid and gid alone (single), or auto (the default: the range where the caller has "
          "one and newuidmap maps it, else single, said)",
          [&o](const std::string& v) { return ParseIdMode(v, &o.userns); });
  f.Switch("--no-cgroups", kSandbox,
           "make no cgroups: per-sandbox rlimits alone hold memory, processes and CPU time",
           [&o] { o.cgroups = false; });
  f.Switch("--no-landlock", kSandbox,
           "make no Landlock domain for the guest (the third wall; for measuring and debugging)",
           [&o] { o.landlock = false; });
  f.Switch("--no-fast-fd-identity", kSandbox,
           "identify every directory and system-file fd by a copy of it (pidfd_getfd + fstat), "
           "not by one "
           "kcmp against a reference the sentry keeps (for measuring and debugging)",
           [&o] { o.fast_fd_identity = false; });
  f.Switch("--no-fast-trap", kSandbox,
           "check guest memory after every read of a stat-like call or a read-only open, "
           "and read the CPU clock after every call, as before the trap was trimmed (for "
           "measuring)",
           [&o] { o.fast_trap = false; });
  f.Switch("--fast-metadata", kSandbox,
           "the default: publish the system directories' metadata and listings to a "
           "preload library in the guest (/etc/ld.so.preload), which answers stat, access, "
           "readlink and readdir there, and fstat and fstatat of directory fds (and fstat "
           "of the system files it opened), without a "
           "trap (never for an OCI bundle's rootfs)",
           [&o] { o.fast_metadata = true; });
  f.Switch("--no-fast-metadata", kSandbox,
           "no preload library: every stat, access, readlink and getdents64 traps (for a "
           "guest that must see the host's own /etc/ld.so.preload, or for measuring)",
           [&o] { o.fast_metadata = false; });
  f.Switch("--no-fast-listings", kSandbox,
           "publish no directory listings: the guest's opendir and "
           "readdir trap as without it (for measuring)",
           [&o] { o.fast_listings = false; });
  f.Switch("--no-fast-negatives", kSandbox,
           "publish no negative answers from listings: a name absent from a listed "
           "directory traps (for measuring)",
           [&o] { o.fast_negatives = false; });
  f.Switch("--no-fast-dir-streams", kSandbox,
           "the guest's opendir of a directory whose listing is not published "
           "gets glibc's stream (an fstat, and a getdents64 more at the end) "
           "(for measuring)",
           [&o] { o.fast_dir_streams = false; });
  f.Switch("--no-listing-ahead", kSandbox,
           "read no host listing ahead on another CPU: each lower directory's "
           "listing is read when the guest first needs it (for measuring)",
           [&o] { o.listing_ahead = false; });
  f.Switch("--no-fast-upper", kSandbox,
           "publish nothing of the upper layer (/tmp's directories and symlinks, "
           "their listings): every stat of them and every listing traps (for measuring)",
           [&o] { o.fast_upper = false; });
  f.Switch("--no-fast-fd-records", kSandbox,
           "the guest's library keeps no record of the system files it opened: "
           "every fstat of a regular file's fd traps (for measuring)",
           [&o] { o.fast_fd_records = false; });
  f.Switch("--no-fast-upper-files", kSandbox,
           "publish no upper regular file (/tmp's files): every stat of one and "
           "every fstat of its fd traps (for measuring)",
           [&o] { o.fast_upper_files = false; });
  f.Value("--pool", kSandbox, "SOCKET",
          "run in a sandbox made ahead by `sentry pool` (also SENTRY_POOL=SOCKET); where "
          "none can serve the run, it starts cold, with a notice",
          Text(&flags->pool, "needs the socket of a `sentry pool`"));
  f.Switch("--rm", kSandbox, "accepted for docker's habit: every sandbox is removed", [] {});

  // docker's habits that would mislead here: each says what sentry does.
  f.Switch("-d,--detach", kDocker,
           "refused: sentry run has no detached mode; it runs CMD to its end (use the shell's &, "
           "or sentry as an OCI runtime under podman run -d)",
           [x] {
             x->refused =
                 "-d: sentry run has no detached mode: it runs CMD and waits for it (put it in "
                 "the background with the shell's &, or use sentry as an OCI runtime: podman "
                 "--runtime sentry run -d)";
           });
  f.Value("-u,--user", kDocker, "UID[:GID]",
          "only 0 (as --root: uid 0 inside, no host privilege) or 1000, the default guest",
          [&o](const std::string& v) -> std::string {
            if (v == "0" || v == "0:0" || v == "root" || v == "root:root") {
              o.root = true;
            } else if (v != "1000" && v != "1000:1000") {
              return "the guest is uid 1000 (the default) or, with --root, uid 0 inside the "
                     "sandbox; sentry run offers no other uid";
            }
            return "";
          });
  f.Value("-p,--publish", kDocker, "PORT",
          "refused: no port is published; the guest's network is a loopback of its own",
          [](const std::string&) -> std::string {
            return "sentry publishes no port: the guest's network is a loopback of its own that "
                   "the host cannot reach; run the server and its client in one sandbox (sh -c "
                   "'server & client'), and --allow-net HOST:PORT for connections out";
          });
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

bool WantsJson(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--") break;
    if (a == "--json" || a.rfind("--json=", 0) == 0) return a != "--json=false" && a != "--json=0";
  }
  return false;
}

namespace {

// only: the flags to declare (FlagSet::Only), or nullopt for every one.
FlagsOutcome ParseDeclaring(const std::vector<std::string>& args, RunFlags* flags,
                            std::optional<std::set<std::string>> only) {
  CLI::App app(kDescription, "sentry run");
  app.prefix_command();  // the command's own flags are its own
  app.footer(kFooter);
  app.set_help_flag("-h,--help", "this text");
  Extra extra;
  FlagSet f(app);
  if (only) f.Only(std::move(*only));
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
    return {FlagsOutcome::Kind::kHelp,
            Help(app, {kOutput, kLimits, kFiles, kNetwork, kSandbox, kDocker})};
  } catch (const CLI::ParseError& e) {
    return {FlagsOutcome::Kind::kError, e.what()};
  }
  if (!extra.refused.empty()) return {FlagsOutcome::Kind::kError, extra.refused};
  RunOptions& o = flags->options;
  std::vector<std::string> rest = app.remaining();
  if (!rest.empty() && rest[0] == "--") {
    rest.erase(rest.begin());
  } else if (!rest.empty() && !rest[0].empty() && rest[0][0] == '-') {
    return {FlagsOutcome::Kind::kError, UnknownFlag(rest[0], app)};
  }
  if (rest.empty()) return {FlagsOutcome::Kind::kError, "no command given"};
  o.argv = std::move(rest);
  if (extra.interactive && o.stdin_path.empty()) o.stdin_path = "-";
  if (std::string why = CheckCombination(o, extra); !why.empty()) {
    return {FlagsOutcome::Kind::kError, why};
  }
  return {};
}

}  // namespace

// With only the flags the command line names declared: every one it uses is
// (FlagSet::NamesIn is a superset), in the same order, so a parse that runs
// sets what the full one would. Help and errors (an unknown flag's "did you
// mean", a bad value) come from a parse with every flag, on the flags as
// they came in.
FlagsOutcome ParseRunFlags(const std::vector<std::string>& args, RunFlags* flags) {
  RunFlags given = *flags;
  FlagsOutcome out = ParseDeclaring(args, flags, FlagSet::NamesIn(args));
  if (out.kind == FlagsOutcome::Kind::kRun) return out;
  *flags = std::move(given);
  return ParseDeclaring(args, flags, std::nullopt);
}

}  // namespace sentry::cli
