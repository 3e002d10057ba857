// sentry as an OCI runtime: runc's command line (global flags before the
// verb), so that podman --runtime, containerd's runc v2 shim (BinaryName)
// and Kubernetes' RuntimeClass drive sentry with no wrapper.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "loader/loader.h"
#include "sentry/cli/commands.h"
#include "sentry/oci/exec.h"
#include "sentry/oci/lifecycle.h"
#include "sentry/oci/oci_log.h"
#include "sentry/oci/spec.h"
#include "sentry/run/result.h"
#include "sentry/run/userns_root.h"

namespace sentry::cli {
namespace {

// A verb's flags: name → whether it takes a value. Aliases map to one name.
struct FlagSpec {
  std::map<std::string, bool> takes_value;
  std::map<std::string, std::string> alias;
};

struct Parsed {
  std::map<std::string, std::string> values;  // a flag given → its value ("" for a switch)
  std::map<std::string, std::vector<std::string>> all;  // every value of a repeated flag
  std::vector<std::string> positional;
  std::string error;
};

// urfave/cli's rules, as runc's users write them: --flag value, --flag=value,
// -f value, a single dash for long names too; flags end at "--" or at the
// first positional argument.
Parsed ParseArgs(const std::vector<std::string>& args, size_t from, const FlagSpec& spec) {
  Parsed p;
  size_t i = from;
  for (; i < args.size(); ++i) {
    std::string a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.size() < 2 || a[0] != '-') break;
    std::string name = a.substr(a[1] == '-' ? 2 : 1);
    std::string value;
    bool has_value = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    if (auto al = spec.alias.find(name); al != spec.alias.end()) name = al->second;
    auto it = spec.takes_value.find(name);
    if (it == spec.takes_value.end()) {
      p.error = absl::StrCat("flag provided but not defined: -", name);
      return p;
    }
    if (it->second && !has_value) {
      if (i + 1 >= args.size()) {
        p.error = absl::StrCat("flag needs an argument: -", name);
        return p;
      }
      value = args[++i];
    }
    p.values[name] = value;
    p.all[name].push_back(value);
  }
  p.positional.assign(args.begin() + static_cast<long>(i), args.end());
  return p;
}

const std::set<std::string>& OciVerbs() {
  static const std::set<std::string> verbs = {
      "create", "start",  "state",  "kill",   "delete",     "list",    "ls",       "ps",  "exec",
      "pause",  "resume", "update", "events", "checkpoint", "restore", "features", "spec"};
  return verbs;
}

const FlagSpec& GlobalFlags() {
  static const FlagSpec spec{{{"root", true},
                              {"log", true},
                              {"log-format", true},
                              {"debug", false},
                              {"systemd-cgroup", false},
                              {"rootless", true},
                              {"criu", true},
                              {"version", false},
                              {"help", false}},
                             {{"v", "version"}, {"h", "help"}}};
  return spec;
}

// --rootless takes a value in runc (true, false, auto); a bare --rootless
// before the verb is taken as true.
std::vector<std::string> NormalizeRootless(std::vector<std::string> args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] != "--rootless" && args[i] != "-rootless") continue;
    bool valued = i + 1 < args.size() &&
                  (args[i + 1] == "true" || args[i + 1] == "false" || args[i + 1] == "auto");
    if (!valued) args[i] = "--rootless=true";
    break;
  }
  return args;
}

constexpr const char* kOciUsage = R"(usage: sentry [GLOBAL FLAGS] COMMAND [FLAGS] ID

sentry speaks runc's command line: podman (--runtime), containerd's runc v2
shim (BinaryName) and Kubernetes (a RuntimeClass) run containers in it.

Global flags (before the command):
  --root DIR           state of the containers (default /run/sentry-oci; without
                       root $XDG_RUNTIME_DIR/sentry-oci or /tmp/sentry-oci-UID)
  --log FILE           the log (default stderr)
  --log-format FORMAT  text (default) or json ({"level","msg","time"} lines)
  --debug              debug lines in the log
  --systemd-cgroup     accepted; sentry makes its own cgroups (cgroupfs)
  --rootless VALUE     accepted (true, false, auto)

Commands:
  create [--bundle DIR] [--pid-file FILE] [--console-socket SOCK]
         [--preserve-fds N] [--pidfd-socket SOCK] ID
  start ID             run the created container's process
  run [--bundle DIR] [--pid-file FILE] [--detach] [--preserve-fds N] ID
  state ID             runc's state JSON
  kill [--all] ID [SIGNAL]
  delete [--force] ID
  list [--format table|json] [--quiet]
  ps [--format table|json] ID
  exec [--process FILE | ID CMD ARGS...] [--detach] [--pid-file FILE]
       [--console-socket SOCK] [--tty] [--cwd DIR] [--env K=V] [--user UID[:GID]]
       [--preserve-fds N] [--pidfd-socket SOCK]
                       a second process in the running container
  features             what this runtime supports, as JSON
  spec [--bundle DIR]  write a default config.json
