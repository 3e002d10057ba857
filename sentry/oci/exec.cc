#include "sentry/oci/exec.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/close_range.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "loader/loader.h"
#include "loader/prebuilt_filter.h"
#include "sentry/oci/monitor.h"
#include "sentry/oci/rootfs_users.h"
#include "sentry/oci/state.h"
#include "sentry/run/exec_wire.h"

namespace sentry::oci {
namespace {

constexpr size_t kMaxProcessFile = 4 << 20;
constexpr size_t kMaxGroups = 64;

int Fail(const Globals& g, const std::string& msg) {
  g.log->Error(msg);
  return 1;
}

absl::StatusOr<std::string> ReadBounded(const std::string& path, size_t max) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::string text(max + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > max) return absl::InvalidArgumentError(absl::StrCat(path, " is too large"));
  return text;
}

// What the helper and the process tell exec over their report pipe.
struct Report {
  int32_t kind;  // 'p': the process's host pid; 'l': its listener; 'e': a step failed
  int32_t value;
  int32_t err;
  int32_t step;
};

enum Step : int32_t {
  kSetns = 1,
  kFork,
  kCgroups,
  kStdio,
  kTerminal,
  kCaps,
  kIds,
  kNoNewPrivs,
  kSeccomp,
  kRlimits,
  kExecve,
  kLandlock,
};

const char* StepName(int32_t step) {
  switch (step) {
    case kSetns:
      return "enter the sandbox's namespaces";
    case kFork:
      return "fork";
    case kCgroups:
      return "join the cgroups";
    case kStdio:
      return "set up stdin/stdout/stderr";
    case kTerminal:
      return "take the terminal";
    case kCaps:
      return "drop capabilities";
    case kIds:
      return "take the sandbox's ids";
    case kNoNewPrivs:
      return "set no_new_privs";
    case kSeccomp:
      return "install the seccomp filter";
    case kRlimits:
      return "set resource limits";
    case kExecve:
      return "execve";
    case kLandlock:
      return "make the process's Landlock domain";
  }
  return "?";
}

void Tell(int fd, Report r) { (void)!write(fd, &r, sizeof(r)); }

[[noreturn]] void Die(int fd, int32_t step) {
  Tell(fd, {'e', 0, errno, step});
  _exit(127);
}

// Everything the process needs after the fork, made before it.
struct Plan {
  int pidfd = -1;  // the sandbox's pid 1
  std::vector<int> cgroups;
  int stdio[3] = {0, 1, 2};
  int preserve_fds = 0;  // exec's 3..3+N-1, kept open at the same numbers
  bool terminal = false;
  uid_t uid = 0;  // the process's ids, inside the sandbox's user namespace
  gid_t gid = 0;
  std::vector<gid_t> groups;
  std::string path;
  std::vector<std::string> argv, envp;
  std::vector<GuestLaunch::Rlimit> rlimits;
  LandlockPlan landlock;  // the sandbox's guest domain (loader/landlock.h)
  int mqueue_root = -1;   // opened by the helper inside the namespaces
  int report = -1, go = -1;
};

volatile sig_atomic_t g_forward_to = 0;

void Forward(int signo) {
  if (g_forward_to > 0) kill(g_forward_to, signo);
}

// The signals an engine or a terminal sends that the helper (and exec in the
// foreground) pass on to the process.
constexpr int kForwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

void ForwardSignalsTo(pid_t pid) {
  g_forward_to = pid;
  struct sigaction sa {};
  sa.sa_handler = Forward;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int s : kForwarded) sigaction(s, &sa, nullptr);
}

