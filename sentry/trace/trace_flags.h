// Symbolic names for --trace, as strace prints them: flag sets joined by '|'
// (O_RDONLY|O_CLOEXEC), enumerations (AT_FDCWD, SEEK_SET, F_SETFD), file modes
// (S_IFREG|0644), signal names and sets, errno names.
//
// Every function takes a raw register or struct value and returns text; none
// reads guest memory. Bits no table names are printed in hex after the named
// ones, as strace does ("O_RDONLY|0x40000000").
#ifndef SENTRY_TRACE_TRACE_FLAGS_H_
#define SENTRY_TRACE_TRACE_FLAGS_H_

#include <cstdint>
#include <span>
#include <string>

namespace sentry::trace {

struct Named {
  uint64_t value;
  const char* name;
};

// v as names from table, '|'-joined; `zero` when v is 0.
std::string FlagSet(uint64_t v, std::span<const Named> table, const char* zero = "0");
// The one name of v, or v in decimal (with "/* fallback */" if given).
std::string Enum(int64_t v, std::span<const Named> table, const char* fallback = nullptr);

std::string OpenFlags(uint64_t v);   // O_WRONLY|O_CREAT|O_TRUNC
std::string AtFlags(uint64_t v);     // AT_SYMLINK_NOFOLLOW|AT_EMPTY_PATH, or 0
std::string AccessMode(uint64_t v);  // R_OK|W_OK, or F_OK
std::string Dirfd(int64_t v);        // AT_FDCWD, or the number
std::string ProtFlags(uint64_t v);   // PROT_READ|PROT_WRITE, or PROT_NONE
std::string MapFlags(uint64_t v);    // MAP_PRIVATE|MAP_ANONYMOUS
std::string SockType(uint64_t v);    // SOCK_STREAM|SOCK_CLOEXEC
std::string Family(uint64_t v);      // AF_INET
std::string MsgFlags(uint64_t v);    // MSG_NOSIGNAL|MSG_DONTWAIT, or 0
std::string CloneFlags(uint64_t v);  // CLONE_VM|...|SIGCHLD (the low byte: a signal)
std::string FcntlCmd(int64_t v);     // F_SETFD
std::string IoctlCmd(uint64_t v);    // TCGETS, FIONREAD, or 0x5401
std::string Whence(int64_t v);       // SEEK_SET
std::string RenameFlags(uint64_t v);
std::string StatxMask(uint64_t v);   // STATX_ALL, STATX_BASIC_STATS|STATX_BTIME
std::string StatxFlags(uint64_t v);  // AT_STATX_SYNC_AS_STAT|AT_SYMLINK_NOFOLLOW
std::string ResolveFlags(uint64_t v);
std::string XattrFlags(uint64_t v);  // XATTR_CREATE, or 0
std::string FutexOp(int64_t v);      // FUTEX_WAIT_PRIVATE
std::string ClockId(int64_t v);      // CLOCK_MONOTONIC
std::string ArchPrctlCode(int64_t v);
std::string Rlimit(int64_t v);  // RLIMIT_NOFILE
std::string SigprocmaskHow(int64_t v);
std::string MadviseAdvice(int64_t v);
std::string SaFlags(uint64_t v);      // SA_RESTORER|SA_RESTART
std::string WaitOptions(uint64_t v);  // WNOHANG|__WALL, or 0
std::string PrctlOption(int64_t v);
// A file mode with its type: S_IFREG|0644, S_IFDIR|S_ISVTX|0777.
std::string FileMode(uint64_t mode);
// Permission bits only, as a mode argument: 0644, 0 (strace's print_numeric_umode_t).
std::string PermMode(uint64_t mode);

// "SIGCHLD", "SIGRT_1", or the number.
std::string SignalName(int64_t sig);
// A sigset as strace prints it: [INT QUIT], or ~[RTMIN RT_1] when most bits
// are set; `bytes` is how much of the set the call passed (at most 8).
std::string SigSet(uint64_t set, size_t bytes);

// "ENOENT", or "E?" for a value no name is known for.
std::string ErrnoName(int err);

}  // namespace sentry::trace

#endif  // SENTRY_TRACE_TRACE_FLAGS_H_
