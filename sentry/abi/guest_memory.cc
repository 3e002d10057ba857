#include "sentry/abi/guest_memory.h"

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace sentry {
namespace {

size_t ChunkLen(uint64_t addr, size_t remaining) {
  size_t to_page_end = GuestMemory::kPageSize - (addr % GuestMemory::kPageSize);
  return std::min(remaining, to_page_end);
}

}  // namespace

ssize_t ProcessMemoryBackend::ReadChunk(uint64_t addr, void* out, size_t len) {
  iovec local{out, len};
  iovec remote{reinterpret_cast<void*>(addr), len};
  ssize_t n = process_vm_readv(pid_, &local, 1, &remote, 1, 0);
  return n < 0 ? -errno : n;
}

ssize_t ProcessMemoryBackend::WriteChunk(uint64_t addr, const void* in, size_t len) {
  iovec local{const_cast<void*>(in), len};
  iovec remote{reinterpret_cast<void*>(addr), len};
  ssize_t n = process_vm_writev(pid_, &local, 1, &remote, 1, 0);
  return n < 0 ? -errno : n;
}

// The whole range in one call: the kernel copies across pages itself and stops
// at the first page it cannot reach, with a short count; the loop asks again
// from there, where the call then fails (EFAULT) or, for a page that came to be
// meanwhile, goes on. One process_vm_readv (and one notification check) per
// copy, not one per page: 1.9 us each here, with an ID_VALID before each write;
// a 32 KiB getdents64 buffer spans 8 or 9 pages, and a struct stat straddles
// two in ~3 % of processes (the stack's ASLR offset).
SysStatus GuestMemory::CopyIn(GuestAddr src, void* dst, size_t len) {
  uint64_t end;
  if (__builtin_add_overflow(src.raw(), len, &end)) return Errno{EFAULT};
  auto* out = static_cast<char*>(dst);
  uint64_t addr = src.raw();
  while (len > 0) {
    ssize_t n = backend_.ReadChunk(addr, out, len);
    if (n <= 0 || static_cast<size_t>(n) > len) return Errno{EFAULT};
    addr += n;
    out += n;
    len -= n;
  }
  return {};
}

// As CopyIn; a write that stops short has written the bytes before the page it
// could not reach, as the kernel's own copy_to_user does, and nothing after.
SysStatus GuestMemory::CopyOut(GuestAddr dst, const void* src, size_t len) {
  SYS_ASSIGN_OR_RETURN(size_t done, CopyOutSome(dst, src, len));
  if (done != len) return Errno{EFAULT};
  return {};
}

SysResult<size_t> GuestMemory::CopyOutSome(GuestAddr dst, const void* src, size_t len) {
  uint64_t end;
  if (__builtin_add_overflow(dst.raw(), len, &end)) return Errno{EFAULT};
  const auto* in = static_cast<const char*>(src);
  uint64_t addr = dst.raw();
  size_t done = 0;
  while (done < len) {
    ssize_t n = backend_.WriteChunk(addr, in + done, len - done);
    // A caller gone (a notification withdrawn) is no short write: nothing
    // that follows from what landed (a directory's position) may happen.
    if (n == -ESRCH) return Errno{EFAULT};
    if (n <= 0 || static_cast<size_t>(n) > len - done) break;
    addr += n;
    done += n;
  }
  if (done == 0 && len > 0) return Errno{EFAULT};
  return done;
}

SysResult<std::string> GuestMemory::CopyInString(GuestAddr src, size_t max_len) {
  std::string out;
  char buf[kPageSize];
  uint64_t addr = src.raw();
  size_t limit = max_len + 1;  // room to find the NUL
  while (out.size() < limit) {
    size_t chunk = ChunkLen(addr, limit - out.size());
    ssize_t n = backend_.ReadChunk(addr, buf, chunk);
    if (n <= 0) return Errno{EFAULT};
    if (const void* nul = std::memchr(buf, 0, n)) {
      out.append(buf, static_cast<const char*>(nul) - buf);
      return out;
    }
    out.append(buf, n);
    uint64_t next;
    if (__builtin_add_overflow(addr, static_cast<uint64_t>(n), &next)) return Errno{EFAULT};
    addr = next;
  }
  return Errno{ENAMETOOLONG};
}

}  // namespace sentry