Not supported: pause, resume, update, events, checkpoint, restore.
)";

// How many fds from 3 on this process was started with, counted before it
// opens any of its own: --preserve-fds N passes on 3..3+N-1, which must all
// be the engine's (never a log sentry opened in a gap).
int InheritedFds() {
  int n = 0;
  while (n < static_cast<int>(kMaxExtraFds) && fcntl(3 + n, F_GETFD) >= 0) ++n;
  return n;
}

// --preserve-fds N, checked against what was inherited; -1 (logged) if wrong.
int PreserveFds(const Parsed& p, int inherited, oci::OciLog& log) {
  if (!p.values.count("preserve-fds")) return 0;
  int n;
  if (!absl::SimpleAtoi(p.values.at("preserve-fds"), &n) || n < 0 ||
      n > static_cast<int>(kMaxExtraFds)) {
    log.Error(absl::StrCat("--preserve-fds needs a number from 0 to ", kMaxExtraFds));
    return -1;
  }
  if (n > inherited) {
    log.Error(absl::StrCat("--preserve-fds ", n, ": fd ", 3 + inherited, " is not open"));
    return -1;
  }
  return n;
}

}  // namespace

bool IsOciInvocation(const std::vector<std::string>& args) {
  if (args.empty()) return false;
  const std::string& a = args[0];
  if (OciVerbs().count(a)) return true;
  if (a.size() > 2 && a[0] == '-' && a != "--version" && a != "--help") {
    std::string name = a.substr(a[1] == '-' ? 2 : 1);
    name = name.substr(0, name.find('='));
    return GlobalFlags().takes_value.count(name) > 0;
  }
  // `sentry run` is sentry's own; runc's run is told by its flags. docker's
  // -d alone is runc's only where runc could run it: no `--` (runc takes an
  // ID, no command) and a bundle in the cwd; else `sentry run` says it has
  // no detached mode.
  if (a == "run" && args.size() > 1) {
    bool detach = false;
    for (size_t i = 1; i < args.size(); ++i) {
      const std::string& f = args[i];
      if (f == "--") return false;
      for (const char* runc : {"--bundle", "-b", "--pid-file", "--console-socket", "--no-pivot",
                               "--keep", "--preserve-fds", "--pidfd-socket"}) {
        if (f == runc || absl::StartsWith(f, std::string(runc) + "=")) return true;
      }
      detach = detach || f == "-d" || f == "--detach" || absl::StartsWith(f, "--detach=");
    }
    return detach && access("config.json", F_OK) == 0;
  }
  return false;
}

