// getsockopt(SOL_SOCKET, SO_PEERCRED or SO_PEERPIDFD), the only getsockopt
// calls that trap (every other option is native), and the record the unix
// connect makes for them. See sentry/kernel/unix_peers.h: the sentry makes
// a guest's unix connect, so the kernel would name the sentry as the peer of
// the accepted socket; it names the guest task that asked instead, as the
// sandbox names it. Every socket the sentry did not connect (a socketpair,
// the connecting side, which names the listener's task from its listen())
// is answered by the kernel, in the guest's own namespaces.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>

#include "syscalls/common.h"
#include "syscalls/handlers.h"
#include "syscalls/socket_common.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

namespace sentry::sys {
namespace {

// The effective uid and gid of a host thread, as the sentry sees them
// (/proc/TID/status: "Uid: real effective saved fs").
bool EffectiveIds(pid_t tid, uint32_t* uid, uint32_t* gid) {
  std::ifstream f("/proc/" + std::to_string(tid) + "/status");
  std::string line;
  int found = 0;
  while (std::getline(f, line) && found < 2) {
    bool is_uid = line.rfind("Uid:", 0) == 0;
    if (!is_uid && line.rfind("Gid:", 0) != 0) continue;
    std::istringstream in(line.substr(4));
    uint32_t real, effective;
    if (!(in >> real >> effective)) return false;
    *(is_uid ? uid : gid) = effective;
    ++found;
  }
  return found == 2;
}

// The kernel's answer, read on the sentry's copy and named as the sandbox
// names them: for a sandbox without namespaces, whose guest would otherwise
// read host pids and ids (SO_PEERCRED runs in the caller's namespaces).
SysResult<uint64_t> TranslatedPeerCred(SyscallContext& ctx, int sock, socklen_t len) {
  ucred host{};
  socklen_t n = sizeof(host);
  if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &host, &n) < 0) return Errno{errno};
  ucred shown{};
  shown.pid = host.pid > 0 ? ctx.kernel.tasks().NsPidOfHost(host.pid) : 0;
  constexpr uint32_t kNone = static_cast<uint32_t>(-1);  // a peer without credentials
  shown.uid = host.uid == kNone ? kNone : ctx.kernel.config().GuestUid(host.uid);
  shown.gid = host.gid == kNone ? kNone : ctx.kernel.config().GuestGid(host.gid);
  len = std::min<socklen_t>(len, sizeof(shown));
  SYS_TRY(ctx.mem.CopyOut(ctx.args.Ptr(3), &shown, len));
  SYS_TRY(ctx.mem.CopyOutValue(ctx.args.Ptr(4), len));
  return 0;
}

// A process pidfd of a guest process, from the pidfd the sentry keeps for its
// leader task, never from its pid alone (which may name another process once
// the sentry has reaped it, before the record of it goes). The kept pidfd
// itself where it is a process pidfd; where it is a thread pidfd
// (PIDFD_THREAD, Linux 6.9: the tracer's for forked tasks), one opened by the
// pid and checked to name the same pid (pidfs, 6.9 too: all pidfds of a pid
// share its inode). EINVAL: it has exited.
constexpr int kPidfdThreadFlag = O_EXCL;  // PIDFD_THREAD
SysResult<UniqueFd> ProcessPidfd(SyscallContext& ctx, const Process& process) {
  const Task* leader = ctx.kernel.tasks().Find(process.tgid);
  if (!leader || leader->process.get() != &process || !leader->pidfd) return Errno{EINVAL};
  const int kept = leader->pidfd.get();
  int flags = fcntl(kept, F_GETFL);
  if (flags < 0) return Errno{EINVAL};
  if (!(flags & kPidfdThreadFlag)) {
    int fd = fcntl(kept, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return Errno{errno};
    return UniqueFd(fd);
  }
  UniqueFd fresh(static_cast<int>(syscall(SYS_pidfd_open, process.tgid, 0)));
  if (!fresh) return Errno{errno == ESRCH ? EINVAL : errno};
  struct stat a, b;
  if (fstat(kept, &a) < 0 || fstat(fresh.get(), &b) < 0 || a.st_ino != b.st_ino ||
      a.st_dev != b.st_dev) {
    return Errno{EINVAL};  // the pid is another process's now
  }
  return fresh;
}

// SO_PEERPIDFD: a pidfd of the connecting process, installed in the caller
// (O_CLOEXEC, as pidfd_prepare makes it). optval is written once first, so a
// bad pointer fails before an fd is installed.
SysResult<uint64_t> PeerPidfd(SyscallContext& ctx, const UnixConnector& who, socklen_t len) {
  len = std::min<socklen_t>(len, sizeof(int));
  int placeholder = -1;
  SYS_TRY(ctx.mem.CopyOut(ctx.args.Ptr(3), &placeholder, len));
  SYS_TRY(ctx.mem.CopyOutValue(ctx.args.Ptr(4), len));
  std::shared_ptr<Process> process = who.process.lock();
  // A process that has exited: as Linux before 6.16 (pidfd_prepare's EINVAL);
  // the sentry holds no reference that would outlive it.
  if (!process) return Errno{EINVAL};
  SYS_ASSIGN_OR_RETURN(UniqueFd pidfd, ProcessPidfd(ctx, *process));
  SYS_ASSIGN_OR_RETURN(int guest_fd, ctx.fds.Install(pidfd.get(), true));
  SYS_TRY(ctx.mem.CopyOut(ctx.args.Ptr(3), &guest_fd, len));
  return 0;
}

// The host pid a pidfd names (its fdinfo's "Pid:"), or 0.
pid_t PidOfPidfd(int pidfd) {
  std::ifstream f("/proc/self/fdinfo/" + std::to_string(pidfd));
  std::string key;
  while (f >> key) {
    if (key != "Pid:") continue;
    long pid = 0;
    f >> pid;
    return pid > 0 ? static_cast<pid_t>(pid) : 0;
  }
  return 0;
}

// SO_PEERPIDFD of a socket the sentry connected for nobody: the kernel's
// pidfd, read on the sentry's copy, but only of a process of the sandbox's.
// Any other peer (the sentry itself, at the other end of the tool channel;
// a host process behind a socket handed in as stdio) is no process the guest
// may hold a handle to: ENODATA, as for a peer without one.
SysResult<uint64_t> KernelPeerPidfd(SyscallContext& ctx, int sock, socklen_t len) {
  int fd = -1;
  socklen_t n = sizeof(fd);
  if (getsockopt(sock, SOL_SOCKET, SO_PEERPIDFD, &fd, &n) < 0) return Errno{errno};
  UniqueFd pidfd(fd);
  pid_t pid = PidOfPidfd(fd);
  const Task* task = pid > 0 ? ctx.kernel.tasks().Find(pid) : nullptr;
  if (!task || task->process->tgid != pid) return Errno{ENODATA};
  len = std::min<socklen_t>(len, sizeof(int));
  int placeholder = -1;
  SYS_TRY(ctx.mem.CopyOut(ctx.args.Ptr(3), &placeholder, len));
  SYS_TRY(ctx.mem.CopyOutValue(ctx.args.Ptr(4), len));
  SYS_ASSIGN_OR_RETURN(int guest_fd, ctx.fds.Install(pidfd.get(), true));
  SYS_TRY(ctx.mem.CopyOut(ctx.args.Ptr(3), &guest_fd, len));
  return 0;
}

}  // namespace

