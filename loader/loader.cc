#include "loader/loader.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/close_range.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "loader/census_filter.h"
#include "loader/launch.h"
#include "loader/loader_internal.h"
#include "loader/pool_caps.h"
#include "vfs/store.h"

namespace sentry {
namespace loader_internal {

LOADER_CODE void Report(const Prepared& p, LoaderStep step, int err, int value, int tty_master) {
  LoaderMessage m{step, err, value, tty_master};
  ssize_t n = write(p.pipes.report_write, &m, sizeof(m));
  (void)n;
}

LOADER_CODE [[noreturn]] void Fail(const Prepared& p, LoaderStep step) {
  Report(p, step, errno);
  _exit(127);
}

// n in decimal at out (room for 11 chars and the NUL), async-signal-safe.
LOADER_CODE void FormatDecimal(int n, char* out) {
  char digits[12];
  int len = 0;
  do {
    digits[len++] = static_cast<char>('0' + n % 10);
    n /= 10;
  } while (n > 0 && len < 11);
  for (int i = 0; i < len; ++i) out[i] = digits[len - 1 - i];
  out[len] = '\0';
}

}  // namespace loader_internal

namespace {

using loader_internal::BuildMountView;
using loader_internal::Fail;
using loader_internal::FormatDecimal;
using loader_internal::kNewRoot;
using loader_internal::Prepared;
using loader_internal::ReadyNetns;
using loader_internal::Report;

// Whatever threads the sentry has when it clones the loader, the clone copies
// their locks but not them (a cgroup-making thread started before the clone
// once hung the loader here). So the loader and the guest before its execve
// make raw system calls where glibc would reach for the other threads: its
// setresuid/setresgid/setgroups apply the change to every thread of the
// process (and wait for threads that do not exist here), and its fork takes
// the allocator's locks and runs atfork handlers. Each call below changes
// the calling task alone.
LOADER_CODE int RawSetIds(uid_t uid, gid_t gid) {
  if (syscall(SYS_setresgid, gid, gid, gid) < 0) return -1;
  return static_cast<int>(syscall(SYS_setresuid, uid, uid, uid));
}

// The sandbox's ceilings on the kernel's per-user counts, in its own user
// namespace's /proc/sys/user (the loader is that namespace's root, which
// alone may write them; the host's /proc still shows them before the
// pivot). A kernel without one of the files has no such count to cap.
LOADER_CODE void CapUserNsCounts(const Prepared& p) {
  for (const UserNsCap& cap : kUserNsCaps) {
    int fd = open(cap.file, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) continue;
      Fail(p, LoaderStep::kPoolCaps);
    }
    size_t n = strlen(cap.value);
    if (write(fd, cap.value, n) != static_cast<ssize_t>(n)) Fail(p, LoaderStep::kPoolCaps);
    close(fd);
  }
}

LOADER_CODE void DropCapabilities(const Prepared& p) {
  for (int cap = 0; cap <= 63; ++cap) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL) {
      // A caller without root, without a user namespace, has no capability
      // to drop, and no_new_privs keeps execve from granting any.
      if (errno == EPERM && p.spec->single_id && !p.spec->namespaces) break;
      Fail(p, LoaderStep::kDropCaps);
    }
  }
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
}

// The guest starts as a fresh process would: no signal blocked (the sentry
// blocks the ones it reads from a signalfd) and none ignored.
LOADER_CODE void ResetSignals() {
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) signal(sig, SIG_DFL);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

// The guest's session (see LoaderSpec::tty_fds). With a terminal: a pty of
// the sandbox's devpts, opened as the guest's own user (its slave is then
// the guest's, mode 0620, as a login's), the slave on the chosen fds, a new
// session and the slave as its controlling terminal (as login_tty(3) does);
// returns the master's fd, which the sentry takes before the go. Without:
// a process group of its own in pid 1's session, as a shell's job, and -1.
// (Left in pid 1's group, the guest's group would be orphaned: no member's
// parent in another group of the session, so the kernel would discard the
// SIGTSTP, SIGTTIN and SIGTTOU sent to it, which stop a process natively.)
LOADER_CODE int GuestSession(const Prepared& p) {
  int fds = p.spec->tty_fds & 7;
  if (fds == 0) {
    setpgid(0, 0);
    return -1;
  }
  int master = open(kGuestPtmxPath, O_RDWR | O_NOCTTY | O_CLOEXEC);
  int unlock = 0;
  if (master < 0 || ioctl(master, TIOCSPTLCK, &unlock) < 0) Fail(p, LoaderStep::kTerminal);
  int slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (slave < 0) Fail(p, LoaderStep::kTerminal);
  int first = -1;
  for (int i = 0; i < 3; ++i) {
    if (!(fds & (1 << i))) continue;
    if (dup2(slave, i) < 0) Fail(p, LoaderStep::kTerminal);
    if (first < 0) first = i;
  }
  close(slave);
  if (setsid() < 0 || ioctl(first, TIOCSCTTY, 0) < 0) Fail(p, LoaderStep::kTerminal);
  return master;
}

