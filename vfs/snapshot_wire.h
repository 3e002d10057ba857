// The byte stream of a VFS snapshot (vfs_snapshot.h): little-endian integers,
// strings as a u32 length and bytes, file data as a u64 length and bytes.
// A writer and a reader over an fd, each with a buffer; the reader bounds
// every length it is given and keeps its first error.
//
// The stream: magic u64, version u32, data bytes u64 (the upper files' data,
// each rounded up to a page), then the root directory's record, then 'Z'
// with the number of records and the data bytes sent, again.
// A record: a tag byte, the entry's name, then by tag:
//   'D' directory: node, class (0 in memory, 1 lower: host ref), whiteouts
//       (u32 count, names), subdir_delta (i32); its entries; 'E'.
//   'F' upper file: node, data atime, data mtime, size u64, the data.
//   'L' lower file: node, host ref (its host directory), host name.
//   'S' symlink: node, target.   'P' FIFO: node.   'K' socket: node.
//   'V' device: node, host path.
//   'H' another name of the nth node record (u64), a hard link.
//   'k' a generated node or mount of the new tree's own, same name.
// A node: mode, uid, gid u32; rdev, ino, dev u64; atime, mtime, ctime and
// the host lookup's ctime (i64 sec, i64 nsec each); nlink u32; flags u8
// (kGuestMade, kCached); xattrs (u32 count, name and value each).
// A host ref: the host directory's path (HostDir::path) and its flags u8
// (kHostReadOnly, kHostFiltered, kHostOwnerView).
#ifndef SENTRY_VFS_SNAPSHOT_WIRE_H_
#define SENTRY_VFS_SNAPSHOT_WIRE_H_

#include <time.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "sentry/base/unique_fd.h"

namespace sentry::vfs::snapshot {

inline constexpr uint32_t kVersion = 1;
inline constexpr uint8_t kGuestMade = 1, kCached = 2;
inline constexpr uint8_t kHostReadOnly = 1, kHostFiltered = 2, kHostOwnerView = 4;
inline constexpr size_t kBufferSize = 1 << 16;

class Out final {
 public:
  explicit Out(int fd) : fd_(fd), buf_(new char[kBufferSize]) {}
  void U8(uint8_t v) { Bytes(&v, 1); }
  void U32(uint32_t v) { Bytes(&v, 4); }
  void U64(uint64_t v) { Bytes(&v, 8); }
  void Time(const timespec& t) {
    U64(static_cast<uint64_t>(t.tv_sec));
    U64(static_cast<uint64_t>(t.tv_nsec));
  }
  void Str(const std::string& s) {
    U32(static_cast<uint32_t>(s.size()));
    Bytes(s.data(), s.size());
  }
  void Bytes(const void* p, size_t n);
  // Sends len bytes of src from offset 0 (sendfile), zeros past its end if
  // it is shorter now.
  bool FileData(int src, uint64_t len);
  bool Flush();
  bool failed() const { return err_ != 0; }
  int err() const { return err_; }
  uint64_t sent() const { return sent_ + used_; }

 private:
  bool WriteAll(const char* p, size_t n);
  int fd_;
  std::unique_ptr<char[]> buf_;
  size_t used_ = 0;
  uint64_t sent_ = 0;
  int err_ = 0;
};

class In final {
 public:
  explicit In(int fd) : fd_(fd), buf_(new char[kBufferSize]) {}
  uint8_t U8() {
    uint8_t v = 0;
    Bytes(&v, 1);
    return v;
  }
  uint32_t U32() {
    uint32_t v = 0;
    Bytes(&v, 4);
    return v;
  }
  uint64_t U64() {
    uint64_t v = 0;
    Bytes(&v, 8);
    return v;
  }
  timespec Time();
  // A string of at most max bytes (longer: an error, nothing read).
  std::string Str(size_t max);
  void Bytes(void* p, size_t n);
  // Copies len bytes of the stream into dst (an fd at offset 0).
  void FileData(int dst, uint64_t len);
  // The first error, as a sentence ("" while none).
  void Fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
  }
  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }
  uint64_t received() const { return received_ - (end_ - pos_); }

 private:
  bool Fill();
  // Moves up to n bytes from the stream into dst at *off through a pipe,
  // with no copy through this process: the bytes moved, 0 where the fds
  // take no splice (then never tried again), -1 on an error (kept).
  int SpliceData(int dst, off_t* off, size_t n);
  int fd_;
  bool splice_ok_ = true;
  UniqueFd pipe_r_, pipe_w_;
  std::unique_ptr<char[]> buf_;
  size_t pos_ = 0, end_ = 0;
  uint64_t received_ = 0;
  std::string error_;
};

}  // namespace sentry::vfs::snapshot

#endif  // SENTRY_VFS_SNAPSHOT_WIRE_H_
