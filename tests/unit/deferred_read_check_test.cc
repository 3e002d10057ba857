// The dispatcher's deferred read checks (sentry/kernel/dispatcher.cc,
// DefersReadChecks; NotifMemoryBackend in sentry/platform/notify_loop.cc):
// only stat-like calls and read-only opens read without a check of their
// own, only while their handler runs, and nothing a withdrawn call read
// reaches the run's denial record or the guest's fd table. The handlers are fakes with a fake
// memory backend whose notification is valid or withdrawn; the dispatcher and kernel are real.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include "sentry/kernel/dispatcher.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/syscall_context.h"
#include "syscalls/table.h"

namespace sentry {
namespace {

// Every address reads as "/secret\0"; the notification is valid or not.
class CheckingBackend final : public MemoryBackend {
 public:
  ssize_t ReadChunk(uint64_t addr, void* out, size_t len) override {
    static const char kText[] = "/secret";
    (void)addr;
    size_t n = std::min(len, sizeof(kText));
    memcpy(out, kText, n);
    ++reads;
    if (defer) {
      ++deferred_reads;
      unchecked = true;
    } else {
      ++checks;
      if (!valid) return -ESRCH;
    }
    return static_cast<ssize_t>(n);
  }
  ssize_t WriteChunk(uint64_t, const void*, size_t len) override {
    ++checks;
    if (!valid) return -ESRCH;
    unchecked = false;
    return static_cast<ssize_t>(len);
  }
  void DeferReadChecks(bool on) override { defer = on; }
  bool Settle() override {
    if (!unchecked) return true;
    ++checks;
    if (!valid) return false;
    unchecked = false;
    return true;
  }

  bool valid = true;
  bool defer = false;
  bool unchecked = false;
  int reads = 0, deferred_reads = 0, checks = 0;
};

// Installs as SECCOMP_IOCTL_NOTIF_ADDFD does: refused (ENOENT) for a
// withdrawn notification, which is what proves a read-only open's reads.
class AddFdLike final : public GuestFds {
 public:
  explicit AddFdLike(const CheckingBackend& b) : b_(b) {}
  SysResult<UniqueFd> Get(int) override { return Errno{EBADF}; }
  SysResult<int> Install(int, bool) override {
    if (!b_.valid) return Errno{ENOENT};
    ++installed;
    return 3;
  }
  int installed = 0;

