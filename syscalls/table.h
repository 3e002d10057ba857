// The syscall table: one row per x86-64 syscall, the single source of truth for
// what a guest may do. The seccomp filter, --trace's decoder, `sentry syscalls`
// and the table test all read it. A number with no row fails with ENOSYS.
#ifndef SENTRY_SYSCALLS_TABLE_H_
#define SENTRY_SYSCALLS_TABLE_H_

#include <cerrno>
#include <cstdint>
#include <span>

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
  kCloneFlags,         // clone(): no namespace flags
  kIoctlSafe,          // ioctl(): only terminal queries and fd flag requests
  kSocketFamily,       // socket(): AF_UNIX, AF_INET, AF_INET6
  kPrctlSafe,          // prctl(): a small set of options that touch only the caller
  kPersonality,        // personality(): queries and PER_LINUX only
  kPrioNotUser,        // setpriority(), ioprio_set(): not by user id (that could reach host tasks)
  kSeccompNoListener,  // seccomp(): no SECCOMP_FILTER_FLAG_NEW_LISTENER (see table.cc)
  kNativeWithoutAddr,  // sendto(): native when dest_addr (arg 4) is NULL, else the trap
  // socket(), socketpair() without a network namespace: AF_UNIX stream and
  // seqpacket only (a datagram's address would name a host socket); AF_INET
  // and AF_INET6 get the row's errno, other families EAFNOSUPPORT.
  kUnixStreamOnly,
};

// Every argument letter the --trace decoder knows (see SyscallRow::args).
inline constexpr const char kArgKinds[] = "duxofsplFA";

struct SyscallRow {
  int nr;
  const char* name;
  Action action;
  int err;                 // kErrno rows, and what a failed ArgFilter returns (native rows)
  SyscallHandler handler;  // kTrap rows
  ArgFilter filter;
  // One letter an argument, for --trace: d int, u unsigned, x hex, o octal mode,
  // f fd (AT_FDCWD aware), s path string, p pointer, l size/length, F open flags,
  // A sockaddr (its length is the next argument).
  const char* args;
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

}  // namespace sentry

#endif  // SENTRY_SYSCALLS_TABLE_H_