// The extra fds at 3, 4, ... (as runc's --preserve-fds places them), kept
// across the execve. Each is first copied above the targets, so that no
// placement overwrites a source not yet placed; the loader's pipes lie
// above them already (see StartLoader).
LOADER_CODE void PlaceExtraFds(const Prepared& p) {
  const std::vector<int>& extra = p.spec->extra_fds;
  size_t n = extra.size();
  if (n == 0 || n > kMaxExtraFds) return;
  int top = 3 + static_cast<int>(n);
  int high[kMaxExtraFds];
  for (size_t i = 0; i < n; ++i) {
    high[i] = fcntl(extra[i], F_DUPFD_CLOEXEC, top);
    if (high[i] < 0) Fail(p, LoaderStep::kExtraFds);
  }
  for (size_t i = 0; i < n; ++i) {
    if (dup2(high[i], 3 + static_cast<int>(i)) < 0) Fail(p, LoaderStep::kExtraFds);
    close(high[i]);
  }
}

LOADER_CODE [[noreturn]] void RunGuest(const Prepared& p) {
  // With the capabilities the helper needs, while the guest still has them.
  if (p.spec->namespaces) loader_internal::StartDetach(const_cast<Prepared&>(p));
  ResetSignals();
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  for (int i = 0; i < 3; ++i) {
    if (p.spec->stdio[i] >= 0 && dup2(p.spec->stdio[i], i) < 0) Fail(p, LoaderStep::kStdio);
  }
  if (p.spec->namespaces && p.spec->helper_maps) {
    for (int i = 0; i < 3; ++i) {
      if ((p.spec->stdio_owned & (1 << i)) && p.spec->stdio[i] >= 0 &&
          syscall(SYS_fchown, i, p.spec->uid, p.spec->gid) < 0) {
        Fail(p, LoaderStep::kStdio);
      }
    }
  }
  // Nothing of the sentry's but the pipes to it survives exec, and the
  // extra fds the caller chose to give.
  syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
  PlaceExtraFds(p);
  DropCapabilities(p);
  // With a single id mapped, setgroups is denied (see LoaderSpec::single_id).
  if ((!p.spec->single_id &&
       syscall(SYS_setgroups, p.spec->groups.size(), p.spec->groups.data()) < 0) ||
      RawSetIds(p.spec->uid, p.spec->gid) < 0) {
    Fail(p, LoaderStep::kSetIds);
  }
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // cleared by the change of ids
  if (p.spec->namespaces && p.spec->helper_maps) {
    // The change of ids (to one of the range, not the caller's) made the
    // memory this process shares with pid 1 undumpable: the sentry, the
    // caller, could then open neither pid 1's /proc files nor take this
    // process's listener. It is the loader's own code still, and dumpable
    // is decided again at execve. Ready is said from here, after that.
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    Report(p, LoaderStep::kReady, 0, p.cgroups_refused);
  }
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capset, &hdr, data) < 0) Fail(p, LoaderStep::kDropCaps);
  int tty_master = GuestSession(p);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) Fail(p, LoaderStep::kNoNewPrivs);
  // After the terminal (its ptmx is opened by path) and before the filter
  // (which refuses landlock_*).
  if (int err = ApplyLandlock(p.spec->landlock, p.mqueue_root)) {
    errno = err;
    Fail(p, LoaderStep::kLandlock);
  }
  int listener = static_cast<int>(
      syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &p.prog));
  if (listener < 0) Fail(p, LoaderStep::kSeccomp);
  // From here every syscall goes through the filter: only read, write, close,
  // setrlimit (native) and execve (traced) follow.
  Report(p, LoaderStep::kListener, 0, listener, tty_master);
  Launch launch;
  if (!ReadLaunch(p.pipes.go_read, &launch)) _exit(127);  // the sentry gave up
  close(listener);
  if (tty_master >= 0) close(tty_master);  // the sentry holds its copy by now
  for (uint32_t i = 0; i < launch.header.rlimits; ++i) {
    rlimit lim{launch.rlimits[i].soft, launch.rlimits[i].hard};
    if (setrlimit(launch.rlimits[i].resource, &lim) < 0) Fail(p, LoaderStep::kRlimits);
  }
  // The old root detached and the view read-only (see StartDetach): the
  // guest's own code runs in the view alone. Last, for the detach to run
  // beside everything before.
  loader_internal::AwaitDetach(p);
  execve(launch.path, launch.argv, launch.envp);
  Fail(p, LoaderStep::kExec);
}