int OciCommand(const std::vector<std::string>& raw) {
  const int inherited = InheritedFds();
  std::vector<std::string> args = NormalizeRootless(raw);
  Parsed global = ParseArgs(args, 0, GlobalFlags());
  oci::OciLog log;
  if (!global.error.empty()) {
    log.Error(global.error);
    return 1;
  }
  std::string format = global.values.count("log-format") ? global.values["log-format"] : "text";
  if (format != "text" && format != "json") {
    log.Error(absl::StrCat("unknown log format ", format, " (text or json)"));
    return 1;
  }
  log.Open(global.values["log"], format == "json", global.values.count("debug") > 0);
  if (global.values.count("version")) {
    std::printf("sentry version %s\nspec: %s\n", SentryVersion(), oci::kOciSpecVersion);
    return 0;
  }
  if (global.values.count("help") || global.positional.empty()) {
    std::fputs(kOciUsage,
               global.positional.empty() && !global.values.count("help") ? stderr : stdout);
    return global.values.count("help") ? 0 : 1;
  }
  if (global.values.count("systemd-cgroup") && !global.positional.empty() &&
      global.positional[0] == "create") {
    log.Info("--systemd-cgroup: sentry makes its own cgroups with cgroupfs");
  }
  oci::Globals g;
  g.log = &log;
  if (global.values.count("root")) g.root = global.values["root"];
  std::vector<std::string> rest = global.positional;
  std::string verb = rest[0];
  auto need_id = [&](const Parsed& p, std::string* id) {
    if (p.positional.empty()) {
      log.Error(absl::StrCat(verb, ": the container id is missing"));
      return false;
    }
    *id = p.positional[0];
    return true;
  };
  auto parse = [&](const FlagSpec& spec) {
    Parsed p = ParseArgs(rest, 1, spec);
    if (!p.error.empty()) log.Error(absl::StrCat(verb, ": ", p.error));
    return p;
  };
  std::string id;
  if (verb == "create" || verb == "run") {
    FlagSpec spec{{{"bundle", true},
                   {"pid-file", true},
                   {"console-socket", true},
                   {"preserve-fds", true},
                   {"no-pivot", false},
                   {"no-new-keyring", false},
                   {"pidfd-socket", true},
                   {"detach", false},
                   {"keep", false},
                   {"no-subreaper", false}},
                  {{"b", "bundle"}, {"d", "detach"}}};
    Parsed p = parse(spec);
    if (!p.error.empty() || !need_id(p, &id)) return 1;
    oci::CreateOptions c;
    c.id = id;
    if (p.values.count("bundle")) c.bundle = p.values["bundle"];
    c.pid_file = p.values["pid-file"];
    c.console_socket = p.values["console-socket"];
    c.pidfd_socket = p.values["pidfd-socket"];
    c.preserve_fds = PreserveFds(p, inherited, log);
    if (c.preserve_fds < 0) return 1;
    // uid 0 of rootless podman's user namespace makes the sandbox as the
    // caller it stands for (userns_root.h); the other verbs stay that uid 0,
    // which owns the sandbox's namespaces (their /proc files, exec's setns).
    if (std::string err = LeaveNamespacedRoot(); !err.empty()) {
      log.Error(err);
      return 1;
    }
    if (verb == "create") return oci::Create(g, c);
    return oci::RunContainer(g, c, p.values.count("detach") > 0);
  }
  if (verb == "start" || verb == "state") {
    Parsed p = parse({});
    if (!p.error.empty() || !need_id(p, &id)) return 1;
    return verb == "start" ? oci::Start(g, id) : oci::State(g, id);
  }
  if (verb == "kill") {
    Parsed p = parse({{{"all", false}}, {{"a", "all"}}});
    if (!p.error.empty() || !need_id(p, &id)) return 1;
    std::string sig = p.positional.size() > 1 ? p.positional[1] : "SIGTERM";
    int signo = oci::ParseSignal(sig);
    if (signo == 0) {
      log.Error(absl::StrCat("unknown signal ", sig));
      return 1;
    }
    return oci::Kill(g, id, signo, p.values.count("all") > 0);
  }
  if (verb == "delete") {
    Parsed p = parse({{{"force", false}}, {{"f", "force"}}});
    if (!p.error.empty() || !need_id(p, &id)) return 1;
    return oci::Delete(g, id, p.values.count("force") > 0);
  }
  if (verb == "list" || verb == "ls") {
    Parsed p = parse({{{"format", true}, {"quiet", false}}, {{"f", "format"}, {"q", "quiet"}}});
    if (!p.error.empty()) return 1;
    return oci::List(g, p.values["format"] == "json", p.values.count("quiet") > 0);
  }
  if (verb == "ps") {
    Parsed p = parse({{{"format", true}}, {{"f", "format"}}});
    if (!p.error.empty() || !need_id(p, &id)) return 1;
    return oci::Ps(g, id, p.values["format"] == "json");
  }
  if (verb == "exec") {
    FlagSpec spec{{{"process", true},
                   {"detach", false},
                   {"pid-file", true},
                   {"console-socket", true},
                   {"pidfd-socket", true},
                   {"tty", false},
                   {"cwd", true},
                   {"env", true},
                   {"user", true},
                   {"additional-gids", true},
                   {"cap", true},
                   {"no-new-privs", false},
                   {"apparmor", true},
                   {"process-label", true},
                   {"preserve-fds", true},
                   {"ignore-paused", false},
                   {"cgroup", true}},
                  {{"p", "process"},
                   {"d", "detach"},
                   {"t", "tty"},
                   {"e", "env"},
                   {"u", "user"},
                   {"g", "additional-gids"},
                   {"c", "cap"}}};
    Parsed p = parse(spec);
    if (!p.error.empty() || !need_id(p, &id)) return 1;
    oci::ExecOptions e;
    e.id = id;
    e.process_file = p.values["process"];
    e.detach = p.values.count("detach") > 0;
    e.pid_file = p.values["pid-file"];
    e.console_socket = p.values["console-socket"];
    e.pidfd_socket = p.values["pidfd-socket"];
    e.tty = p.values.count("tty") > 0;
    e.cwd = p.values["cwd"];
    e.env = p.all["env"];
    e.user = p.values["user"];
    e.args.assign(p.positional.begin() + 1, p.positional.end());
    e.preserve_fds = PreserveFds(p, inherited, log);
    if (e.preserve_fds < 0) return 1;
    for (const char* ignored : {"cap", "apparmor", "process-label", "cgroup", "additional-gids"}) {
      if (p.values.count(ignored)) {
        log.Warn(absl::StrCat("exec: --", ignored,
                              " not honoured (the guest holds no capability"
                              " and the sandbox's cgroups)"));
      }
    }
    return oci::Exec(g, e);
  }
  if (verb == "features") {
    std::printf("%s\n", oci::FeaturesJson().c_str());
    return 0;
  }
  if (verb == "spec") {
    Parsed p = parse({{{"bundle", true}, {"rootless", false}}, {{"b", "bundle"}}});
    if (!p.error.empty()) return 1;
    std::string dir = p.values.count("bundle") ? p.values["bundle"] : ".";
    std::string why = oci::WriteDefaultSpec(dir);
    if (!why.empty()) {
      log.Error(why);
      return 1;
    }
    return 0;
  }
  log.Error(absl::StrCat(verb, " is not supported by sentry"));
  return 1;
}

}  // namespace sentry::cli
