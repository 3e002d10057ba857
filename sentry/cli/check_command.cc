// sentry check: can sentry run on this host, and with which walls? Each kernel
// feature sentry stands on is tried for real (a child under a seccomp listener,
// a clone with the sandbox's namespaces, a cgroup made and removed), so the
// report says what `sentry run` will find, not what a version number suggests.
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "loader/landlock.h"
#include "sentry/base/json_out.h"
#include "sentry/base/unique_fd.h"
#include "sentry/cli/commands.h"
#include "sentry/cli/flag_set.h"
#include "sentry/platform/unotify.h"
#include "sentry/run/cgroup_v2.h"
#include "sentry/run/cgroups.h"
#include "sentry/run/run.h"
#include "sentry/run/subid_range.h"

namespace sentry::cli {
namespace {

constexpr const char* kCheckUsage = R"(usage: sentry check [--json]

Tries, for real, each kernel feature sentry stands on and says whether
`sentry run` works on this host and with which walls:
  root                  the sandbox's ids are mapped to host ids nobody owns
  seccomp listener      SECCOMP_RET_USER_NOTIF, taken over with pidfd_getfd
  fd donation           SECCOMP_ADDFD_FLAG_SEND (Linux 5.14)
  synchronous wake-up   SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (Linux 6.6): faster traps
  openat2               RESOLVE_BENEATH for every host file sentry opens
  ptrace                fork, exec and exit events of the guest
  namespaces            user, mount, pid, net, ipc, uts and cgroup
  cgroups               memory, pids and cpu caps (else rlimits hold them)
  landlock              the guest's Landlock domain, by the kernel's ABI

Exit codes: 0 sentry runs here; 1 something it needs is missing (the report
says what and what to do); 125 bad flags.
)";

struct Check {
  std::string name;
  bool ok = false;
  bool required = true;
  std::string detail;  // what was found, or what to do
};

// Waits up to timeout_ms for pid to exit; kills it past that.
int WaitOrKill(pid_t pid, int timeout_ms) {
  int status = 0;
  for (int waited = 0; waited < timeout_ms; waited += 5) {
    if (waitpid(pid, &status, WNOHANG) == pid) return status;
    usleep(5000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return status;
}

// A child installs a filter that sends getxattr to a listener, which the parent
// takes with pidfd_getfd and answers by donating an fd (ADDFD + SEND). The child
// exits 0 if its getxattr came back as a working fd.
void CheckSeccomp(std::vector<Check>& out) {
  Check listener{"seccomp listener"}, donation{"fd donation"}, sync{"synchronous wake-up"};
  sync.required = false;
  auto finish = [&] {
    out.push_back(listener);
    out.push_back(donation);
    out.push_back(sync);
  };
  int report[2];
  if (pipe2(report, O_CLOEXEC) < 0) {
    listener.detail = absl::StrCat("pipe: ", std::strerror(errno));
    return finish();
  }
  UniqueFd report_r(report[0]), report_w(report[1]);
  pid_t child = fork();
  if (child == 0) {
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);  // as the loader is (see main.cc)
    sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getxattr, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog prog{static_cast<unsigned short>(sizeof(code) / sizeof(code[0])), code};
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    int fd = static_cast<int>(
        syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog));
    int msg[2] = {fd, fd < 0 ? errno : 0};
    if (write(report[1], msg, sizeof(msg)) != sizeof(msg) || fd < 0) _exit(3);
    long got = syscall(SYS_getxattr, "/", "user.sentry-check", nullptr, 0);
    _exit(got >= 0 && fcntl(static_cast<int>(got), F_GETFD) >= 0 ? 0 : 2);
  }
  if (child < 0) {
    listener.detail = absl::StrCat("fork: ", std::strerror(errno));
    return finish();
  }
  report_w.Reset();
  int msg[2] = {-1, 0};
  struct pollfd pfd = {report_r.get(), POLLIN, 0};
  if (poll(&pfd, 1, 2000) != 1 || read(report_r.get(), msg, sizeof(msg)) != sizeof(msg) ||
      msg[0] < 0) {
    listener.detail = absl::StrCat(
        "seccomp(SECCOMP_FILTER_FLAG_NEW_LISTENER): ", std::strerror(msg[1] ? msg[1] : EINVAL),
        "; sentry needs Linux 5.5 or later with seccomp enabled");
    WaitOrKill(child, 0);
    return finish();
  }
  UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, child, 0)));
  UniqueFd fd(pidfd ? static_cast<int>(syscall(SYS_pidfd_getfd, pidfd.get(), msg[0], 0)) : -1);
  if (!fd) {
    listener.detail = absl::StrCat("pidfd_getfd: ", std::strerror(errno),
                                   "; sentry needs Linux 5.6 or later, and ptrace allowed on "
                                   "its own children (kernel.yama.ptrace_scope below 3)");
    WaitOrKill(child, 0);
    return finish();
  }
  Unotify listener_fd(std::move(fd));
  sync.ok = listener_fd.SetSyncWakeup();
  sync.detail = sync.ok ? "trapped calls take the fast path"
                        : "missing (Linux < 6.6): every trapped call costs a cross-CPU wake-up";
  pfd = {listener_fd.fd(), POLLIN, 0};
  seccomp_notif req{};
  int err = poll(&pfd, 1, 2000) == 1 ? -listener_fd.Receive(&req) : ETIMEDOUT;
  if (err) {
    listener.detail = absl::StrCat("no notification arrived: ", std::strerror(err));
    WaitOrKill(child, 0);
    return finish();
  }
  listener.ok = true;
  listener.detail = "SECCOMP_RET_USER_NOTIF, taken over with pidfd_getfd";
  UniqueFd null_fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (int r = listener_fd.AddFd(req.id, null_fd.get(), true, /*send=*/true); r < 0) {
    donation.detail =
        absl::StrCat("SECCOMP_IOCTL_NOTIF_ADDFD with SECCOMP_ADDFD_FLAG_SEND: ", std::strerror(-r),
                     "; sentry needs Linux 5.14 or later");
    listener_fd.Respond(req.id, 0, -ENOSYS);
  }
  int status = WaitOrKill(child, 2000);
  if (!donation.detail.empty()) return finish();
  donation.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  donation.detail = donation.ok ? "one ioctl installs the fd and answers"
                                : "the donated fd did not arrive in the child";
  finish();
}