// The guest until its execve. It is cloned with CLONE_VM, on the loader's
// memory (a stack of its own), as vfork does: no copy of the loader's page
// tables and no copy-on-write faults on either side before the execve gives
// it a memory of its own (`sentry run -- /bin/true` 5.75 -> 5.55 ms median,
// interleaved). Nothing it does before then touches what the loader uses
// after, and the loader waits meanwhile.
LOADER_CODE int GuestMain(void* arg) { RunGuest(*static_cast<const Prepared*>(arg)); }

// Closes every fd the clone copied from the sentry but the loader's pipes,
// the guest's stdio and its extra fds: with the sentry's ends of the pipes
// gone, a sentry that dies (before it traces the guest) leaves the loader
// and the guest reading end-of-file, so they exit instead of waiting forever.
LOADER_CODE void CloseAllBut(const Prepared& p) {
  int keep[6 + kMaxExtraFds] = {p.pipes.maps_read, p.pipes.report_write, p.pipes.go_read,
                                p.spec->stdio[0],  p.spec->stdio[1],     p.spec->stdio[2]};
  int kept = 6;
  for (size_t i = 0; i < p.spec->extra_fds.size() && i < kMaxExtraFds; ++i) {
    keep[kept++] = p.spec->extra_fds[i];
  }
  // Insertion sort: a few numbers, no library call.
  for (int i = 1; i < kept; ++i) {
    for (int j = i; j > 0 && keep[j - 1] > keep[j]; --j) {
      int t = keep[j];
      keep[j] = keep[j - 1];
      keep[j - 1] = t;
    }
  }
  unsigned int next = 3;
  for (int k = 0; k < kept; ++k) {
    int fd = keep[k];
    if (fd < static_cast<int>(next)) continue;
    if (static_cast<unsigned int>(fd) > next) syscall(SYS_close_range, next, fd - 1, 0);
    next = static_cast<unsigned int>(fd) + 1;
  }
  syscall(SYS_close_range, next, ~0U, 0);
}

// Waits for the sentry's "c" and joins the cgroups whose files come with it
// (see LoaderPipes). Returns a bit per file that refused.
LOADER_CODE int JoinCgroups(const Prepared& p) {
  char byte;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxLoaderCgroups)];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  if (recvmsg(p.pipes.maps_read, &msg, MSG_CMSG_CLOEXEC) != 1 || byte != 'c') {
    Fail(p, LoaderStep::kWaitCgroups);
  }
  int failed = 0;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
    int n = static_cast<int>((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    for (int i = 0; i < n && i < kMaxLoaderCgroups; ++i) {
      int fd;
      memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (write(fd, "0", 1) != 1) failed |= 1 << i;
      close(fd);
    }
  }
  return failed;
}

LOADER_CODE bool WriteProcSelf(const char* path, const char* text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  size_t n = std::strlen(text);
  bool ok = write(fd, text, n) == static_cast<ssize_t>(n);
  close(fd);
  return ok;
}

// Single-id mode (LoaderSpec::single_id): the loader, the first process of
// its user namespace, maps its own uid and gid, setgroups denied first, as
// `unshare -r` does.
LOADER_CODE void MapOwnIds(const Prepared& p) {
  if (!WriteProcSelf("/proc/self/setgroups", "deny") ||
      !WriteProcSelf("/proc/self/uid_map", p.uid_map) ||
      !WriteProcSelf("/proc/self/gid_map", p.gid_map)) {
    Fail(p, LoaderStep::kIdMaps);
  }
}

