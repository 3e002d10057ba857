// The syscall table: one row per x86-64 syscall, the single source of truth for
// what a guest may do. The seccomp filter, --trace's decoder, `sentry syscalls`
// and the table test all read it. A number with no row fails with ENOSYS.
#ifndef SENTRY_SYSCALLS_TABLE_H_
#define SENTRY_SYSCALLS_TABLE_H_

#include <cerrno>
#include <cstdint>
#include <span>
#include <string>

#include "sentry/kernel/syscall_context.h"

namespace sentry {

enum class Action : uint8_t {
  kNative,  // runs in the host kernel: computation on objects the guest holds
  kTrap,    // SECCOMP_RET_USER_NOTIF: answered by a handler in the sentry
  kTrace,   // SECCOMP_RET_TRACE: answered at a ptrace stop (execve, execveat)
  kErrno,   // fails with a fixed errno, never reaches the host kernel
};

// Argument conditions for native rows; what fails them gets the row's errno.
enum class ArgFilter : uint8_t {
  kNone,
  // clone(): no namespace flags; exactly the fork's (syscalls/fork_gate.h)
  // go to the fork gate, a SECCOMP_RET_TRACE stop the supervisor answers.
  kCloneForkGate,
  kIoctlSafe,  // ioctl(): only terminal queries and fd flag requests
  // ioctl() with a network namespace: kIoctlSafe's, and the read-only
  // interface queries (SIOCGIF*: index, name, flags, addresses, MTU) of a
  // socket, which name the sandbox's own interfaces.
  kIoctlSafeNetIf,
  kSocketFamily,  // socket(): AF_UNIX, AF_INET, AF_INET6, AF_NETLINK + NETLINK_ROUTE
  kPrctlSafe,     // prctl(): a small set of options that touch only the caller
  kPersonality,   // personality(): queries and PER_LINUX only
  kPrioNotUser,   // setpriority(), ioprio_set(): not by user id (that could reach host tasks)
  // seccomp(): native without SECCOMP_FILTER_FLAG_NEW_LISTENER; with it, a
  // SECCOMP_RET_TRACE stop the supervisor refuses (EPERM) unless the task is
  // re-listening (syscalls/fork_gate.h, table.cc).
  kSeccompListenerGate,
  kNativeWithoutAddr,  // sendto(): native when dest_addr (arg 4) is NULL, else the trap
  // getsockopt(): native but for SOL_SOCKET's SO_PEERCRED and SO_PEERPIDFD,
  // which trap (a unix peer the sentry connected names the guest that asked).
  kNativeButPeerCred,
  // socket(), socketpair() without a network namespace: AF_UNIX stream and
  // seqpacket only (a datagram's address would name a host socket); AF_INET
  // and AF_INET6 get the row's errno, other families EAFNOSUPPORT.
  kUnixStreamOnly,
  // fcntl() without a pid namespace: not F_SETOWN or F_SETOWN_EX (the row's errno).
  kFcntlNotOwner,
  // fcntl(): native but for F_OFD_SETLK, F_OFD_SETLKW and F_SETLEASE, which
  // trap (a lock on a description the sentry holds: syscalls/sys_locks.cc).
  kFcntlTrapLocks,
  // The same without a pid namespace, and F_SETOWN, F_SETOWN_EX get the
  // row's errno (kFcntlNotOwner).
  kFcntlNotOwnerTrapLocks,
};

// What confines the resources a native row's arguments name (the rule of the
// table, DESIGN.md): a namespace of the sandbox's own confines only its own
// kind of resource, and nothing but the sentry confines a file-system name,
// so a row whose arguments can carry one (s, A, M, V) is never native.
enum class Wall : uint8_t {
  kNone,    // names no resource: objects the guest holds, or the caller's own state
  kSelf,    // the kernel lets it reach only the caller and its own children
  kPidNs,   // pids, process groups (P, C): the sandbox's pid namespace
  kIpcNs,   // SysV keys and ids (K), POSIX queue names (q): its ipc namespace
  kNetNs,   // addresses and interfaces of its sockets: its network namespace
  kUserNs,  // uids and gids (U): its user namespace maps only its own
  kUtsNs,   // the host name it shows: its uts namespace
  // Signals the kernel sends for the call (SIGIO and SIGURG of an F_SETOWN
  // owner, kill): the guest's Landlock signal scope (LANDLOCK_SCOPE_SIGNAL,
  // ABI 6+) keeps them inside the sandbox's domain. Cited only by rows of a
  // table for runs that have the scope (SyscallTableWithSignalScope).
  kLandlockSignal,
};

// The kernel pool a row draws from when it makes a kernel object natively
// (the rule of the pools, DESIGN.md): the count that bounds it, who the
// kernel charges, and the sandbox's cap (loader/pool_caps.h). B is the first
// host id of the sandbox's block (sentry/run/spawn.h), which makes its user
// namespace; its guest runs as B + 1. Table: tests/security/README.md,
// "Availability"; the table test names the rows that must say one.
enum class Pool : uint8_t {
  kNone,            // makes no kernel object beyond what the guest holds
  kFdOnly,          // an fd and a small object: RLIMIT_NOFILE per process, the pids cap,
                    // their memory in the sandbox's memory cgroup
  kInotify,         // inotify instances: ucounts (sandbox ns, uid) capped at 32 there
                    // (its /proc/sys/user), charged up to (host ns, B)
  kInotifyWatches,  // inotify watches: the instance owner's ucounts (sandbox ns, uid),
                    // capped at 8192 there, charged up to (host ns, B); the sentry's
                    // shadows (vfs_watch.cc): Vfs::kMaxShadows, kMaxShadowEntries
  kMqueue,          // POSIX queue bytes: RLIMIT_MSGQUEUE 256 KiB (the guest's and the
                    // namespace's ceiling), charged to (host ns, B); queues_max per ipc ns
  kSigQueue,        // queued signals and timers' signals: RLIMIT_SIGPENDING 2048, charged
                    // to (host ns, B) (kill's SI_USER bypasses the rlimit: memory cgroup)
  kAio,             // AIO events: fs.aio-nr is the host's: io_setup traps and draws on a
                    // budget of a 64th of fs.aio-max-nr (sys_pools.cc)
  kPipeBuffers,     // pipe pages: per host uid (B + 1's pipe-user-pages), and
                    // F_SETPIPE_SZ at most pipe-max-size
  kEpollWatches,    // epoll watches: per host uid (B + 1's max_user_watches)
  kSysvIpc,         // SysV segments, semaphores, queues: the sandbox's own ipc namespace
  kFileLocks,       // flock/fcntl locks on files the guest holds: memory cgroup
                    // (fcntl's F_SETPIPE_SZ: kPipeBuffers)
  kProcesses,       // tasks: RLIMIT_NPROC per (sandbox ns, uid) = --pids, and the pids cgroup
};

// The pool's counter, who is charged and the cap, in words ("" for kNone).
const char* PoolText(Pool pool);

// Every argument letter the --trace decoder knows (see SyscallRow::args).
inline constexpr const char kArgKinds[] = "duxofsplFAMVPKqUCn";
// The letters that can carry a file-system name (a path, a unix socket
// address): only the sentry confines those.
inline constexpr const char kFileSystemNameKinds[] = "sAMV";

struct SyscallRow {
  int nr;
  const char* name;
  Action action;
  int err;                 // kErrno rows, and what a failed ArgFilter returns (native rows)
  SyscallHandler handler;  // kTrap rows
  ArgFilter filter;
  // One letter an argument, for --trace: d int, u unsigned, x hex, o octal mode,
  // f fd (AT_FDCWD aware), s path string, p pointer, l size/length, F open flags,
  // A sockaddr (its length is the next argument), M a msghdr the call reads (its
  // msg_name may carry a sockaddr), V an array of mmsghdr (the same, each),
  // P a pid, tid or process group, K a SysV IPC key or id, q a POSIX message
  // queue name, U a uid or gid, C a capability header (it holds a pid), n a
  // name that is only a label (memfd_create), never resolved.
  const char* args;
  // Native rows: what confines the resources their arguments name, and why
  // running them natively is safe (audited by hand, row by row).
  Wall wall;
  const char* why;
  // What bounds the kernel object the row makes natively (kNone: none).
  Pool pool = Pool::kNone;
};

// Whether a refusal the table makes itself (an errno row, or a failed argument
// filter) goes by the sentry to be listed in the run's denied operations:
// EPERM and EACCES (ptrace, mount, unshare, bpf...), which tell the model
// what the sandbox does not allow. ENOSYS probes (clone3, io_uring) and
// EAFNOSUPPORT (glibc opens netlink for every getaddrinfo with AI_ADDRCONFIG)
// stay in the filter: they are ordinary program behaviour.
constexpr bool IsReportedRefusal(int err) { return err == EPERM || err == EACCES; }

// The answer the filter gives a refusal: to the sentry, or the errno itself.
uint32_t RefusalAction(int err);

// How completely a trapped or traced row is answered (table_status.cc).
struct RowStatus {
  int nr;  // -1: every row with this handler
  SyscallHandler handler;
  bool full;         // as Linux answers, within the sandbox's world
  const char* note;  // what is missing when partial; else a remark or ""
};
// The status of a trap or trace row, or null (none written: a test fails).
const RowStatus* FindRowStatus(const SyscallRow& row);

// The argument filter of a native row in words ("AF_UNIX, AF_INET and AF_INET6
// only"), and what a call that fails it gets ("EAFNOSUPPORT"); "" for kNone.
const char* ArgFilterText(ArgFilter filter);
std::string ArgFilterFailure(const SyscallRow& row);

// All rows, ordered by number.
std::span<const SyscallRow> SyscallTable();
// The row for nr, or null.
const SyscallRow* FindSyscall(int nr);

// The table of a sandbox without namespaces (the seccomp wall alone): the rows
// that are native only because the sandbox has namespaces of its own become
// traps (ids, uname) or refusals (SysV and POSIX IPC, AF_INET sockets, unix
// datagrams). See table_without_namespaces.cc.
std::span<const SyscallRow> SyscallTableWithoutNamespaces();
const SyscallRow* FindSyscallWithoutNamespaces(int nr);

// The table of a sandbox after its first session fork (sentry/session/FORK.md,
// step 2): the namespaced table with the rows that name a process trapped
// (ConfinePids, capget), as without namespaces: the forked children live in
// pid namespaces nested in the sandbox's, which it could otherwise name.
std::span<const SyscallRow> SyscallTableAfterFork();
const SyscallRow* FindSyscallAfterFork(int nr);

// The table without namespaces of a run whose guest has the Landlock signal
// scope (loader/landlock.h): fcntl runs natively, F_SETOWN included, since no
// SIGIO it sets up reaches a process outside the sandbox.
std::span<const SyscallRow> SyscallTableWithSignalScope();
const SyscallRow* FindSyscallWithSignalScope(int nr);

// The calls whose only reach outside the caller is a signal they make the
// kernel send: the rows that may cite Wall::kLandlockSignal.
bool SendsSignalsOnly(int nr);

}  // namespace sentry

#endif  // SENTRY_SYSCALLS_TABLE_H_
