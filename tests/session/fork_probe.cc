// fork_probe: checks, on this kernel, the kernel facts a session fork
// (issue 26) is built on, with real processes and no sentry code: a
// miniature of the sandbox (a user/pid/net/ipc/uts/mnt namespace set, caps
// dropped, no_new_privs, a seccomp filter whose listener a supervisor took
// with pidfd_getfd, ptrace with TRACEFORK) forks a child into namespaces of
// its own, and the child is handed to a second supervisor.
//
// The guest is confined as the loader confines it: every capability dropped,
// no_new_privs, a Landlock domain, a seccomp filter with a listener, ptrace.
//
// Roles (each a real process):
//   S1: this program's first process, the sandbox's supervisor: it made G,
//       holds G's listener L1 and is G's ptracer.
//   G:  the guest (the session kernel), in the sandbox's namespaces.
//   C:  G's child, made by clone(NEWUSER|NEWPID|NEWNET|NEWIPC|NEWUTS|NEWNS).
//   S2: the child's supervisor (forked by S1 while single-threaded): it takes
//       over ptrace, writes C's uid/gid maps from G's user namespace, and
//       takes C's new listener L2 with pidfd_getfd.
//
// The facts, in the order they happen:
//   - the sandbox's filter can gate the fork: clone with exactly the fork's
//     flags stops for the ptracer (RET_TRACE), who refuses it without a
//     grant; other namespace flags are EPERM in BPF;
//   - a guest with every cap dropped, no_new_privs, under a filter and a
//     ptracer, can clone(NEWUSER|NEWPID|NEWNET|NEWIPC|NEWUTS|NEWNS), and
//     the child's six namespaces differ from the guest's (/proc/PID/ns);
//   - a filter chain holds ONE listener: a second NEW_LISTENER is EBUSY
//     while the first is open (has_duplicate_listener), so a child cannot
//     take a listener of its own while its parent's supervisor keeps L1;
//   - once the supervisor closes L1 the old filter fails closed (its
//     USER_NOTIF answers ENOSYS), and parent (TSYNC: all its threads) and
//     child each stack a filter with a new listener; a tie goes to the
//     newest filter, so each side's trapped calls reach its own supervisor;
//   - the supervisor, not the guest, holds each new listener: seccomp() with
//     NEW_LISTENER stops for the ptracer (RET_TRACE), which refuses it
//     without a grant, else sets the flags, runs the call to its exit, takes
//     the fd (pidfd_getfd) and makes the stopped task close its copy;
//   - ptrace hand-off: SIGSTOP queued at the ptrace-stop, PTRACE_DETACH,
//     the second supervisor seizes it; it never runs untraced;
//   - the child's id maps are written from the guest's user namespace;
//   - a helper in the child's user and mount namespaces mounts over a path
//     of the child's mount view only (the sentry: its own store);
//   - the child inherits the parent's fds (its listening socket: a shared
//     open file description); the child's supervisor replaces each one in
//     place with ADDFD SETFD while the child waits in a notification;
//   - the child cannot name the parent (pid ns) nor reach its abstract or
//     127.0.0.1 sockets (net ns); the parent CAN signal the child natively
//     (a descendant pid ns is visible), by pid, by kill(-1) (same uid) and by
//     its process group (the child keeps the parent's until it calls
//     setsid): the gaps the sentry's pid rule closes.
//
// Each fact prints one line "ok NAME" or "FAIL NAME: detail"; the exit
// status is 0 when all hold, 1 otherwise, 77 when user namespaces cannot be
// made here (skipped).
#include <dirent.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/user.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tests/session/fork_probe_util.h"