LOADER_CODE int LoaderMain(void* arg) {
  Prepared& p = *static_cast<Prepared*>(arg);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The sentry is not dumpable (see main.cc); the loader, a copy of it, must
  // be, for the sentry without root to reach it (/proc/PID/root, and
  // pidfd_getfd on the guest, which shares this memory until its execve).
  prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
  if (p.spec->namespaces && p.spec->single_id) MapOwnIds(p);
  if (p.spec->namespaces && p.spec->helper_maps && write(p.pipes.maps_read, "d", 1) != 1) {
    Fail(p, LoaderStep::kIdMaps);
  }
  CloseAllBut(p);
  // With helper maps, the network namespace is made while newuidmap and
  // newgidmap run (a few milliseconds, two execs of setuid programs): it
  // needs the namespace's capabilities, which the loader has from the
  // clone, and no id of it mapped. (Its DNS socket is the caller's uid,
  // the namespace's 0, either way.)
  const bool early_netns = p.spec->namespaces && p.spec->helper_maps;
  if (early_netns) {
    if (unshare(CLONE_NEWNET) < 0) Fail(p, LoaderStep::kNetns);
    ReadyNetns(p);
  }
  char byte;
  if (read(p.pipes.maps_read, &byte, 1) != 1 || byte != 'm') Fail(p, LoaderStep::kWaitMaps);
  if (p.spec->namespaces) {
    // Become the namespace's root (an unprivileged host id) so what pid 1 makes
    // in its tmpfs has an owner the namespace can name. A change of ids
    // clears the parent-death signal: it is set again. (Should the sentry
    // die before that, the read of its "c" below ends the loader.)
    // With a single id mapped, the loader is that id already.
    if (!p.spec->single_id && RawSetIds(0, 0) < 0) Fail(p, LoaderStep::kWaitMaps);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    // First, so the sentry starts its DNS server while the mount view is
    // built. The guest is forked into it.
    if (!early_netns) {
      if (unshare(CLONE_NEWNET) < 0) Fail(p, LoaderStep::kNetns);
      ReadyNetns(p);
    }
    CapUserNsCounts(p);
    BuildMountView(p);
    if (sethostname(p.spec->hostname.data(), p.spec->hostname.size()) < 0) {
      Fail(p, LoaderStep::kHostname);
    }
  } else {
    // Orphans of the guest come here, not to the host's init; no native call
    // the guest makes resolves a relative path against the sentry's cwd; and
    // a session of its own, since the kernel lets any process send SIGCONT
    // to the processes of its session (the caller's shell, its jobs).
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0 || chdir("/") < 0 || setsid() < 0) {
      Fail(p, LoaderStep::kSubreaper);
    }
  }
  // With namespaces too, pid 1 leads a session of its own: the guest sees a
  // session and process group of its pid namespace (getsid, getpgrp: not 0),
  // and the caller's terminal signals its own job (the sentry) alone, which
  // passes them on (see Run::Supervise).
  if (p.spec->namespaces) setsid();
  p.cgroups_refused = JoinCgroups(p);
  // With helper maps the guest says it (see RunGuest).
  if (!(p.spec->namespaces && p.spec->helper_maps)) {
    Report(p, LoaderStep::kReady, 0, p.cgroups_refused);
  }
  // The guest's fds: 0-2 and its two pipes; nothing else of the sentry's.
  sched_getaffinity(0, sizeof(p.detach_cpus), &p.detach_cpus);
  if (p.spec->guest_cpu >= 0 && p.spec->guest_cpu < CPU_SETSIZE) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(p.spec->guest_cpu, &one);
    sched_setaffinity(0, sizeof(one), &one);
  }
  // Opened by pid 1, which may (the guest will have no capability left).
  // Above the fds the guest's extra fds take (3, 4, ...: see PlaceExtraFds).
  if (p.spec->namespaces && p.spec->landlock.abi > 0) {
    int fd = OpenMqueueRoot();
    int above = 3 + static_cast<int>(p.spec->extra_fds.size());
    p.mqueue_root = fd >= above || fd < 0 ? fd : fcntl(fd, F_DUPFD_CLOEXEC, above);
    if (fd >= 0 && fd != p.mqueue_root) close(fd);
  }
  // CLONE_VFORK: the loader waits until the guest has exec'd or exited.
  pid_t child = clone(GuestMain, p.guest_stack_top, CLONE_VM | CLONE_VFORK | SIGCHLD,
                      const_cast<Prepared*>(&p));
  if (child < 0) Fail(p, LoaderStep::kFork);
  syscall(SYS_close_range, 3, ~0U, 0);
  // pid 1 of the sandbox (or its subreaper): reap every orphan until none is left.
  while (true) {
    int status;
    if (waitpid(-1, &status, __WALL) < 0 && errno == ECHILD) _exit(0);
  }
}

