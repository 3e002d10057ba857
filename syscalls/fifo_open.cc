// Opening a FIFO of the sandbox (a mkfifo'd node, a FIFO in the store).
//
// A blocking open waits for the other end, as Linux's does: for writing
// until a reader has the FIFO open, for reading until a writer comes. The
// sentry itself never blocks: it opens the store's FIFO with O_NONBLOCK, and a
// call that must wait finishes on a fiber (ctx.later, base/fiber_loop.h)
// that tries again as the other end may have come.
//
// A reader waits until a writer opens through the sentry (every open in the
// sandbox is the sentry's), writes, or opens and closes. One difference
// remains, by design: a writer that held the FIFO open before the reader came
// and has neither written nor closed holds the reader in its open, where
// natively the open returns at once and the first read waits instead. What
// the reader then reads is the same.
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <memory>

#include "sentry/base/fiber_loop.h"
#include "syscalls/common.h"
#include "syscalls/handlers.h"

namespace sentry::sys {
namespace {

// How often a waiting open looks again, at most (it starts at 1 ms).
constexpr int kMaxPauseMs = 20;

void ClearNonblock(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK); }

// A writer: until a reader has the FIFO open, an open with O_NONBLOCK fails
// with ENXIO; the fiber tries again.
void WaitForReader(std::shared_ptr<UniqueFd> dir, const std::string& name, bool cloexec,
                   const std::shared_ptr<std::atomic<uint64_t>>& writers, LateAnswer& answer) {
  int pause_ms = 1;
  while (answer.Wanted()) {
    UniqueFd fd(openat(dir->get(), name.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW));
    if (fd.get() >= 0) {
      writers->fetch_add(1);
      ClearNonblock(fd.get());
      SysResult<int> guest_fd = answer.Install(fd.get(), cloexec);
      if (!guest_fd.ok()) return answer.Answer(Errno{guest_fd.error()});
      return answer.Answer(static_cast<uint64_t>(*guest_fd));
    }
    if (errno != ENXIO) return answer.Answer(Errno{errno});
    WaitMs(pause_ms);
    pause_ms = std::min(pause_ms * 2, kMaxPauseMs);
  }
}

// A reader, holding its end already (which lets writers in): until data
// comes, a writer closes (POLLHUP), or a writer opens through the sentry.
void WaitForWriter(std::shared_ptr<UniqueFd> fd, bool cloexec, uint64_t writers_before,
                   const std::shared_ptr<std::atomic<uint64_t>>& writers, LateAnswer& answer) {
  int pause_ms = 1;
  while (answer.Wanted()) {
    pollfd p{fd->get(), POLLIN, 0};
    if (WaitPoll(&p, 1, pause_ms) < 0 && errno != EINTR) return answer.Answer(Errno{errno});
    if ((p.revents & (POLLIN | POLLHUP)) || writers->load() != writers_before) {
      ClearNonblock(fd->get());
      SysResult<int> guest_fd = answer.Install(fd->get(), cloexec);
      if (!guest_fd.ok()) return answer.Answer(Errno{guest_fd.error()});
      return answer.Answer(static_cast<uint64_t>(*guest_fd));
    }
    pause_ms = std::min(pause_ms * 2, kMaxPauseMs);
  }
}

}  // namespace

SysResult<uint64_t> OpenFifo(SyscallContext& ctx, const vfs::NodeRef& node, int flags,
                             std::string path) {
  if (!node->fifo_writer_opens) {
    node->fifo_writer_opens = std::make_shared<std::atomic<uint64_t>>(0);
  }
  std::shared_ptr<std::atomic<uint64_t>> writers = node->fifo_writer_opens;
  int acc = flags & O_ACCMODE;
  bool cloexec = flags & O_CLOEXEC;
  bool may_wait = !(flags & O_NONBLOCK) && acc != O_RDWR;  // O_RDWR never waits
  SysResult<UniqueFd> now = ctx.vfs().OpenData(*node, flags | O_NONBLOCK);
  if (now.ok() && acc != O_RDONLY) writers->fetch_add(1);
  if (!may_wait || (now.ok() && acc == O_WRONLY)) {
    if (!now.ok()) return Errno{now.error()};
    if (!(flags & O_NONBLOCK)) ClearNonblock(now->get());
    return Donate(ctx, std::move(*now), node, false, cloexec, std::move(path));
  }
  if (acc == O_WRONLY) {
    if (now.error() != ENXIO) return Errno{now.error()};
    struct stat st;
    int store_dir = ctx.vfs().store().dir_fd();
    if (fstatat(store_dir, node->store_name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) {
      return Errno{errno};
    }
    SYS_TRY(RegisterOpen(ctx, st, node, false, std::move(path)));
    auto dir = std::make_shared<UniqueFd>(fcntl(store_dir, F_DUPFD_CLOEXEC, 0));
    if (dir->get() < 0) return Errno{errno};
    ctx.later = [dir, name = node->store_name, cloexec, writers](LateAnswer& answer) {
      WaitForReader(dir, name, cloexec, writers, answer);
    };
    return 0;
  }
  if (!now.ok()) return Errno{now.error()};
  pollfd p{now->get(), POLLIN, 0};
  if (poll(&p, 1, 0) == 1) {  // a writer has written already
    ClearNonblock(now->get());
    return Donate(ctx, std::move(*now), node, false, cloexec, std::move(path));
  }
  struct stat st;
  if (fstat(now->get(), &st) < 0) return Errno{errno};
  SYS_TRY(RegisterOpen(ctx, st, node, false, std::move(path)));
  auto fd = std::make_shared<UniqueFd>(std::move(*now));
  ctx.later = [fd, cloexec, before = writers->load(), writers](LateAnswer& answer) {
    WaitForWriter(fd, cloexec, before, writers, answer);
  };
  return 0;
}

}  // namespace sentry::sys