namespace {

using namespace fork_probe;  // NOLINT: the probe's own helpers

// The child C: it runs once S2 has seized it, continued it and mapped its ids.
[[noreturn]] void ChildMain(const char* abstract_name, int tcp_port, int inherited) {
  alarm(10);
  for (int i = 0; i < 2000 && getuid() == 65534; ++i) usleep(1000);
  Check(getuid() == 0, "child: uid map written by S2 from G's user namespace");
  Check(getpid() == 1, "child: pid 1 of its own pid namespace");
  // Its filter: getppid to its own listener; uname not (G's filter sends it to L1).
  int l2 = InstallFilter({SYS_getppid});
  Check(l2 >= 0, "child: a new listener stacks on the inherited filter once S1 closed L1");
  errno = 0;
  Check(fcntl(l2, F_GETFD) < 0 && errno == EBADF,
        "child: it never holds its listener (S2 took it and closed its copy)");
  long ppid = syscall(SYS_getppid);
  Check(ppid == kAnswerGetppid,
        "child: tie (both filters USER_NOTIF) goes to the newest listener (S2)",
        "getppid=" + std::to_string(ppid));
  // The parent's listening socket it inherited (a shared open file
  // description) was replaced while its getppid waited.
  struct stat sb {};
  errno = 0;
  Check(fstat(inherited, &sb) == 0 && S_ISCHR(sb.st_mode) &&
            accept4(inherited, nullptr, nullptr, 0) < 0 && errno == ENOTSOCK,
        "child: an fd it inherited (the parent's listener) is /dev/null now");
  utsname u{};
  errno = 0;
  int r = uname(&u);
  Check(r < 0 && errno == ENOSYS,
        "child: a call only the old filter traps fails closed (ENOSYS), reaches no supervisor",
        "uname=" + std::to_string(r));
  // Walls: the parent is not in its pid namespace; sockets are not reached.
  errno = 0;
  Check(kill(-1, 0) < 0 && errno == ESRCH,
        "child: kill(-1) reaches no process (G not in its pid ns)");
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  std::memcpy(un.sun_path + 1, abstract_name, std::strlen(abstract_name));
  socklen_t len = offsetof(sockaddr_un, sun_path) + 1 + std::strlen(abstract_name);
  errno = 0;
  Check(connect(s, reinterpret_cast<sockaddr*>(&un), len) < 0 && errno == ECONNREFUSED,
        "child: G's abstract unix socket unreachable (net ns)");
  close(s);
  s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_port = htons(tcp_port);
  in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  errno = 0;
  Check(connect(s, reinterpret_cast<sockaddr*>(&in), sizeof(in)) < 0,
        "child: G's 127.0.0.1 listener unreachable (own loopback, down until brought up)");
  close(s);
  _exit(0);
}

// The guest G, in the sandbox's namespaces under S1's filter and ptrace.
[[noreturn]] void GuestMain(int go, int l1_pipe, pid_t s1) {
  alarm(10);
  char buf[64];
  ReadLine(go, buf, sizeof(buf));  // S1 wrote our id maps
  if (!LoopbackUp()) Report("FAIL guest: lo up");
  DropCaps();
  int l1 = InstallFilter({SYS_getppid, SYS_uname}, /*fork_gate=*/true);
  std::string num = std::to_string(l1) + "\n";
  (void)!write(l1_pipe, num.data(), num.size());
  ReadLine(go, buf, sizeof(buf));  // S1 took L1 and seized us
  close(l1);                       // as the loader does: the guest never holds it
  errno = 0;
  Check(InstallFilter({SYS_getppid}) < 0 && errno == EPERM,
        "guest: a listener of its own without a grant: S1 refuses it at the trace stop (EPERM)");
  // Sockets the child must not reach.
  std::string abstract_name = "sentry-fork-probe-" + std::to_string(s1);
  int a = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  std::memcpy(un.sun_path + 1, abstract_name.data(), abstract_name.size());
  socklen_t len = offsetof(sockaddr_un, sun_path) + 1 + abstract_name.size();
  Check(bind(a, reinterpret_cast<sockaddr*>(&un), len) == 0 && listen(a, 4) == 0,
        "guest: abstract listener");
  int t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t inlen = sizeof(in);
  Check(bind(t, reinterpret_cast<sockaddr*>(&in), sizeof(in)) == 0 && listen(t, 4) == 0 &&
            getsockname(t, reinterpret_cast<sockaddr*>(&in), &inlen) == 0,
        "guest: 127.0.0.1 listener");
  // The fork: caps dropped, no_new_privs, a filter and a ptracer do not stop it.
  // A Landlock domain as the loader makes (every fs right handled, the
  // signal and abstract-socket scopes; TCP rights left out here so that the
  // socket checks below show the net namespace).
  long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, 1 /*VERSION*/);
  if (abi >= 1) {
    struct {
      uint64_t fs, net, scoped;
    } attr{abi >= 5   ? 0xffffu
           : abi >= 3 ? 0x7fffu
           : abi >= 2 ? 0x3fffu
                      : 0x1fffu,
           0, abi >= 6 ? 3u : 0u};
    size_t size = abi >= 6 ? 24 : abi >= 4 ? 16 : 8;
    long rs = syscall(SYS_landlock_create_ruleset, &attr, size, 0);
    Check(rs >= 0 && syscall(SYS_landlock_restrict_self, rs, 0) == 0,
          "guest: in a Landlock domain (ABI " + std::to_string(abi) + ")");
  } else {
    Report("ok guest: no Landlock on this kernel");
  }
  errno = 0;
  Check(RawClone(kForkFlags) < 0 && errno == EPERM,
        "guest: the fork's clone without a grant: S1 refuses it at the trace stop (EPERM)");
  errno = 0;
  Check(RawClone(SIGCHLD | CLONE_NEWNET) < 0 && errno == EPERM,
        "guest: clone with other namespace flags: EPERM in the filter");
  // A second thread, blocked, as the kernel's reader threads are.
  int tpipe[2];
  (void)!pipe(tpipe);
  std::atomic<long> thread_ppid{0};
  std::thread other([&] {
    char b;
    (void)!read(tpipe[0], &b, 1);
    thread_ppid = syscall(SYS_getppid);
  });
  long c = RawClone(kForkFlags);
  if (c == 0) ChildMain(abstract_name.c_str(), ntohs(in.sin_port), a);
  Check(c > 0, "guest: clone(NEWUSER|NEWPID|NEWNET|NEWIPC|NEWUTS|NEWNS) with caps dropped");
  // The gap the sentry's pid rule must close: the parent names the child.
  Check(c > 0 && kill(static_cast<pid_t>(c), 0) == 0,
        "guest: kill(child, 0) succeeds natively (the gap: a descendant pid ns is visible)");
  Check(kill(-1, 0) == 0, "guest: kill(-1, 0) reaches the child natively (same uid: the gap)");
  // S1 closed L1 at the fork stop: the old filter now fails closed (ENOSYS)
  // where no newer filter takes the call, and the parent moves to a new
  // listener as the child does.
  // TSYNC moves every thread of the process to the new filter (a listener
  // with TSYNC needs TSYNC_ESRCH).
  int lp = InstallFilter({SYS_getppid, SYS_uname}, false,
                         SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_TSYNC |
                             SECCOMP_FILTER_FLAG_TSYNC_ESRCH);
  Check(lp >= 0, "guest: once S1 closed L1, a new listener stacks on all its threads (TSYNC)");
  errno = 0;
  Check(fcntl(lp, F_GETFD) < 0 && errno == EBADF,
        "guest: it never holds its new listener (S1 took it and closed its copy)");
  long pp = syscall(SYS_getppid);
  Check(pp == kAnswerParent, "guest: its trapped calls reach S1 on its new listener",
        "getppid=" + std::to_string(pp));
  (void)!write(tpipe[1], "x", 1);
  other.join();
  Check(thread_ppid == kAnswerParent, "guest: its other thread's calls too",
        "getppid=" + std::to_string(thread_ppid.load()));
  int status = 0;
  waitpid(static_cast<pid_t>(c), &status, 0);
  Check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "guest: child exited 0",
        "status " + std::to_string(status));
  _exit(0);
}