void RecordUnixConnect(SyscallContext& ctx, int sock, ino_t sock_ino) {
  int type = SocketType(sock);
  if (type != SOCK_STREAM && type != SOCK_SEQPACKET) return;  // a datagram's peer has no creds
  UnixConnector who;
  who.ns_pid = ctx.task.process->ns_pid;
  who.process = ctx.task.process;
  uint32_t uid, gid;
  if (EffectiveIds(ctx.task.tid, &uid, &gid)) {
    who.uid = ctx.kernel.config().GuestUid(uid);
    who.gid = ctx.kernel.config().GuestGid(gid);
  } else {
    who.uid = ctx.creds().uid;
    who.gid = ctx.creds().gid;
  }
  ctx.kernel.unix_peers().Record(sock_ino, std::move(who));
}

// getsockopt(fd, level, optname, optval, optlen). The filter traps only
// SOL_SOCKET's SO_PEERCRED and SO_PEERPIDFD. SO_PEERCRED of a socket the
// sentry recorded nothing for is left to the kernel where the sandbox has
// namespaces (SECCOMP_USER_NOTIF_FLAG_CONTINUE): the
// decision reads only registers and the socket, never guest memory, and what
// the kernel then reads (optlen) and writes plays no part in it; a thread
// that swaps the fd meanwhile gets the kernel's answer for the socket it put
// there, which it could have asked for anyway.
SysResult<uint64_t> Getsockopt(SyscallContext& ctx) {
  int level = ctx.args.Int(1);
  int opt = ctx.args.Int(2);
  auto kernel_answers = [&]() -> SysResult<uint64_t> {
    ctx.let_kernel_run = true;
    return 0;
  };
  if (level != SOL_SOCKET || (opt != SO_PEERCRED && opt != SO_PEERPIDFD)) return kernel_answers();
  SysResult<FdRef> ref = GetFd(ctx, ctx.args.Int(0));
  if (!ref.ok() || !S_ISSOCK(ref->host_st.st_mode) || SocketDomain(ref->host.get()) != AF_UNIX) {
    return kernel_answers();  // EBADF, ENOTSOCK, and other families as the kernel says
  }
  std::optional<UnixConnector> who =
      ctx.kernel.unix_peers().ConnectorOfPeer(ref->host.get(), ref->host_st.st_ino);
  if (!who && opt == SO_PEERCRED && ctx.kernel.config().namespaces) return kernel_answers();
  SYS_ASSIGN_OR_RETURN(int len, ctx.mem.CopyIn<int>(ctx.args.Ptr(4)));
  if (len < 0) return Errno{EINVAL};
  if (!who && opt == SO_PEERPIDFD) return KernelPeerPidfd(ctx, ref->host.get(), len);
  if (!who) return TranslatedPeerCred(ctx, ref->host.get(), len);
  if (opt == SO_PEERPIDFD) return PeerPidfd(ctx, *who, len);
  ucred cred{who->ns_pid, who->uid, who->gid};
  socklen_t n = std::min<socklen_t>(len, sizeof(cred));
  SYS_TRY(ctx.mem.CopyOut(ctx.args.Ptr(3), &cred, n));
  SYS_TRY(ctx.mem.CopyOutValue(ctx.args.Ptr(4), n));
  return 0;
}

}  // namespace sentry::sys