// The process that makes the sandbox's user namespace as the sandbox's own
// host id (LoaderSpec::ns_owner), so that the kernel charges the
// namespace's per-user counts to that id and not to the caller (root). It
// shares the sentry's memory (CLONE_VM, as vfork: no page tables copied for
// it), drops the supplementary groups, lowers the rlimits the kernel keeps
// as the new namespace's ceilings (create_user_ns copies them from its
// maker), takes the id with raw calls (see RawSetIds) and clones the loader
// with CLONE_PARENT: the loader is the sentry's child, as without it (its
// waitpid, its parent-death signal), and this process exits at once.
struct OwnerClone {
  Prepared* p;
  int flags;
  char* stack_top;
  pid_t pid = -1;
  int err = 0;
};

LOADER_CODE int OwnerMain(void* arg) {
  auto* o = static_cast<OwnerClone*>(arg);
  uid_t id = o->p->spec->ns_owner;
  rlimit mq{kSandboxMsgQueueBytes, kSandboxMsgQueueBytes};
  rlimit sigs{kSandboxSigPending, kSandboxSigPending};
  if (syscall(SYS_prlimit64, 0, RLIMIT_MSGQUEUE, &mq, nullptr) < 0 ||
      syscall(SYS_prlimit64, 0, RLIMIT_SIGPENDING, &sigs, nullptr) < 0 ||
      syscall(SYS_setgroups, 0, nullptr) < 0 || RawSetIds(id, id) < 0) {
    o->err = errno;
    return 1;
  }
  // The exit signal of a CLONE_PARENT child is its maker's (SIGCHLD, see
  // StartLoader), whatever these flags say.
  pid_t pid = clone(LoaderMain, o->stack_top, o->flags | CLONE_PARENT | SIGCHLD, o->p);
  o->err = pid < 0 ? errno : 0;
  o->pid = pid;
  return 0;
}

// Clones the loader as LoaderSpec::ns_owner (see OwnerMain); -errno on failure.
pid_t CloneAsOwner(Prepared& p, int flags, char* loader_stack_top) {
  constexpr size_t kOwnerStackSize = 64 << 10;
  static char* owner_stack = new char[kOwnerStackSize];
  OwnerClone o{&p, flags, loader_stack_top};
  pid_t owner =
      clone(OwnerMain, owner_stack + kOwnerStackSize, CLONE_VM | CLONE_VFORK | SIGCHLD, &o);
  if (owner < 0) return -errno;
  int status = 0;
  // (Reaped by another of the sentry's waiters: ECHILD, and o is filled in
  // all the same, since CLONE_VFORK returns only once it has exited.)
  while (waitpid(owner, &status, __WALL) < 0 && errno == EINTR) {
  }
  if (o.pid < 0) return -(o.err != 0 ? o.err : EPERM);
  return o.pid;
}

}  // namespace