 private:
  const CheckingBackend& b_;
};

// A handler that reads a path, then refuses with a hint (a denial): what
// the run's denied list would show.
SysResult<uint64_t> ReadThenDeny(SyscallContext& ctx) {
  auto path = ctx.mem.CopyInString(ctx.args.Ptr(0), 4095);
  if (!path.ok()) return Errno{path.error()};
  ctx.hint = "refused " + *path;
  return Errno{EACCES};
}
// A handler that reads a path and fails with ENOENT (no record).
SysResult<uint64_t> ReadThenEnoent(SyscallContext& ctx) {
  auto path = ctx.mem.CopyInString(ctx.args.Ptr(0), 4095);
  if (!path.ok()) return Errno{path.error()};
  return Errno{ENOENT};
}
// A handler that reads a path and installs an fd (an open's donation).
SysResult<uint64_t> ReadThenInstall(SyscallContext& ctx) {
  auto path = ctx.mem.CopyInString(ctx.args.Ptr(0), 4095);
  if (!path.ok()) return Errno{path.error()};
  SYS_ASSIGN_OR_RETURN(int fd, ctx.fds.Install(-1, true));
  return static_cast<uint64_t>(fd);
}
// A handler that reads a path and writes a result.
SysResult<uint64_t> ReadThenWrite(SyscallContext& ctx) {
  auto path = ctx.mem.CopyInString(ctx.args.Ptr(0), 4095);
  if (!path.ok()) return Errno{path.error()};
  uint64_t value = path->size();
  if (!ctx.mem.CopyOutValue(ctx.args.Ptr(1), value).ok()) return Errno{EFAULT};
  return 0;
}

SyscallHandler g_handler = nullptr;
SyscallRow g_row;
const SyscallRow* FindFake(int nr) {
  g_row =
      SyscallRow{nr, "fake", Action::kTrap, 0, g_handler, ArgFilter::kNone, "sp", Wall::kNone, ""};
  return &g_row;
}

struct Outcome {
  int64_t value = 0;
  uint64_t denials = 0;
  int installed = 0;
  CheckingBackend backend;
};

// flags: the third register (an openat's flags; an open's are the second).
void Dispatch(int nr, SyscallHandler handler, bool valid, bool fast_trap, Outcome& run,
              uint64_t flags = 0) {
  KernelConfig config;
  config.fast_trap = fast_trap;
  Kernel kernel(nullptr, config);
  Task task;
  task.process = std::make_shared<Process>();
  task.process->exe = "/bin/fake";
  run.backend.valid = valid;
  GuestMemory mem(run.backend);
  AddFdLike fds(run.backend);
  SyscallContext ctx{kernel, task, mem, fds, {}};
  ctx.args.raw[0] = 0x1000;
  ctx.args.raw[1] = nr == SYS_open ? flags : 0x2000;
  ctx.args.raw[2] = flags;
  g_handler = handler;
  Dispatcher dispatcher(nullptr, &FindFake);
  run.value = dispatcher.Dispatch(ctx, nr).value;
  run.denials = kernel.denial_count;
  run.installed = fds.installed;
  EXPECT_FALSE(run.backend.defer) << "deferral must end with the handler";
}

TEST(DeferredReadCheckTest, StatLikeCallLeavesItsReadCheckToItsWrite) {
  Outcome run;
  Dispatch(SYS_newfstatat, &ReadThenWrite, /*valid=*/true, /*fast_trap=*/true, run);
  EXPECT_EQ(run.value, 0);
  EXPECT_EQ(run.backend.deferred_reads, run.backend.reads);
  EXPECT_EQ(run.backend.checks, 1);  // the write's alone
}

TEST(DeferredReadCheckTest, WithdrawnStatWritesNothing) {
  Outcome run;
  Dispatch(SYS_stat, &ReadThenWrite, /*valid=*/false, /*fast_trap=*/true, run);
  EXPECT_EQ(run.value, -EFAULT);
}

TEST(DeferredReadCheckTest, EnoentCostsNoCheck) {
  Outcome run;
  Dispatch(SYS_access, &ReadThenEnoent, /*valid=*/true, /*fast_trap=*/true, run);
  EXPECT_EQ(run.value, -ENOENT);
  EXPECT_EQ(run.backend.checks, 0);  // the reply alone is refused if withdrawn
}

TEST(DeferredReadCheckTest, DenialIsRecordedOnlyOnceItsReadsAreProven) {
  Outcome valid;
  Dispatch(SYS_stat, &ReadThenDeny, /*valid=*/true, /*fast_trap=*/true, valid);
  EXPECT_EQ(valid.value, -EACCES);
  EXPECT_EQ(valid.denials, 1u);
  // Withdrawn: what was read may be another process's (a reused pid); it
  // must not reach the run's denied list.
  Outcome withdrawn;
  Dispatch(SYS_stat, &ReadThenDeny, /*valid=*/false, /*fast_trap=*/true, withdrawn);
  EXPECT_EQ(withdrawn.value, -EFAULT);
  EXPECT_EQ(withdrawn.denials, 0u);
}

TEST(DeferredReadCheckTest, OtherCallsCheckEveryReadAtOnce) {
  for (int nr : {SYS_mkdir, SYS_unlink, SYS_rename, SYS_openat2}) {
    Outcome run;
    Dispatch(nr, &ReadThenEnoent, /*valid=*/false, /*fast_trap=*/true, run);
    EXPECT_EQ(run.backend.deferred_reads, 0) << nr;
    EXPECT_EQ(run.value, -EFAULT) << nr;  // the read's own check refused it
  }
}

TEST(DeferredReadCheckTest, ReadOnlyOpenLeavesItsReadCheckToItsFd) {
  for (int nr : {SYS_open, SYS_openat}) {
    Outcome run;
    Dispatch(nr, &ReadThenInstall, /*valid=*/true, /*fast_trap=*/true, run,
             O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    EXPECT_EQ(run.value, 3) << nr;
    EXPECT_EQ(run.backend.deferred_reads, run.backend.reads) << nr;
    EXPECT_EQ(run.backend.checks, 0) << nr;  // the install is the check
    EXPECT_EQ(run.installed, 1) << nr;
  }
}

TEST(DeferredReadCheckTest, WithdrawnReadOnlyOpenInstallsNothing) {
  Outcome run;
  Dispatch(SYS_openat, &ReadThenInstall, /*valid=*/false, /*fast_trap=*/true, run, O_RDONLY);
  EXPECT_LT(run.value, 0);
  EXPECT_EQ(run.installed, 0);
  // Denied after reading (a permission): no record from unproven bytes.
  Outcome denied;
  Dispatch(SYS_openat, &ReadThenDeny, /*valid=*/false, /*fast_trap=*/true, denied, O_RDONLY);
  EXPECT_EQ(denied.value, -EFAULT);
  EXPECT_EQ(denied.denials, 0u);
}

TEST(DeferredReadCheckTest, OpensThatWriteCreateOrTruncateCheckAtOnce) {
  for (uint64_t flags : {uint64_t{O_WRONLY}, uint64_t{O_RDWR}, uint64_t{O_RDONLY | O_CREAT},
                         uint64_t{O_RDONLY | O_TRUNC}, uint64_t{O_TMPFILE | O_RDWR}}) {
    for (int nr : {SYS_open, SYS_openat}) {
      Outcome run;
      Dispatch(nr, &ReadThenInstall, /*valid=*/false, /*fast_trap=*/true, run, flags);
      EXPECT_EQ(run.backend.deferred_reads, 0) << nr << " " << flags;
      EXPECT_EQ(run.value, -EFAULT) << nr << " " << flags;
      EXPECT_EQ(run.installed, 0) << nr << " " << flags;
    }
  }
  Outcome off;  // --no-fast-trap: a read-only open checks at once too
  Dispatch(SYS_openat, &ReadThenInstall, /*valid=*/true, /*fast_trap=*/false, off, O_RDONLY);
  EXPECT_EQ(off.backend.deferred_reads, 0);
  EXPECT_EQ(off.backend.checks, off.backend.reads);
}

TEST(DeferredReadCheckTest, NoFastTrapChecksEveryRead) {
  Outcome run;
  Dispatch(SYS_stat, &ReadThenWrite, /*valid=*/true, /*fast_trap=*/false, run);
  EXPECT_EQ(run.value, 0);
  EXPECT_EQ(run.backend.deferred_reads, 0);
  EXPECT_EQ(run.backend.checks, run.backend.reads + 1);
}

}  // namespace
}  // namespace sentry