int WaitStatus(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 255;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The process, from its fork to its execve: the steps of the loader's
// RunGuest, in the same order.
[[noreturn]] void ProcessMain(const Plan& p, char** argv, char** envp) {
  // The helper lies outside the sandbox's pid namespace: its pid reads as 0
  // here while it lives (an orphan's parent would be the sandbox's pid 1).
  constexpr pid_t helper = 0;
  for (int fd : p.cgroups) {
    if (write(fd, "0", 1) != 1) Die(p.report, kCgroups);
  }
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) signal(sig, SIG_DFL);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != helper) _exit(127);
  for (int i = 0; i < 3; ++i) {
    if (p.stdio[i] != i && dup2(p.stdio[i], i) < 0) Die(p.report, kStdio);
  }
  // Only the report and go pipes stay until the execve (both close-on-exec).
  for (int fd : p.cgroups) close(fd);
  syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
  // exec's own fds were all opened above these (see InheritedFds).
  for (int i = 0; i < p.preserve_fds; ++i) {
    if (fcntl(3 + i, F_SETFD, 0) < 0) Die(p.report, kStdio);
  }
  if (setsid() < 0) Die(p.report, kTerminal);
  if (p.terminal) ioctl(0, TIOCSCTTY, 0);  // a pty of the engine's: best effort, as runc
  for (int cap = 0; cap <= 63; ++cap) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL) Die(p.report, kCaps);
  }
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  // A rootless sandbox (single-id: setgroups denied in its namespace) keeps
  // the groups the process came with, as its first process did: none from
  // rootless podman (uid 0 there drops them), else the caller's own.
  if ((syscall(SYS_setgroups, p.groups.size(), p.groups.data()) < 0 &&
       !(p.groups.empty() && errno == EPERM)) ||
      syscall(SYS_setresgid, p.gid, p.gid, p.gid) < 0 ||
      syscall(SYS_setresuid, p.uid, p.uid, p.uid) < 0) {
    Die(p.report, kIds);
  }
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // cleared by the change of ids
  if (getppid() != helper) _exit(127);
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capset, &hdr, data) < 0) Die(p.report, kCaps);
  // A copy of exec (not dumpable, see main.cc) with no capability and the
  // sandbox's ids: dumpable, as the loader makes itself, so that a monitor
  // without root can reach it (its /proc files, pidfd_getfd, PTRACE_SEIZE),
  // as it will the process after its execve.
  prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) Die(p.report, kNoNewPrivs);
  if (int err = ApplyLandlock(p.landlock, p.mqueue_root)) {
    errno = err;
    Die(p.report, kLandlock);
  }
  std::span<const sock_filter> filter = PrebuiltSeccompFilter();
  sock_fprog prog{static_cast<unsigned short>(filter.size()),
                  const_cast<sock_filter*>(filter.data())};
  int listener = static_cast<int>(
      syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog));
  if (listener < 0) Die(p.report, kSeccomp);
  // From here every call goes through the filter: write, read, close and
  // setrlimit run natively, and the execve is the tracer's to answer.
  Tell(p.report, {'l', listener, 0, 0});
  char go = 0;
  while (read(p.go, &go, 1) < 0 && errno == EINTR) {
  }
  if (go != 'g') _exit(127);  // exec gave up
  close(listener);
  for (const GuestLaunch::Rlimit& r : p.rlimits) {
    rlimit lim{r.Soft(), r.value};
    if (setrlimit(r.resource, &lim) < 0) Die(p.report, kRlimits);
  }
  execve(p.path.c_str(), argv, envp);
  Die(p.report, kExecve);
}

// The helper: enters the sandbox's namespaces, forks the process into them,
// and lives as long as it does.
[[noreturn]] void HelperMain(Plan& p, int lock_fd) {
  close(lock_fd);  // the state's lock stays exec's, which releases it when done
  std::vector<char*> argv, envp;
  for (std::string& a : p.argv) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& e : p.envp) envp.push_back(e.data());
  envp.push_back(nullptr);
  if (setns(p.pidfd, CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS |
                         CLONE_NEWNET | CLONE_NEWCGROUP) < 0) {
    Die(p.report, kSetns);
  }
  close(p.pidfd);
  if (p.landlock.abi > 0) p.mqueue_root = OpenMqueueRoot();  // see loader.cc
  pid_t child = fork();
  if (child < 0) Die(p.report, kFork);
  if (child == 0) ProcessMain(p, argv.data(), envp.data());
  ForwardSignalsTo(child);
  Tell(p.report, {'p', child, 0, 0});
  // Nothing of the engine's or of exec's stays open here: the helper may
  // outlive exec (--detach) and must not hold the process's stdio.
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int i = 0; i < 3 && null >= 0; ++i) dup2(null, i);
  syscall(SYS_close_range, 3, ~0U, 0);
  _exit(WaitStatus(child));
}

