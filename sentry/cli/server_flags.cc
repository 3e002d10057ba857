// sentry serve's and sentry mcp's shared flags, as data: one call per flag.
#include "sentry/cli/server_flags.h"

#include <CLI/CLI.hpp>
#include <optional>

#include "absl/strings/str_cat.h"
#include "sentry/cli/flag_values.h"
#include "sentry/cli/limits_file.h"
#include "sentry/run/run.h"
#include "sentry/tools/host_tool.h"

namespace sentry::cli {
namespace {

constexpr const char* kServer = "Server";
constexpr const char* kLimits = "Limits of each run (a request may only lower them)";
constexpr const char* kNetwork = "Network (a request may name a subset)";
constexpr const char* kSandbox = "Sandbox";
constexpr const char* kWarm = "Warm interpreters (python runs without a network)";
constexpr const char* kSessions = "Sessions (POST /v1/sessions)";

// The flags the command line alone says.
struct Extra {
  std::string limits_file;  // --limits-file
  std::string network;      // --network
};

void DefineServerFlags(FlagSet& f, agent::ServerFlags* server, agent::WarmFlags* warm, Extra* x) {
  RunOptions& o = server->policy.base;
  agent::ServerPolicy& p = server->policy;
  // Server.
  f.Value("--log", kServer, "FILE", "append one JSON line per run (argv, code, limits, result)",
          Text(&server->log_path, "needs a file"));
  f.Value("--max-concurrent", kServer, "N", "runs at once (default 4)",
          Whole(&server->max_concurrent, 1, 1024, "needs 1 to 1024"));
  f.Value("--max-queue", kServer, "N",
          "requests that wait for a run slot (default 16; past it, busy)",
          Whole(&server->max_queue, 0, 65536, "needs 0 to 65536"));
  f.Value("--max-request-bytes", kServer, "SIZE", "largest request (default 8m)",
          Size(&p.max_request_bytes, 1 << 20, 1, 1ull << 30, "needs a size up to 1g"));
  f.Value("--return-file-max", kServer, "SIZE",
          "bytes returned of each returnFiles entry (default 1m)",
          Size(&p.return_file_max, 1 << 20, 1, 64 << 20, "needs a size up to 64m"));
  f.Value("--result-memory", kServer, "SIZE",
          "results (returnFiles, output) held at once, each run counted at its largest "
          "(default 256m); a run waits for room, one larger alone is refused",
          Size(&server->result_memory, 1 << 20, 1 << 20, "needs a size of at least 1m"));
  f.Value("--log-level", kServer, "LEVEL", kLogLevelHelp, LogLevel());

  // Limits.
  f.Value("--timeout", kLimits, "SECONDS",
          "each run's wall-clock cap (default 30; 0 for none; units ms, s, m, h)",
          Duration(&o.timeout_sec));
  f.Value("--memory", kLimits, "SIZE", "memory per run (default 1g); at most the host's",
          Size(&o.memory_bytes, 1 << 20, 8 << 20, "needs a size of at least 8m, e.g. 256m or 1g"));
  f.Value("--pids-limit", kLimits, "N", "processes and threads per run (default 128)",
          Whole<uint64_t>(&o.pids, 1, 1 << 22, "needs a positive number"));
  f.Value("--cpus", kLimits, "N",
          "CPU quota per run, fractional (default: none); at most the "
          "host's CPUs",
          Cpus(&o.cpus));
  f.Value("--disk", kLimits, "SIZE", "in-memory files per run (default 512m)",
          Size(&o.disk_bytes, 1 << 20, 1, "needs a size, e.g. 512m or 2g"));
  f.Value("--max-output", kLimits, "BYTES",
          "stdout and stderr kept per stream (default 65536; units as SIZE)",
          Size(&o.max_output, 1, 16, "needs a number of bytes (at least 16)"));
  f.Value("--nofile", kLimits, "N", "open files per process (default 1024)",
          Whole<uint64_t>(&o.nofile, 16, 1 << 20, "needs a number of open files (16 to 1048576)"));
  f.Value("--limits-file", kLimits, "FILE",
          "the limits as JSON (see `sentry run --help`); flags win over the file",
          Text(&x->limits_file, "needs a JSON file"));

  // Network.
  f.Value("--network", kNetwork, "MODE",
          "none (the default: loopback only) or allow (with "
          "--allow-net)",
          [x](const std::string& v) -> std::string {
            if (v != "none" && v != "allow") return "needs none or allow";
            x->network = v;
            return "";
          });
  f.Value("--allow-net", kNetwork, "HOST[:PORT]",
          "hosts a run may reach (repeatable); a request may name a subset with "
          "\"network\": {\"allow\": [...]}; a loopback or private IP is refused unless "
          "--unsafe-allow-private-address",
          [&o](const std::string& v) -> std::string {
            net::AllowRule rule;
            std::string why;
            if (!net::ParseAllowRule(v, &rule, &why)) return "needs HOST[:PORT] (" + why + ")";
            o.net.allow.push_back(rule);
            return "";
          });
  f.Value("--add-host", kNetwork, "NAME:IP", "resolve NAME to IP for the allowlist",
          [&o](const std::string& v) { return AddHost(v, &o); });
  f.Value("--net-bytes", kNetwork, "SIZE", "cap on the bytes that cross a run's edge",
          Size(&o.net_bytes, 1 << 20, 1, "needs a size, e.g. 10m"));
  f.Switch("--unsafe-allow-private-address", kNetwork,
           "let allowlisted IP literals and --add-host entries be private or loopback "
           "addresses (for tests; never in production)",
           [&o] { o.net.allow_private = true; });

  // Sandbox.
  f.Value("--tool", kSandbox, "NAME=HOST_COMMAND",
          "a host tool every run may call (repeatable; as for `sentry run`)",
          [&o](const std::string& v) -> std::string {
            tools::HostTool tool;
            if (std::string why = tools::ParseToolFlag(v, &tool); !why.empty()) return why;
            return tools::AddTool(o.tools, std::move(tool));
          });
  f.Switch("--no-cgroups", kSandbox, "as for `sentry run`: per-sandbox rlimits alone",
           [&o] { o.cgroups = false; });
  f.Switch("--no-landlock", kSandbox, "as for `sentry run`: no Landlock domain for the guest",
           [&o] { o.landlock = false; });
  f.Switch("--no-namespaces", kSandbox, "as for `sentry run`: the seccomp wall alone",
           [&o] { o.namespaces = NamespaceMode::kOff; });
  f.Switch("--require-namespaces", kSandbox, "fail rather than run without namespaces",
           [&o] { o.namespaces = NamespaceMode::kRequire; });
  f.Value("--userns", kSandbox, "auto|range|single",
          "as for `sentry run`: without root, the ids of each run's user namespace (not "
          "auto: every run starts cold)",
          [&o](const std::string& v) { return ParseIdMode(v, &o.userns); });

  // Warm interpreters.
  f.Value("--pool-size", kWarm, "N",
          "Python interpreters kept started, each for one run (default 4; 0: every run starts "
          "cold)",
          Whole(&warm->pool_size, 0, 64, "needs 0 to 64"));
  f.Value("--pool-refill", kWarm, "N",
          "interpreters made at once in the background, at a lower priority than the runs "
          "(default 2)",
          Whole(&warm->pool_refill, 1, 64, "needs 1 to 64"));
  f.Value("--pool-wait", kWarm, "MS",
          "how long a run waits for a free interpreter before it starts cold (default 100)",
          Whole(&warm->pool_wait_ms, 0, 60000, "needs 0 to 60000 (ms)"));
  f.Value("--preload", kWarm, "MODULES", "modules imported ahead in each, e.g. numpy,pandas",
          Modules(&warm->preload));

  // Sessions.
  agent::SessionFlags& s = server->sessions;
  f.Value("--max-sessions", kSessions, "N", "sessions open at once (default 64; 0: none)",
          Whole(&s.max_sessions, 0, 1 << 16, "needs 0 to 65536"));
  f.Value("--max-sessions-per-token", kSessions, "N",
          "sessions open at once for one token (default 16)",
          Whole(&s.max_per_token, 1, 1 << 16, "needs 1 to 65536"));
  f.Value("--session-idle-timeout", kSessions, "DURATION",
          "a session unused this long ends, \"idle\" (default 10m; a request may ask less)",
          Duration(&s.idle_timeout_sec));
  f.Value("--session-max-lifetime", kSessions, "DURATION",
          "a session ends this long after it was made, \"lifetime\" (default 1h)",
          Duration(&s.max_lifetime_sec));
  f.Value("--session-spares", kSessions, "N",
          "sessions started ahead, so that a new one is handed out in milliseconds "
          "(default 1; 0: each started on demand)",
          Whole(&s.spares, 0, 64, "needs 0 to 64"));
  f.Value("--session-fork-spares", kSessions, "N",
          "supervisors of forked sessions started ahead once a session was forked, so that "
          "a fork's children need not wait for theirs (default 2; 0: each started with its "
          "fork)",
          Whole(&s.fork_spares, 0, 100, "needs 0 to 100"));
  f.Value("--session-kernel", kSessions, "FILE",
          "the Python program a session runs instead of sentry's own kernel (it speaks "
          "the same frames: for testing a kernel)",
          Text(&s.kernel_file, "needs a file"));
}

// What no single flag can say.
std::string CheckCombination(const RunOptions& o, const Extra& x) {
  if (x.network == "none" && !o.net.allow.empty())
    return "--network none and --allow-net contradict";
  if (x.network == "allow" && o.net.allow.empty()) return "--network allow needs --allow-net";
  if (o.namespaces == NamespaceMode::kOff && !o.net.allow.empty()) {
    return "--no-namespaces leaves runs no network: no --allow-net";
  }
  return "";
}

FlagsOutcome ParseOnce(const ServerCommand& command, const std::vector<std::string>& args,
                       agent::ServerFlags* server, agent::WarmFlags* warm, Extra* x) {
  CLI::App app(command.description, absl::StrCat("sentry ", command.name));
  app.footer(command.footer);
  FlagSet f(app);
  if (command.define_own) command.define_own(f);
  DefineServerFlags(f, server, warm, x);
  FlagsOutcome out = ParseFlagsOnly(app, args);
  if (out.kind == FlagsOutcome::Kind::kHelp) {
    std::vector<const char*> groups = {kServer, kLimits, kNetwork, kSandbox, kWarm, kSessions};
    if (command.own_group) groups.insert(groups.begin(), command.own_group);
    out.text = Help(app, groups);
  }
  return out;
}

}  // namespace

FlagsOutcome ParseServerFlags(const ServerCommand& command, const std::vector<std::string>& args,
                              agent::ServerFlags* server, agent::WarmFlags* warm) {
  Extra x;
  FlagsOutcome out = ParseOnce(command, args, server, warm, &x);
  if (out.kind != FlagsOutcome::Kind::kRun) return out;
  std::optional<RunOptions> file;  // what the limits file alone sets
  if (!x.limits_file.empty()) {
    // The file sets the limits; the flags are parsed again on top of it, so
    // that they win wherever they stand.
    agent::ServerFlags with_file;
    if (std::string why = ApplyLimitsFile(x.limits_file, &with_file.policy.base); !why.empty()) {
      return {FlagsOutcome::Kind::kError, why};
    }
    file = with_file.policy.base;
    *warm = agent::WarmFlags();
    x = Extra();
    out = ParseOnce(command, args, &with_file, warm, &x);
    if (out.kind != FlagsOutcome::Kind::kRun) return out;
    *server = std::move(with_file);
  }
  if (std::string why = CheckCombination(server->policy.base, x); !why.empty()) {
    return {FlagsOutcome::Kind::kError, why};
  }
  const RunOptions* from_file = file ? &*file : nullptr;
  if (std::string why = CheckAgainstHost(server->policy.base, from_file); !why.empty()) {
    return {FlagsOutcome::Kind::kError, why};
  }
  if (std::string why = CheckAllowRules(server->policy.base, from_file); !why.empty()) {
    return {FlagsOutcome::Kind::kError, why};
  }
  return out;
}

}  // namespace sentry::cli
