#include "vfs/snapshot_wire.h"

#include <fcntl.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

namespace sentry::vfs::snapshot {

bool Out::WriteAll(const char* p, size_t n) {
  while (n > 0 && !err_) {
    ssize_t w = write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      err_ = w < 0 ? errno : EIO;
      break;
    }
    p += w;
    n -= static_cast<size_t>(w);
    sent_ += static_cast<uint64_t>(w);
  }
  return !err_;
}

void Out::Bytes(const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  if (used_ + n > kBufferSize) {
    if (!Flush()) return;
    if (n > kBufferSize) {
      WriteAll(c, n);
      return;
    }
  }
  std::memcpy(buf_.get() + used_, c, n);
  used_ += n;
}

bool Out::Flush() {
  size_t n = std::exchange(used_, 0);
  return WriteAll(buf_.get(), n);
}

bool Out::FileData(int src, uint64_t len) {
  if (!Flush()) return false;
  off_t off = 0;
  uint64_t left = len;
  while (left > 0) {
    ssize_t n = sendfile(fd_, src, &off, std::min<uint64_t>(left, 1 << 30));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      err_ = errno;
      return false;
    }
    if (n == 0) break;  // shorter than it was: zeros below
    left -= static_cast<uint64_t>(n);
    sent_ += static_cast<uint64_t>(n);
  }
  std::vector<char> zeros(std::min<uint64_t>(left, kBufferSize), 0);
  while (left > 0 && !err_) {
    size_t n = std::min<uint64_t>(left, zeros.size());
    WriteAll(zeros.data(), n);
    left -= n;
  }
  return !err_;
}

bool In::Fill() {
  if (failed()) return false;
  while (true) {
    ssize_t n = read(fd_, buf_.get(), kBufferSize);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Fail(std::string("cannot read the snapshot: ") + strerror(errno));
      return false;
    }
    if (n == 0) {
      Fail("the snapshot stream ends early");
      return false;
    }
    pos_ = 0;
    end_ = static_cast<size_t>(n);
    received_ += static_cast<uint64_t>(n);
    return true;
  }
}

void In::Bytes(void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    if (pos_ == end_ && !Fill()) {
      std::memset(c, 0, n);
      return;
    }
    size_t k = std::min(n, end_ - pos_);
    std::memcpy(c, buf_.get() + pos_, k);
    pos_ += k;
    c += k;
    n -= k;
  }
}

timespec In::Time() {
  timespec t;
  t.tv_sec = static_cast<time_t>(U64());
  t.tv_nsec = static_cast<long>(U64());
  if (t.tv_nsec < 0 || t.tv_nsec >= 1000000000) {
    Fail("a time in the snapshot is out of range");
    t.tv_nsec = 0;
  }
  return t;
}

std::string In::Str(size_t max) {
  uint32_t n = U32();
  if (failed()) return {};
  if (n > max) {
    Fail("a string in the snapshot is longer than " + std::to_string(max) + " bytes");
    return {};
  }
  std::string s(n, '\0');
  Bytes(s.data(), n);
  return s;
}

int In::SpliceData(int dst, off_t* off, size_t n) {
  if (!pipe_r_) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
      splice_ok_ = false;
      return 0;
    }
    pipe_r_.Reset(p[0]);
    pipe_w_.Reset(p[1]);
    fcntl(p[1], F_SETPIPE_SZ, 1 << 20);  // fewer rounds; the default 64 KiB also works
  }
  ssize_t got;
  do {
    got = splice(fd_, nullptr, pipe_w_.get(), nullptr, n, SPLICE_F_MOVE);
  } while (got < 0 && errno == EINTR);
  if (got < 0 && (errno == EINVAL || errno == ENOSYS)) {
    splice_ok_ = false;
    return 0;
  }
  if (got <= 0) {
    Fail(got == 0 ? "the snapshot stream ends early"
                  : std::string("cannot read the snapshot: ") + strerror(errno));
    return -1;
  }
  received_ += static_cast<uint64_t>(got);
  // Into the file; a file that takes no splice is written from a buffer.
  for (ssize_t left = got; left > 0;) {
    ssize_t w = splice(pipe_r_.get(), nullptr, dst, off, static_cast<size_t>(left), SPLICE_F_MOVE);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EINVAL) {
      splice_ok_ = false;
      std::vector<char> buf(static_cast<size_t>(left));
      ssize_t r = read(pipe_r_.get(), buf.data(), buf.size());
      if (r != left || pwrite(dst, buf.data(), buf.size(), *off) != left) {
        Fail("cannot write the copy");
        return -1;
      }
      *off += left;
      break;
    }
    if (w <= 0) {
      Fail(w < 0 && errno == ENOSPC
               ? "the store is full (--disk)"
               : std::string("cannot write the copy: ") + strerror(w < 0 ? errno : EIO));
      return -1;
    }
    left -= w;
  }
  return static_cast<int>(got);
}

void In::FileData(int dst, uint64_t len) {
  off_t off = 0;
  // First what the buffer holds, then the rest in large reads.
  std::unique_ptr<char[]> big;
  constexpr size_t kChunk = 1 << 20;
  while (len > 0 && !failed()) {
    if (pos_ == end_) {
      if (len >= kBufferSize && splice_ok_) {
        int moved = SpliceData(dst, &off, std::min<uint64_t>(len, kChunk));
        if (moved > 0) {
          len -= static_cast<uint64_t>(moved);
          continue;
        }
        if (moved < 0) return;  // failed
        // 0: this fd cannot splice; read and write below from now on.
      }
      if (len >= kBufferSize) {
        if (!big) big.reset(new char[kChunk]);
        ssize_t n = read(fd_, big.get(), std::min<uint64_t>(len, kChunk));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          Fail(n == 0 ? "the snapshot stream ends early"
                      : std::string("cannot read the snapshot: ") + strerror(errno));
          return;
        }
        received_ += static_cast<uint64_t>(n);
        for (ssize_t done = 0; done < n;) {
          ssize_t w = pwrite(dst, big.get() + done, static_cast<size_t>(n - done), off);
          if (w < 0 && errno == EINTR) continue;
          if (w <= 0) {
            Fail(w < 0 && errno == ENOSPC
                     ? "the store is full (--disk)"
                     : std::string("cannot write the copy: ") + strerror(w < 0 ? errno : EIO));
            return;
          }
          done += w;
          off += w;
        }
        len -= static_cast<uint64_t>(n);
        continue;
      }
      if (!Fill()) return;
    }
    size_t k = std::min<uint64_t>(len, end_ - pos_);
    ssize_t w = pwrite(dst, buf_.get() + pos_, k, off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      Fail(w < 0 && errno == ENOSPC
               ? "the store is full (--disk)"
               : std::string("cannot write the copy: ") + strerror(w < 0 ? errno : EIO));
      return;
    }
    pos_ += static_cast<size_t>(w);
    off += w;
    len -= static_cast<uint64_t>(w);
  }
}

}  // namespace sentry::vfs::snapshot