void CheckOpenat2(std::vector<Check>& out) {
  Check c{"openat2"};
  open_how how{};
  how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  UniqueFd root(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  UniqueFd fd(static_cast<int>(syscall(SYS_openat2, root.get(), "usr", &how, sizeof(how))));
  c.ok = static_cast<bool>(fd);
  c.detail = c.ok ? "RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS"
                  : absl::StrCat(std::strerror(errno), "; sentry needs Linux 5.6 or later");
  out.push_back(c);
}

void CheckPtrace(std::vector<Check>& out) {
  Check c{"ptrace"};
  // The child is dumpable (as the loader is) before the seize.
  int ready[2] = {-1, -1};
  if (pipe2(ready, O_CLOEXEC) < 0) ready[0] = ready[1] = -1;
  pid_t child = fork();
  if (child == 0) {
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    if (ready[1] >= 0) (void)!write(ready[1], "r", 1);
    pause();
    _exit(0);
  }
  if (ready[1] >= 0) {
    close(ready[1]);
    char byte;
    (void)!read(ready[0], &byte, 1);
    close(ready[0]);
  }
  if (ptrace(PTRACE_SEIZE, child, nullptr,
             reinterpret_cast<void*>(PTRACE_O_TRACEFORK | PTRACE_O_TRACEEXEC |
                                     PTRACE_O_TRACESECCOMP | PTRACE_O_EXITKILL)) == 0) {
    c.ok = true;
    c.detail = "PTRACE_SEIZE with fork, exec and seccomp events";
  } else {
    c.detail = absl::StrCat("PTRACE_SEIZE: ", std::strerror(errno),
                            "; allow ptrace of a process's own children (Yama "
                            "kernel.yama.ptrace_scope 0-2, no seccomp profile refusing ptrace)");
  }
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  out.push_back(c);
}

int NoOp(void*) { return 0; }

// Whether clone with these flags works; the errno if not.
int TryClone(int flags) {
  static char stack[1 << 16];
  pid_t pid = clone(NoOp, stack + sizeof(stack), flags | SIGCHLD, nullptr);
  if (pid < 0) return errno;
  waitpid(pid, nullptr, 0);
  return 0;
}

void CheckNamespaces(std::vector<Check>& out) {
  Check c{"namespaces"};
  c.required = false;  // without them a run stands on the seccomp wall alone
  struct Ns {
    const char* name;
    int flag;
  };
  const Ns kAll[] = {{"user", CLONE_NEWUSER},    {"mount", CLONE_NEWNS}, {"pid", CLONE_NEWPID},
                     {"net", CLONE_NEWNET},      {"ipc", CLONE_NEWIPC},  {"uts", CLONE_NEWUTS},
                     {"cgroup", CLONE_NEWCGROUP}};
  int all = 0;
  for (const Ns& ns : kAll) all |= ns.flag;
  if (TryClone(all) == 0) {
    c.ok = true;
    c.detail = "user, mount, pid, net, ipc, uts, cgroup";
    out.push_back(c);
    return;
  }
  std::vector<std::string> missing;
  for (const Ns& ns : kAll) {
    int flags = ns.flag == CLONE_NEWUSER ? ns.flag : (ns.flag | CLONE_NEWUSER);
    if (int err = TryClone(flags)) {
      missing.push_back(absl::StrCat(ns.name, " (", strerrorname_np(err) ?: "E?", ")"));
    }
  }
  c.detail = absl::StrCat(
      "cannot make: ", missing.empty() ? "all of them together" : absl::StrJoin(missing, ", "),
      "; runs stand on the seccomp wall alone (the guest as a host uid of its own, with no "
      "network). For the namespace wall too: allow user namespaces (sysctl "
      "kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0) or run sentry outside "
      "a container whose seccomp profile refuses clone/unshare with namespace flags");
  out.push_back(c);
}

// A child makes the domain a guest gets (no rules: nothing to exec) and
// shows that it holds: opening / fails.
void CheckLandlock(std::vector<Check>& out) {
  Check c{"landlock"};
  c.required = false;  // without it the sandbox stands on its other walls
  int abi = LandlockAbi();
  if (abi == 0) {
    c.detail =
        "missing: this kernel has no Landlock (Linux 5.13+ with CONFIG_SECURITY_LANDLOCK and "
        "landlock in lsm= at boot); the seccomp wall and the namespaces hold without it";
    out.push_back(c);
    return;
  }
  pid_t child = fork();
  if (child == 0) {
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    if (ApplyLandlock(GuestLandlockPlan(abi, {}, "")) != 0) _exit(2);
    _exit(open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC) < 0 && errno == EACCES ? 0 : 3);
  }
  int status = child > 0 ? WaitOrKill(child, 2000) : 0;
  c.ok = child > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  c.detail = c.ok ? absl::StrCat("ABI ", abi, ": ", LandlockRightsText(abi))
                  : absl::StrCat("ABI ", abi, " reported, but its domain could not be made");
  out.push_back(c);
}

