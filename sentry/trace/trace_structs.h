// Guest memory as --trace shows it, in strace's notation: strings quoted and
// escaped ("\177ELF\2\1", clipped after 32 bytes with "..."), paths in full,
// argv arrays, and the structs the trapped calls pass (stat, statx, statfs,
// sockaddrs of every family, msghdrs, timespecs...).
//
// Every read is bounded (a path: PATH_MAX; a buffer: 32 bytes; an array: 32
// elements; a msghdr's iovecs: 32) and goes through GuestMemory, so a bad
// pointer is shown as its address, never a fault of the sentry. `mem` may be
// null (no memory to read): pointers are then shown as addresses. Nothing a
// handler decides depends on what these read: display only.
#ifndef SENTRY_TRACE_TRACE_STRUCTS_H_
#define SENTRY_TRACE_TRACE_STRUCTS_H_

#include <signal.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "sentry/abi/guest_memory.h"

namespace sentry::trace {

// strace's default -s 32.
inline constexpr size_t kMaxStrLen = 32;

std::string Addr(uint64_t addr);  // NULL, or 0x7ffc51b42e48
// bytes quoted and escaped; `more`: append "..." (the string went on).
std::string Quote(std::string_view bytes, bool more = false);
std::string Path(GuestMemory* mem, uint64_t addr);     // a path, up to PATH_MAX
std::string CString(GuestMemory* mem, uint64_t addr);  // a string, clipped at 32
// len bytes of a buffer, clipped at 32 (read, write, getxattr values).
std::string Buffer(GuestMemory* mem, uint64_t addr, uint64_t len);
std::string StringArray(GuestMemory* mem, uint64_t addr);  // ["sh", "-c", ...]
std::string EnvArray(GuestMemory* mem, uint64_t addr);     // 0x7ffc... /* 5 vars */
std::string IntPair(GuestMemory* mem, uint64_t addr);      // [3, 4] (pipe, socketpair)
std::string Stat(GuestMemory* mem, uint64_t addr);         // {st_mode=S_IFREG|0644, ...}
std::string Statx(GuestMemory* mem, uint64_t addr);
std::string Statfs(GuestMemory* mem, uint64_t addr);
std::string Sysinfo(GuestMemory* mem, uint64_t addr);
std::string SockAddr(GuestMemory* mem, uint64_t addr, uint64_t len);
// A msghdr; `sent`: the bytes the call moved (-1: show what iovecs hold).
std::string Msghdr(GuestMemory* mem, uint64_t addr, int64_t sent);
std::string Mmsghdrs(GuestMemory* mem, uint64_t addr, uint64_t count);
std::string Iovecs(GuestMemory* mem, uint64_t addr, uint64_t count, int64_t total);
std::string Timespec(GuestMemory* mem, uint64_t addr);
std::string TimespecPair(GuestMemory* mem, uint64_t addr);  // utimensat
std::string TimevalPair(GuestMemory* mem, uint64_t addr);   // utimes, futimesat
std::string Utimbuf(GuestMemory* mem, uint64_t addr);       // utime
std::string CpuSet(GuestMemory* mem, uint64_t addr, uint64_t len);
std::string OpenHow(GuestMemory* mem, uint64_t addr, uint64_t size);
std::string SigSetAt(GuestMemory* mem, uint64_t addr, uint64_t size);
std::string Sigaction(GuestMemory* mem, uint64_t addr);
std::string Rlimit64(GuestMemory* mem, uint64_t addr);
std::string WaitStatus(GuestMemory* mem, uint64_t addr);
// A wait status as strace shows it: {WIFEXITED(s) && WEXITSTATUS(s) == 0}.
std::string WaitStatusText(int status);
// The payload of a signal stop: {si_signo=SIGCHLD, si_code=CLD_EXITED, ...}.
std::string SigInfo(const siginfo_t& si);
std::string XattrList(GuestMemory* mem, uint64_t addr, int64_t len);

}  // namespace sentry::trace

#endif  // SENTRY_TRACE_TRACE_STRUCTS_H_