// S2: takes C over from S1 and serves C's new listener.
[[noreturn]] void Supervisor2(pid_t g, pid_t c, int seized_pipe) {
  alarm(10);
  long seized = ptrace(PTRACE_SEIZE, c, 0,
                       PTRACE_O_TRACEFORK | PTRACE_O_TRACECLONE | PTRACE_O_TRACESECCOMP |
                           PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL);
  Check(seized == 0, "S2: PTRACE_SEIZE of the child S1 detached into group-stop");
  (void)!write(seized_pipe, "s\n", 2);  // S1 may let the parent run again
  int status = 0;
  pid_t w = waitpid(c, &status, __WALL);
  // A group-stop (event stop) or, if it had not dequeued the SIGSTOP yet,
  // that signal's delivery stop: either way it ran no instruction untraced.
  Check(w == c && WIFSTOPPED(status) && WSTOPSIG(status) == SIGSTOP,
        "S2: the child is reported stopped (it never ran untraced)",
        "status " + std::to_string(status));
  // Its id maps, written from G's user namespace (the child's parent one),
  // by a single-threaded helper as sentry/net/netns_socket.cc joins it.
  pid_t h = fork();
  if (h == 0) {
    std::string userns = "/proc/" + std::to_string(g) + "/ns/user";
    int fd = open(userns.c_str(), O_RDONLY | O_CLOEXEC);
    std::string base = "/proc/" + std::to_string(c);
    bool ok = fd >= 0 && setns(fd, CLONE_NEWUSER) == 0 && WriteFile(base + "/uid_map", "0 0 1\n") &&
              WriteFile(base + "/setgroups", "deny\n") && WriteFile(base + "/gid_map", "0 0 1\n");
    _exit(ok ? 0 : 1);
  }
  int hs = 0;
  waitpid(h, &hs, 0);
  Check(WIFEXITED(hs) && WEXITSTATUS(hs) == 0, "S2: wrote the child's uid/gid map from G's userns");
  // The child's mount view is a copy of the parent's (with the parent's
  // store in it): a helper in the child's user and mount namespaces mounts
  // over a path there (the sentry: its own store over the parent's).
  h = fork();
  if (h == 0) {
    std::string ns = "/proc/" + std::to_string(c) + "/ns/";
    int user = open((ns + "user").c_str(), O_RDONLY | O_CLOEXEC);
    int mnt = open((ns + "mnt").c_str(), O_RDONLY | O_CLOEXEC);
    bool ok = user >= 0 && mnt >= 0 && setns(user, CLONE_NEWUSER) == 0 &&
              setns(mnt, CLONE_NEWNS) == 0 &&
              mount("sentry-fork", "/tmp", "tmpfs", 0, nullptr) == 0;
    _exit(ok ? 0 : 1);
  }
  waitpid(h, &hs, 0);
  auto mounts = [](pid_t pid) {
    std::string path = "/proc/" + std::to_string(pid) + "/mountinfo", all;
    if (FILE* f = std::fopen(path.c_str(), "r")) {
      char line[4096];
      while (std::fgets(line, sizeof(line), f)) all += line;
      std::fclose(f);
    }
    return all.find(" sentry-fork ") != std::string::npos;
  };
  Check(WIFEXITED(hs) && WEXITSTATUS(hs) == 0 && mounts(c) && !mounts(g),
        "S2: mounted over a path in the child's mount namespace only (from its userns)");
  kill(c, SIGCONT);
  ptrace(PTRACE_CONT, c, 0, 0);
  // Serve: the child's seccomp(NEW_LISTENER) stops here (S2 takes the
  // listener), then one getppid; the child's other stops are continued.
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, c, 0));
  int l2 = -1;
  bool answered = false;
  while (true) {
    pollfd p{l2, POLLIN, 0};
    if (l2 >= 0 && !answered && poll(&p, 1, 5) == 1 && (p.revents & POLLIN)) {
      seccomp_notif n{};
      seccomp_notif_resp resp{};
      if (ioctl(l2, SECCOMP_IOCTL_NOTIF_RECV, &n) == 0) {
        Check(n.pid == static_cast<uint32_t>(c) && n.data.nr == SYS_getppid,
              "S2: the child's getppid arrived on L2", "nr " + std::to_string(n.data.nr));
        resp.id = n.id;
        resp.val = kAnswerGetppid;
        // Every fd the child inherited (but the probe's report pipe) is
        // replaced in place while it waits: ADDFD with SETFD.
        int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        std::string dir = "/proc/" + std::to_string(c) + "/fd";
        int replaced = 0, failed = 0;
        if (DIR* d = opendir(dir.c_str())) {
          while (dirent* e = readdir(d)) {
            int fd = std::atoi(e->d_name);
            if (e->d_name[0] == '.' || fd < 3 || fd == g_results) continue;
            seccomp_notif_addfd add{};
            add.id = n.id;
            add.flags = SECCOMP_ADDFD_FLAG_SETFD;
            add.srcfd = static_cast<uint32_t>(devnull);
            add.newfd = static_cast<uint32_t>(fd);
            (ioctl(l2, SECCOMP_IOCTL_NOTIF_ADDFD, &add) == fd ? replaced : failed)++;
          }
          closedir(d);
        }
        close(devnull);
        Check(replaced >= 4 && failed == 0,
              "S2: replaced each fd the child inherited (ADDFD SETFD during its notification)",
              std::to_string(replaced) + " replaced, " + std::to_string(failed) + " failed");
        ioctl(l2, SECCOMP_IOCTL_NOTIF_SEND, &resp);
        answered = true;
      }
    }
    w = waitpid(c, &status, __WALL | WNOHANG);
    if (w == c) {
      int deferred = 0;
      if (WIFEXITED(status) || WIFSIGNALED(status)) break;
      if ((status >> 16) == PTRACE_EVENT_SECCOMP) {
        user_regs_struct regs{};
        ptrace(PTRACE_GETREGS, c, 0, &regs);
        if (regs.orig_rax == SYS_seccomp && l2 < 0) {
          l2 = TakeListenerAt(c, pidfd, &deferred);
          Check(l2 >= 0, "S2: took the child's listener at its seccomp stop");
        } else {
          regs.orig_rax = static_cast<unsigned long long>(-1);
          regs.rax = static_cast<unsigned long long>(-EPERM);
          ptrace(PTRACE_SETREGS, c, 0, &regs);
        }
      }
      int sig = WIFSTOPPED(status) && (status >> 16) == 0 ? WSTOPSIG(status) : deferred;
      if (sig == SIGSTOP) sig = 0;
      ptrace(PTRACE_CONT, c, 0, sig);
    } else if (w < 0) {
      break;  // reaped by its parent G
    }
  }
  _exit(0);
}

