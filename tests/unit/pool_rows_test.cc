// The rule of the pools (DESIGN.md), checked on both syscall tables: every
// row that can make a kernel object natively names the pool that bounds it.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "syscalls/table.h"

namespace sentry {
namespace {

// The calls that make a kernel object a guest could pile up: fds with
// objects behind them, queues, queued signals, AIO contexts, pipe buffers,
// SysV objects, locks, processes, and the families the table denies today
// (a row that lets one through must say what bounds it).
constexpr const char* kAllocating[] = {
    "pipe",
    "pipe2",
    "eventfd",
    "eventfd2",
    "timerfd_create",
    "epoll_create",
    "epoll_create1",
    "epoll_ctl",
    "signalfd",
    "signalfd4",
    "memfd_create",
    "memfd_secret",
    "pidfd_open",
    "inotify_init",
    "inotify_init1",
    "inotify_add_watch",
    "fanotify_init",
    "fanotify_mark",
    "mq_open",
    "mq_timedsend",
    "rt_sigqueueinfo",
    "rt_tgsigqueueinfo",
    "kill",
    "tkill",
    "tgkill",
    "pidfd_send_signal",
    "timer_create",
    "io_setup",
    "io_submit",
    "io_uring_setup",
    "shmget",
    "semget",
    "msgget",
    "msgsnd",
    "flock",
    "fcntl",
    "add_key",
    "request_key",
    "keyctl",
    "userfaultfd",
    "perf_event_open",
    "bpf",
    "fork",
    "vfork",
    "clone",
    "clone3",
};

// Why a row breaks the rule, or "" if it keeps it: a row the guest can
// reach natively (native, a filtered native half, or a trap whose handler
// may let the kernel run it) must name a pool with words for it.
std::string PoolRuleBroken(const SyscallRow& row) {
  if (row.action == Action::kErrno) return "";
  if (row.action == Action::kTrace) return "";  // exec: makes no pooled object
  if (row.pool == Pool::kNone) return std::string(row.name) + " allocates and names no bound";
  if (std::strlen(PoolText(row.pool)) == 0) return std::string(row.name) + ": pool without words";
  return "";
}

TEST(PoolRowsTest, EveryAllocatingRowNamesItsBound) {
  for (auto table : {SyscallTable(), SyscallTableWithoutNamespaces()}) {
    for (const char* name : kAllocating) {
      const SyscallRow* found = nullptr;
      for (const SyscallRow& row : table) {
        if (std::strcmp(row.name, name) == 0) found = &row;
      }
      ASSERT_NE(found, nullptr) << name << " has no row";
      EXPECT_EQ(PoolRuleBroken(*found), "");
    }
  }
}

TEST(PoolRowsTest, TheCheckCatchesARowWithoutABound) {
  SyscallRow native{22,  "pipe",      Action::kNative,      0, nullptr, ArgFilter::kNone,
                    "p", Wall::kNone, "an anonymous object"};
  EXPECT_NE(PoolRuleBroken(native), "");
  native.pool = Pool::kPipeBuffers;
  EXPECT_EQ(PoolRuleBroken(native), "");
  SyscallRow denied{298,     "perf_event_open", Action::kErrno, EACCES, nullptr, ArgFilter::kNone,
                    "pddfx", Wall::kNone,       nullptr};
  EXPECT_EQ(PoolRuleBroken(denied), "");
}

TEST(PoolRowsTest, HostWidePoolsAndHostFlushesAreTrapped) {
  for (auto table : {SyscallTable(), SyscallTableWithoutNamespaces()}) {
    for (const SyscallRow& row : table) {
      // fs.aio-nr is the host's: the sentry keeps the sandbox's share.
      if (std::strcmp(row.name, "io_setup") == 0) {
        EXPECT_EQ(row.action, Action::kTrap);
        EXPECT_EQ(row.pool, Pool::kAio);
      }
      if (std::strcmp(row.name, "sync") == 0 || std::strcmp(row.name, "syncfs") == 0) {
        EXPECT_EQ(row.action, Action::kTrap) << row.name << " would flush the host";
      }
    }
  }
}

}  // namespace
}  // namespace sentry