bool ReadReport(int fd, Report* r) {
  char* at = reinterpret_cast<char*>(r);
  size_t got = 0;
  while (got < sizeof(*r)) {
    ssize_t n = read(fd, at + got, sizeof(*r) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

std::string Describe(const Report& r) {
  return absl::StrCat("cannot ", StepName(r.step), ": ", std::strerror(r.err));
}

nlohmann::json RequestJson(const std::string& op, const ExecProcess& p) {
  nlohmann::json j = {{"op", op},     {"args", p.args}, {"env", p.env},      {"cwd", p.cwd},
                      {"uid", p.uid}, {"gid", p.gid},   {"groups", p.groups}};
  if (p.umask >= 0) j["umask"] = p.umask;
  return j;
}

// One request to the monitor, its answer (and fds) back.
absl::StatusOr<nlohmann::json> Ask(const std::string& socket_path, const nlohmann::json& request,
                                   std::span<const int> fds, std::span<UniqueFd> got,
                                   int* code = nullptr) {
  UniqueFd sock = UnixSocketAt(socket_path, /*listen_on=*/false);
  if (!sock) return absl::UnavailableError("its monitor does not answer");
  SetExecWireTimeouts(sock.get());
  if (absl::Status s = SendExecMessage(sock.get(), request.dump(), fds); !s.ok()) return s;
  auto text = ReceiveExecMessage(sock.get(), got);
  if (!text.ok()) return absl::UnavailableError("its monitor gave no answer");
  nlohmann::json reply = nlohmann::json::parse(*text, nullptr, false);
  if (!reply.is_object() || !reply.contains("ok") || !reply["ok"].is_boolean()) {
    return absl::InternalError("its monitor's answer is malformed");
  }
  if (!reply["ok"].get<bool>()) {
    if (code && reply.contains("code") && reply["code"].is_number_integer()) {
      *code = std::clamp(reply["code"].get<int>(), 1, 255);
    }
    return absl::FailedPreconditionError(reply.contains("error") && reply["error"].is_string()
                                             ? reply["error"].get<std::string>()
                                             : "refused");
  }
  return reply;
}

// The process when no --process is given: config.json's, as runc takes it.
ExecProcess FromBundle(const std::string& bundle) {
  ExecProcess p;
  auto text = ReadBounded(bundle + "/config.json", kMaxProcessFile);
  if (!text.ok()) return p;
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object() || !j.contains("process") || !j["process"].is_object()) return p;
  nlohmann::json proc = j["process"];
  proc["args"] = {"-"};  // replaced by the command line's
  auto parsed = ParseProcessJson(proc.dump());
  if (parsed.ok()) p = *parsed;
  p.args.clear();
  p.terminal = false;
  return p;
}

void SetEnv(std::vector<std::string>* env, const std::string& kv) {
  std::string key = kv.substr(0, kv.find('='));
  for (std::string& e : *env) {
    if (e.substr(0, e.find('=')) == key) {
      e = kv;
      return;
    }
  }
  env->push_back(kv);
}

}  // namespace

absl::StatusOr<ExecProcess> ParseProcessJson(const std::string& text) {
  auto bad = [](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("the process JSON: ", why));
  };
  if (text.size() > kMaxProcessFile) return bad("too large");
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return bad("not valid JSON");
  if (!j.is_object()) return bad("not a JSON object");
  ExecProcess p;
  auto strings = [&](const char* key, std::vector<std::string>* out) -> absl::Status {
    if (!j.contains(key) || j[key].is_null()) return absl::OkStatus();
    const nlohmann::json& a = j[key];
    if (!a.is_array()) return bad(absl::StrCat(key, " must be an array of strings"));
    for (const nlohmann::json& s : a) {
      if (!s.is_string()) return bad(absl::StrCat(key, " must be an array of strings"));
      out->push_back(s.get<std::string>());
    }
    if (out->size() > kMaxLaunchStrings) return bad(absl::StrCat(key, " has too many entries"));
    return absl::OkStatus();
  };
  if (absl::Status s = strings("args", &p.args); !s.ok()) return s;
  if (p.args.empty() || p.args[0].empty()) return bad("args must name the program");
  if (absl::Status s = strings("env", &p.env); !s.ok()) return s;
  if (j.contains("cwd")) {
    if (!j["cwd"].is_string()) return bad("cwd must be a string");
    p.cwd = j["cwd"].get<std::string>();
    if (p.cwd.empty() || p.cwd[0] != '/') return bad("cwd must be an absolute path");
  }
  if (j.contains("terminal")) {
    if (!j["terminal"].is_boolean()) return bad("terminal must be true or false");
    p.terminal = j["terminal"].get<bool>();
  }
  if (j.contains("user")) {
    const nlohmann::json& u = j["user"];
    if (!u.is_object()) return bad("user must be an object");
    auto id = [&](const char* key, uint32_t* out) {
      if (!u.contains(key)) return true;
      if (!u[key].is_number_unsigned() || u[key].get<uint64_t>() >= 0xffffffffu) return false;
      *out = u[key].get<uint32_t>();
      return true;
    };
    if (!id("uid", &p.uid)) return bad("user.uid must be a number below 2^32-1");
    if (!id("gid", &p.gid)) return bad("user.gid must be a number below 2^32-1");
    if (u.contains("additionalGids") && !u["additionalGids"].is_null()) {
      const nlohmann::json& a = u["additionalGids"];
      if (!a.is_array() || a.size() > kMaxGroups) {
        return bad(absl::StrCat("user.additionalGids must be an array of at most ", kMaxGroups,
                                " numbers"));
      }
      for (const nlohmann::json& g : a) {
        if (!g.is_number_unsigned() || g.get<uint64_t>() >= 0xffffffffu) {
          return bad("user.additionalGids must hold numbers below 2^32-1");
        }
        p.groups.push_back(g.get<uint32_t>());
      }
    }
    if (u.contains("umask") && !u["umask"].is_null()) {
      if (!u["umask"].is_number_unsigned() || u["umask"].get<uint64_t>() > 0777) {
        return bad("user.umask must be a number from 0 to 0777");
      }
      p.umask = u["umask"].get<int>();
    }
    if (u.contains("username")) return bad("user.username is not supported (give uid and gid)");
  }
  return p;
}