void CheckCgroups(std::vector<Check>& out) {
  Check c{"cgroups"};
  c.required = false;
  Cgroups cg;
  // Named as a run's are, so that the next run sweeps it if this one dies here.
  cg.Create(absl::StrCat("sentry-", getpid()), CgroupLimits{64 << 20, 16, 1.0});
  std::vector<std::string> held = cg.enforced();
  c.ok = cg.has_memory() && cg.has_pids();
  cg.Remove();
  c.detail = held.empty()
                 ? "none can be made here: rlimits hold memory (per process), processes and CPU "
                   "time instead; use --no-cgroups where the caller's own cgroup caps the run"
                 : absl::StrJoin(held, ", ");
  out.push_back(c);
}

// Whose ids the sandbox's are on the host (see DESIGN.md, "Who makes the
// sandbox"). Returns the id mode's word in `walls` (as a run's; "" for root).
std::string CheckIds(std::vector<Check>& out) {
  Check c{"ids"};
  c.required = false;
  c.ok = true;
  if (geteuid() == 0) {
    c.detail = "root: the sandbox's ids map to host ids nobody owns";
    out.push_back(c);
    return "";
  }
  SubidPlan plan = PlanSubids(1000, 1000);
  absl::Status probe = plan.usable ? ProbeSubids(plan) : absl::OkStatus();
  std::string wall = "userns-single-id";
  if (plan.usable && probe.ok()) {
    wall = "userns-subid-range";
    c.detail = absl::StrCat(
        "uid ", getuid(), " without root, subordinate-range mode: the guest's ids 1-",
        plan.uids.count, " are host uids ", plan.uids.start, "-",
        plan.uids.start + plan.uids.count - 1, " (its 1000 is ", plan.HostUid(1000),
        "), its 0 (--root) is uid ", getuid(),
        "; processes, inotify and mqueues still count against uid ", getuid(),
        ", the user namespace's maker; --userns=single gives the guest uid ", getuid(), " itself");
  } else if (plan.usable) {
    c.ok = false;
    c.detail = absl::StrCat(probe.message(),
                            " (--userns=range fails so; the default runs in single-id mode)");
  } else {
    c.detail = absl::StrCat(
        "uid ", getuid(), " without root, single-id mode (", plan.why_not,
        "): the guest's user is uid ", getuid(),
        " on the host, reads only what it may read, and no other id is mapped; for a range: "
        "`usermod --add-subuids 100000-165535 --add-subgids 100000-165535 USER` with uidmap "
        "installed");
  }
  out.push_back(c);
  return wall;
}

