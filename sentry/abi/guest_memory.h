// Typed access to a guest process's memory.
//
// GuestAddr is the only name for a guest address: it cannot be dereferenced and
// does not convert to a host pointer. GuestMemory reads and writes through
// process_vm_readv/writev: a buffer in one call, however many pages it spans
// (the kernel stops at the first page it cannot reach and says how far it got);
// a string one page at a time, so that no page past its NUL is touched and a
// fault on a later page still yields the bytes before it. A fault is an EFAULT
// for the guest, never a crash of the sentry. Every length is bounded by the
// caller.
#ifndef SENTRY_ABI_GUEST_MEMORY_H_
#define SENTRY_ABI_GUEST_MEMORY_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "sentry/base/sys_result.h"

namespace sentry {

class GuestAddr final {
 public:
  constexpr GuestAddr() = default;
  constexpr explicit GuestAddr(uint64_t addr) : addr_(addr) {}
  constexpr uint64_t raw() const { return addr_; }
  constexpr bool null() const { return addr_ == 0; }
  // Overflow-checked offset; an address that wraps is EFAULT.
  SysResult<GuestAddr> Offset(uint64_t bytes) const {
    uint64_t out;
    if (__builtin_add_overflow(addr_, bytes, &out)) return Errno{EFAULT};
    return GuestAddr(out);
  }

 private:
  uint64_t addr_ = 0;
};

// The raw byte mover behind GuestMemory; a fake in unit tests.
class MemoryBackend {
 public:
  virtual ~MemoryBackend() = default;
  // Reads up to len bytes, across pages; returns the bytes read (short when a
  // later page cannot be reached, as process_vm_readv is) or -errno.
  virtual ssize_t ReadChunk(uint64_t addr, void* out, size_t len) = 0;
  virtual ssize_t WriteChunk(uint64_t addr, const void* in, size_t len) = 0;
  // While on, a read may leave a check of its own to the next write or to
  // Settle (see NotifyLoop's backend). Default: every read is final.
  virtual void DeferReadChecks(bool on) { (void)on; }
  // Whether every read so far is known good (checks one deferred, if any).
  virtual bool Settle() { return true; }
};

// process_vm_readv/writev on a host pid.
class ProcessMemoryBackend final : public MemoryBackend {
 public:
  explicit ProcessMemoryBackend(pid_t pid) : pid_(pid) {}
  ssize_t ReadChunk(uint64_t addr, void* out, size_t len) override;
  ssize_t WriteChunk(uint64_t addr, const void* in, size_t len) override;

 private:
  pid_t pid_;
};

class GuestMemory final {
 public:
  static constexpr size_t kPageSize = 4096;

  explicit GuestMemory(MemoryBackend& backend) : backend_(backend) {}

  SysStatus CopyIn(GuestAddr src, void* dst, size_t len);
  SysStatus CopyOut(GuestAddr dst, const void* src, size_t len);
  // Writes what it can of len bytes at dst: the count written before the
  // first page that cannot be written (getdents64 returns the records that
  // landed), or EFAULT when not one byte could be.
  SysResult<size_t> CopyOutSome(GuestAddr dst, const void* src, size_t len);

  template <typename T>
  SysResult<T> CopyIn(GuestAddr src) {
    static_assert(std::is_trivially_copyable_v<T>);
    T value;
    SYS_TRY(CopyIn(src, &value, sizeof(T)));
    return value;
  }
  template <typename T>
  SysStatus CopyOutValue(GuestAddr dst, const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    return CopyOut(dst, &value, sizeof(T));
  }

  // Reads a NUL-terminated string of at most max_len bytes (NUL excluded).
  // ENAMETOOLONG when no NUL is found within max_len + 1 bytes; EFAULT when the
  // string runs into unmapped memory first.
  SysResult<std::string> CopyInString(GuestAddr src, size_t max_len);

  // See MemoryBackend: for handlers that do nothing with what they read but
  // resolve it before their first write (the dispatcher decides).
  void DeferReadChecks(bool on) { backend_.DeferReadChecks(on); }
  bool Settle() { return backend_.Settle(); }

 private:
  MemoryBackend& backend_;
};

}  // namespace sentry

#endif  // SENTRY_ABI_GUEST_MEMORY_H_