pid_t StartLoader(const LoaderSpec& spec, const LoaderPipes& pipes, int clone_flags) {
  // Static so the pointers stay valid in the child (which shares no memory but
  // gets a copy of this address space at clone()).
  static Prepared p;
  p = Prepared{};
  p.spec = &spec;
  p.pipes = pipes;
  if (spec.extra_fds.size() > kMaxExtraFds) return -EMFILE;
  // The loader's pipes are copied above the guest's extra fds (3..top-1),
  // where placing those cannot overwrite them; the copies go after the clone.
  int moved[3] = {-1, -1, -1};
  auto close_moved = [&moved] {
    for (int fd : moved) {
      if (fd >= 0) close(fd);
    }
  };
  if (!spec.extra_fds.empty()) {
    int top = 3 + static_cast<int>(spec.extra_fds.size());
    int* fields[3] = {&p.pipes.maps_read, &p.pipes.report_write, &p.pipes.go_read};
    for (int i = 0; i < 3; ++i) {
      if (*fields[i] < 0 || *fields[i] >= top) continue;
      moved[i] = fcntl(*fields[i], F_DUPFD_CLOEXEC, top);
      if (moved[i] < 0) {
        int err = errno;
        close_moved();
        return -err;
      }
      *fields[i] = moved[i];
    }
  }
  for (const std::string& root : spec.lower_roots) {
    // Bound by path: an fd opened here would name a mount of the sentry's
    // namespace, which the loader's may not bind (EINVAL). So the loader, an
    // unprivileged host user, must be able to search the path: a rootfs's
    // entries are opened relative to the loader's cwd (the rootfs itself,
    // see below), a host directory by its path.
    std::string host = spec.lower_source + root;
    struct stat st;
    if (lstat(host.c_str(), &st) < 0) continue;
    std::string target;
    if (S_ISLNK(st.st_mode)) {
      char buf[4096];
      ssize_t n = readlink(host.c_str(), buf, sizeof(buf) - 1);
      if (n <= 0) continue;
      target.assign(buf, n);
    } else if (!S_ISDIR(st.st_mode)) {
      continue;
    }
    p.host_paths.push_back(spec.lower_source.empty() ? host : root.substr(1));
    p.view_paths.push_back(std::string(kNewRoot) + root);
    p.link_targets.push_back(target);
  }
  p.source_fds.assign(p.host_paths.size(), -1);
  if (spec.single_id) {
    snprintf(p.uid_map, sizeof(p.uid_map), "%u %u 1\n", spec.uid, getuid());
    snprintf(p.gid_map, sizeof(p.gid_map), "%u %u 1\n", spec.gid, getgid());
  }
  p.store_path = std::string(kNewRoot) + vfs::Store::kGuestPath;
  p.pts_path = std::string(kNewRoot) + kGuestPtsPath;
  p.pts_options = "newinstance,ptmxmode=0666,mode=0620,max=" + std::to_string(kSandboxPtys);
  p.prog.len = static_cast<unsigned short>(spec.filter.size());
  p.prog.filter = const_cast<sock_filter*>(spec.filter.data());
  if (spec.census) {
    // The report of the listener is written before the sentry has it: that
    // one write goes by the ordinary filter (see CensusFilter).
    p.census_filter = CensusFilter(spec.filter, {p.pipes.report_write, sizeof(LoaderMessage)});
    if (p.census_filter.empty() || p.census_filter.size() > BPF_MAXINSNS) {
      close_moved();
      return -EINVAL;
    }
    p.prog.len = static_cast<unsigned short>(p.census_filter.size());
    p.prog.filter = p.census_filter.data();
  }

  constexpr size_t kStackSize = 1 << 20, kGuestStackSize = 256 << 10;
  static char* stack = new char[kStackSize];
  static char* guest_stack = new char[kGuestStackSize];
  p.guest_stack_top = guest_stack + kGuestStackSize;
  constexpr size_t kDetachStackSize = 64 << 10;
  static char* detach_stack = new char[kDetachStackSize];
  p.detach_stack_top = detach_stack + kDetachStackSize;
  // The loader starts in the rootfs: a clone with CLONE_NEWNS moves the
  // cwd to the same directory in the new namespace, so the loader opens the
  // rootfs's entries without searching the path to it, which an engine may
  // keep in directories of root's alone (containerd's bundles are 0700).
  // This thread's cwd is its own for that (CLONE_FS unshared) and comes back.
  int rootfs = -1, saved_cwd = -1;
  if (!spec.lower_source.empty()) {
    rootfs = open(spec.lower_source.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rootfs < 0) {
      int err = errno;
      close_moved();
      return -err;
    }
    saved_cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (unshare(CLONE_FS) < 0 || fchdir(rootfs) < 0) {
      int err = errno;
      close(rootfs);
      if (saved_cwd >= 0) close(saved_cwd);
      close_moved();
      return -err;
    }
  }
  pid_t pid;
  int err;
  if (spec.ns_owner != 0 && (clone_flags & CLONE_NEWUSER)) {
    pid = CloneAsOwner(p, clone_flags, stack + kStackSize);
    err = pid < 0 ? -pid : 0;
  } else {
    pid = clone(LoaderMain, stack + kStackSize, clone_flags | SIGCHLD, &p);
    err = errno;
  }
  close_moved();
  if (rootfs >= 0) {
    // Back where it was; at / if that is gone (this thread's cwd alone).
    if ((saved_cwd < 0 || fchdir(saved_cwd) < 0) && chdir("/") < 0) {
    }
    if (saved_cwd >= 0) close(saved_cwd);
    close(rootfs);
  }
  return pid < 0 ? -err : pid;
}

}  // namespace sentry