int Main() {
  alarm(20);
  int results[2], go[2], l1p[2], seized[2];
  if (pipe(results) || pipe(go) || pipe(l1p) || pipe(seized)) return 1;
  g_results = results[1];
  // One listener per filter chain, in a process of its own.
  pid_t e = fork();
  if (e == 0) {
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    int first = InstallFilter({SYS_getppid});
    errno = 0;
    Check(first >= 0 && InstallFilter({SYS_getppid}) < 0 && errno == EBUSY,
          "a second listener in one filter chain is EBUSY while the first is open");
    close(first);
    Check(InstallFilter({SYS_getppid}) >= 0, "and stacks once the first listener is closed");
    _exit(0);
  }
  waitpid(e, nullptr, 0);
  uid_t uid = getuid();
  gid_t gid = getgid();
  pid_t s1 = getpid();
  long g = RawClone(kForkFlags);
  if (g == 0) GuestMain(go[0], l1p[1], s1);
  if (g < 0) {
    std::printf("skip: cannot make the sandbox's namespaces here: %s\n", std::strerror(errno));
    return 77;
  }
  std::string base = "/proc/" + std::to_string(g);
  if (!WriteFile(base + "/uid_map", "0 " + std::to_string(uid) + " 1\n") ||
      !WriteFile(base + "/setgroups", "deny\n") ||
      !WriteFile(base + "/gid_map", "0 " + std::to_string(gid) + " 1\n")) {
    std::printf("FAIL S1: the guest's id maps: %s\n", std::strerror(errno));
    kill(static_cast<pid_t>(g), SIGKILL);
    return 1;
  }
  (void)!write(go[1], "1\n", 2);
  char buf[32];
  ReadLine(l1p[0], buf, sizeof(buf));
  int gpidfd = static_cast<int>(syscall(SYS_pidfd_open, g, 0));
  int l1 = static_cast<int>(syscall(SYS_pidfd_getfd, gpidfd, std::atoi(buf), 0));
  Check(l1 >= 0, "S1: took the guest's listener with pidfd_getfd");
  Check(ptrace(PTRACE_SEIZE, g, 0,
               PTRACE_O_TRACEFORK | PTRACE_O_TRACECLONE | PTRACE_O_TRACESECCOMP |
                   PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL) == 0,
        "S1: seized the guest");
  (void)!write(go[1], "2\n", 2);
  pid_t c = -2, s2 = -2;
  int clone_tries = 0;
  bool child_stopped = false, handed = false, guest_gone = false, relisten = false;
  pid_t held = -1;  // the forking thread, kept at its fork stop during the hand-off
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!guest_gone && std::chrono::steady_clock::now() < deadline) {
    if (c > 0 && child_stopped && !handed) {
      std::string diff;
      for (const char* ns : kNs) {
        if (NsId(c, ns) == NsId(g, ns)) diff += std::string(ns) + " ";
      }
      Check(diff.empty(), "S1: child's user/pid/net/ipc/uts/mnt namespaces all new (from /proc)",
            "shared: " + diff);
      Check(Pgrp(c) == Pgrp(static_cast<pid_t>(g)) && Pgrp(c) > 0,
            "S1: the child is in the parent's process group until it calls setsid "
            "(kill(-pgrp) would reach it)");
      // Hand-off: the SIGSTOP is queued while the child is in its
      // ptrace-stop, so it group-stops before returning to user code (a
      // signal given as PTRACE_DETACH's data is dropped at an event stop).
      // S2 (forked now: S1 is single-threaded) seizes it.
      Check(kill(c, SIGSTOP) == 0 && ptrace(PTRACE_DETACH, c, 0, 0) == 0,
            "S1: detached the child into group-stop");
      s2 = fork();
      if (s2 == 0) Supervisor2(static_cast<pid_t>(g), c, seized[1]);
      handed = true;
    }
    pollfd p[2] = {{l1, POLLIN, 0}, {held > 0 ? seized[0] : -1, POLLIN, 0}};
    if (poll(p, 2, 5) > 0) {
      if (p[1].revents & POLLIN) {
        char buf2[8];
        ReadLine(seized[0], buf2, sizeof(buf2));
        // The parent could SIGCONT the group-stopped child: it stays stopped
        // until the child is traced again.
        std::string state = "/proc/" + std::to_string(held) + "/stat";
        FILE* f = std::fopen(state.c_str(), "r");
        char st = '?';
        if (f != nullptr) {
          (void)!std::fscanf(f, "%*d %*s %c", &st);
          std::fclose(f);
        }
        Check(st == 't',
              "S1: the forking thread was held (traced-stopped) until S2 seized the child",
              std::string("state ") + st);
        ptrace(PTRACE_CONT, held, 0, 0);
        held = -1;
      }
      if (p[0].revents & POLLIN) {
        seccomp_notif n{};
        if (ioctl(l1, SECCOMP_IOCTL_NOTIF_RECV, &n) == 0) {
          seccomp_notif_resp resp{};
          resp.id = n.id;
          if (n.pid != static_cast<uint32_t>(c) && n.data.nr == SYS_getppid) {
            resp.val = kAnswerParent;
          } else {
            Report("FAIL S1: unexpected notification nr " + std::to_string(n.data.nr) + " from " +
                   std::to_string(n.pid));
            resp.error = -EACCES;
          }
          ioctl(l1, SECCOMP_IOCTL_NOTIF_SEND, &resp);
        }
      }
    }
    int status = 0;
    pid_t w = waitpid(-1, &status, __WALL | WNOHANG);
    if (w <= 0) continue;
    if (w != c && w != s2) {  // the guest or one of its threads
      if (WIFEXITED(status) || WIFSIGNALED(status)) {
        if (w == g) guest_gone = true;
        continue;
      }
      int event = status >> 16;
      int deferred = 0;
      if (event == PTRACE_EVENT_SECCOMP) {
        // The fork gate: the first try is refused (no grant yet), the second
        // allowed; the flags are in a register, so nothing can change them
        // after this check.
        user_regs_struct regs{};
        ptrace(PTRACE_GETREGS, w, 0, &regs);
        bool ok = regs.orig_rax == SYS_clone && regs.rdi == kForkFlags && ++clone_tries == 2;
        if (regs.orig_rax == SYS_seccomp && relisten) {
          // The granted re-listen: the flags are set here, in a register.
          regs.rsi = SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_TSYNC |
                     SECCOMP_FILTER_FLAG_TSYNC_ESRCH;
          ptrace(PTRACE_SETREGS, w, 0, &regs);
          l1 = TakeListenerAt(w, gpidfd, &deferred);
          Check(l1 >= 0, "S1: took the guest's new listener at its seccomp stop");
          relisten = false;
          ok = true;
        }
        if (!ok) {
          regs.orig_rax = static_cast<unsigned long long>(-1);
          regs.rax = static_cast<unsigned long long>(-EPERM);
          ptrace(PTRACE_SETREGS, w, 0, &regs);
        }
      }
      if (event == PTRACE_EVENT_FORK) {
        unsigned long msg = 0;
        ptrace(PTRACE_GETEVENTMSG, w, 0, &msg);
        c = static_cast<pid_t>(msg);
        // The guest is stopped (and single-threaded here): closing L1 turns
        // its filter into one that fails closed; both sides re-listen.
        close(l1);
        l1 = -1;
        relisten = true;
        held = w;
        continue;
      }
      int sig = WIFSTOPPED(status) && event == 0 ? WSTOPSIG(status) : deferred;
      ptrace(PTRACE_CONT, w, 0, sig);
    } else if (w == c && !handed && WIFSTOPPED(status)) {
      child_stopped = true;
    }
  }
  if (!guest_gone) {
    Report("FAIL S1: timed out");
    kill(static_cast<pid_t>(g), SIGKILL);
  }
  if (s2 > 0) waitpid(s2, nullptr, 0);
  close(results[1]);
  // Collect every process's lines.
  std::string all;
  char chunk[4096];
  ssize_t n;
  while ((n = read(results[0], chunk, sizeof(chunk))) > 0) all.append(chunk, n);
  std::fputs(all.c_str(), stdout);
  int oks = 0, fails = 0;
  for (size_t pos = 0; pos < all.size();) {
    size_t end = all.find('\n', pos);
    std::string line = all.substr(pos, end - pos);
    if (line.rfind("ok ", 0) == 0) ++oks;
    if (line.rfind("FAIL", 0) == 0) ++fails;
    pos = end == std::string::npos ? all.size() : end + 1;
  }
  constexpr int kExpected = 40;
  std::printf("%d ok, %d failed (of %d)\n", oks, fails, kExpected);
  return fails == 0 && oks == kExpected ? 0 : 1;
}

}  // namespace

int main() { return Main(); }