// Without root: which mechanism holds each limit (no cgroup can be made).
void CheckRootlessLimits(std::vector<Check>& out) {
  Check c{"limits"};
  c.required = false;
  c.ok = true;
  DelegatedCgroup v2 = FindOwnDelegatedCgroup();
  std::string cgroup = v2.dir.empty() ? absl::StrCat("no cgroup (", v2.why_not, ")")
                                      : absl::StrCat("a delegated cgroup v2 subtree (", v2.dir,
                                                     ": ", absl::StrJoin(v2.controllers, " "),
                                                     ") is found but not used yet");
  c.detail = absl::StrCat(
      cgroup,
      ": --memory by RLIMIT_AS per process, --pids by the sentry's task count and RLIMIT_NPROC, "
      "--timeout by the sentry's clock, --disk by the store; --cpus is refused (a CPU quota "
      "needs a cgroup: run as root)");
  out.push_back(c);
}

}  // namespace

int CheckCommand(const std::vector<std::string>& args) {
  bool json = false;
  for (const std::string& a : args) {
    if (a == "--json") {
      json = true;
    } else if (a == "-h" || a == "--help") {
      std::fputs(kCheckUsage, stdout);
      return 0;
    } else {
      std::fprintf(stderr, "sentry check: unknown flag %s%s\n(see 'sentry check --help')\n",
                   a.c_str(), DidYouMean(a, {"--json", "--help"}).c_str());
      return kExitSentryError;
    }
  }
  std::vector<Check> checks;
  bool root = geteuid() == 0;
  std::string id_wall = CheckIds(checks);
  CheckSeccomp(checks);
  CheckOpenat2(checks);
  CheckPtrace(checks);
  CheckNamespaces(checks);
  if (root) {
    CheckCgroups(checks);
  } else {
    CheckRootlessLimits(checks);
  }
  CheckLandlock(checks);

  bool runs = true, all_walls = true, landlock = false;
  for (const Check& c : checks) {
    runs = runs && (c.ok || !c.required);
    all_walls = all_walls && (c.ok || c.name != "namespaces");
    landlock = landlock || (c.ok && c.name == "landlock");
  }
  utsname u{};
  uname(&u);
  if (json) {
    nlohmann::ordered_json walls = nlohmann::ordered_json::array({"seccomp"});
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    if (all_walls) walls.push_back("namespaces");
    if (all_walls && !id_wall.empty()) walls.push_back(id_wall);
    if (landlock) walls.push_back(LandlockWallName(LandlockAbi()));
    for (const Check& c : checks) {
      rows.push_back({{"name", JsonText(c.name)},
                      {"ok", c.ok},
                      {"required", c.required},
                      {"detail", JsonText(c.detail)}});
    }
    nlohmann::ordered_json out = {{"runs", runs},
                                  {"walls", std::move(walls)},
                                  {"kernel", JsonText(u.release)},
                                  {"checks", std::move(rows)}};
    std::printf("%s\n", JsonDump(out).c_str());
  } else {
    std::printf("sentry check (Linux %s %s):\n", u.release, u.machine);
    for (const Check& c : checks) {
      const char* mark = c.ok ? "ok" : c.required ? "MISSING" : "missing";
      std::printf("  %-8s %-20s %s\n", mark, c.name.c_str(), c.detail.c_str());
    }
    std::string ids = all_walls ? id_wall : "";
    std::printf("  walls: seccomp%s%s%s\n", all_walls ? ", namespaces" : "",
                ids.empty() ? "" : (", " + ids).c_str(),
                landlock ? (", " + LandlockWallName(LandlockAbi())).c_str() : "");
    std::printf("%s\n", !runs       ? "sentry cannot run here: see MISSING above."
                        : all_walls ? "sentry runs here."
                                    : "sentry runs here, on the seccomp wall alone (see "
                                      "namespaces above).");
  }
  return runs ? 0 : 1;
}

}  // namespace sentry::cli