int Exec(const Globals& g, const ExecOptions& e) {
  if (!ValidId(e.id)) return Fail(g, absl::StrCat("invalid container id: ", e.id));
  auto dir = StateDir::Open(g.root, e.id);
  if (!dir.ok()) return Fail(g, std::string(dir.status().message()));
  auto s = dir->Read();
  if (!s.ok()) return Fail(g, absl::StrCat("container ", e.id, ": ", s.status().message()));
  Status st = StatusOf(*s);
  if (st != Status::kRunning) {
    return Fail(g, absl::StrCat("cannot exec in container ", e.id, ": it is ", StatusName(st)));
  }
  ExecProcess proc;
  if (!e.process_file.empty()) {
    auto text = ReadBounded(e.process_file, kMaxProcessFile);
    if (!text.ok()) return Fail(g, absl::StrCat("exec: ", text.status().message()));
    auto parsed = ParseProcessJson(*text);
    if (!parsed.ok()) {
      return Fail(g, absl::StrCat("exec: ", e.process_file, ": ", parsed.status().message()));
    }
    proc = *parsed;
  } else {
    proc = FromBundle(s->bundle);
    proc.args = e.args;
    if (proc.args.empty() || proc.args[0].empty()) {
      return Fail(g, "exec: args must not be empty (give the command after the id)");
    }
  }
  for (const std::string& kv : e.env) {
    if (kv.find('=') == std::string::npos || kv[0] == '=') {
      return Fail(g, absl::StrCat("exec: --env ", kv, ": give KEY=VALUE"));
    }
    SetEnv(&proc.env, kv);
  }
  if (!e.cwd.empty()) {
    if (e.cwd[0] != '/') return Fail(g, absl::StrCat("exec: --cwd ", e.cwd, ": not absolute"));
    proc.cwd = e.cwd;
  }
  if (!e.user.empty()) {
    auto u = ResolveUser(s->rootfs, e.user);
    if (!u.ok()) return Fail(g, "exec: " + std::string(u.status().message()));
    proc.uid = u->uid;
    if (u->gid) proc.gid = *u->gid;
  }
  if (e.preserve_fds > kMaxExecPreservedFds) {
    return Fail(g, absl::StrCat("exec: --preserve-fds takes at most ", kMaxExecPreservedFds));
  }
  if (e.tty) proc.terminal = true;
  if (proc.terminal && e.detach && e.console_socket.empty()) {
    return Fail(g, "cannot allocate tty if sentry will detach without setting console socket");
  }
  if (!proc.terminal && !e.console_socket.empty()) {
    return Fail(g, "cannot use console socket if sentry will not allocate a tty");
  }
  auto failed = [&](const std::string& why) {
    return Fail(g, absl::StrCat("exec in container ", e.id, " failed: ", why));
  };
  std::array<UniqueFd, kMaxLoaderCgroups> cgroups;
  int prepared_code = 0;  // the monitor's exit code for a program not found or not executable
  auto prepared =
      Ask(dir->exec_socket_path(), RequestJson("prepare", proc), {}, cgroups, &prepared_code);
  if (!prepared.ok()) {
    failed(std::string(prepared.status().message()));
    return prepared_code > 0 ? prepared_code : 1;
  }
  const nlohmann::json& pr = *prepared;
  Plan plan;
  try {
    plan.uid = pr.at("uid").get<uid_t>();
    plan.gid = pr.at("gid").get<gid_t>();
    plan.groups = pr.at("groups").get<std::vector<gid_t>>();
    if (plan.groups.size() > kMaxGroups) return failed("its monitor's answer is malformed");
    plan.path = pr.at("path").get<std::string>();
    for (const auto& r : pr.at("rlimits")) {
      plan.rlimits.push_back({r.at(0).get<int>(), r.at(1).get<uint64_t>(),
                              r.size() > 2 ? r.at(2).get<uint64_t>() : ~0ull});
    }
    if (pr.at("init").get<pid_t>() != s->init_pid) return failed("its sandbox changed");
    if (!ParseLandlockJson(pr.contains("landlock") ? pr.at("landlock") : nlohmann::json(),
                           &plan.landlock)) {
      return failed("its monitor's answer is malformed");
    }
    // A domain of its own, beside the first process's: scoped, it could not
    // signal that process or reach its abstract sockets (`exec kill -HUP`).
    // The sandbox's pid and network namespaces confine both already.
    plan.landlock.scoped = 0;
  } catch (const nlohmann::json::exception&) {
    return failed("its monitor's answer is malformed");
  }
  plan.argv = proc.args;
  plan.preserve_fds = e.preserve_fds;
  plan.envp = proc.env;
  plan.terminal = proc.terminal;
  for (const UniqueFd& f : cgroups) {
    if (f) plan.cgroups.push_back(f.get());
  }
  UniqueFd slave;
  if (proc.terminal && !e.console_socket.empty()) {
    auto made = MakeConsole(e.console_socket);
    if (!made.ok()) return failed(std::string(made.status().message()));
    slave = std::move(*made);
    for (int& fd : plan.stdio) fd = slave.get();
  }
  UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, s->init_pid, 0)));
  if (!pidfd || ProcessStartTime(s->init_pid) != s->init_start)
    return failed("its sandbox is gone");
  plan.pidfd = pidfd.get();
  int report[2], go[2];
  if (pipe2(report, O_CLOEXEC) < 0) return failed("pipe");
  UniqueFd report_r(report[0]), report_w(report[1]);
  if (pipe2(go, O_CLOEXEC) < 0) return failed("pipe");
  UniqueFd go_r(go[0]), go_w(go[1]);
  plan.report = report_w.get();
  plan.go = go_r.get();
  std::fflush(nullptr);
  pid_t helper = fork();
  if (helper < 0) return failed("fork");
  if (helper == 0) {
    go_w.Reset();
    report_r.Reset();
    HelperMain(plan, dir->lock_fd());
  }
  report_w.Reset();
  go_r.Reset();
  pidfd.Reset();
  for (UniqueFd& f : cgroups) f.Reset();
  auto abandon = [&](const std::string& why) {
    kill(helper, SIGKILL);  // the process dies with it (its parent-death signal)
    WaitStatus(helper);
    return failed(why);
  };
  // The helper's report (the process's pid) and the process's (its
  // listener) may come in either order.
  Report r{};
  pid_t child = 0;
  int listener = -1;
  while (child <= 0 || listener < 0) {
    if (!ReadReport(report_r.get(), &r)) return abandon("the process ended before its filter");
    if (r.kind == 'e') return abandon(Describe(r));
    if (r.kind == 'p' && r.value > 0) {
      child = r.value;
    } else if (r.kind == 'l' && r.value >= 0) {
      listener = r.value;
    } else {
      return abandon("a malformed report");
    }
  }
  nlohmann::json attach = RequestJson("attach", proc);
  attach["pid"] = child;
  attach["listener"] = listener;
  // The monitor trusts what comes with the attach as the process's own.
  std::vector<int> given(plan.stdio, plan.stdio + 3);
  for (int i = 0; i < plan.preserve_fds; ++i) given.push_back(3 + i);
  auto attached = Ask(dir->exec_socket_path(), attach, given, {});
  if (!attached.ok()) return abandon(std::string(attached.status().message()));
  slave.Reset();  // (sent with the attach: the monitor trusts what it is)
  if (write(go_w.get(), "g", 1) != 1) return abandon("cannot start the process");
  go_w.Reset();
  // End of file: the execve closed the pipe (or the process is gone).
  if (ReadReport(report_r.get(), &r) && r.kind == 'e') {
    WaitStatus(helper);
    return failed(Describe(r));
  }
  if (!e.pid_file.empty()) {
    std::string tmp = e.pid_file + ".sentry-tmp";
    std::ofstream out(tmp, std::ios::trunc);
    out << helper;
    out.close();
    if (!out || rename(tmp.c_str(), e.pid_file.c_str()) < 0) {
      unlink(tmp.c_str());
      return abandon(absl::StrCat("cannot write the pid file ", e.pid_file));
    }
  }
  if (!e.pidfd_socket.empty()) {
    if (absl::Status sent = SendPidfd(e.pidfd_socket, helper, e.id); !sent.ok()) {
      return abandon(std::string(sent.message()));
    }
  }
  g.log->Debug(absl::StrCat(e.id, ": exec'd ", proc.args[0], ", helper ", helper, ", pid ", child));
  dir = absl::UnavailableError("released");  // the lock: kill and delete may come meanwhile
  if (e.detach) return 0;
  ForwardSignalsTo(helper);
  return WaitStatus(helper);
}

}  // namespace sentry::oci
