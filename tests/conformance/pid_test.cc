// Calls that name a task by pid. A sandbox without a pid namespace checks the
// pid is one of its own and lets the kernel run the call
// (syscalls/sys_pid.cc); with one they are native. Either way they must read
// as the kernel's answers: the caller (0 or its own pid) and its children are
// reachable, a pid that is gone is ESRCH.
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

// ioprio's ABI, written here: the uapi header of linux-libc-dev 6.1.192
// (Debian 12's current one) names a parameter `class`, which C++ cannot parse.
constexpr int kIoprioWhoProcess = 1;
constexpr long IoprioValue(int io_class, int level) { return (long{io_class} << 13) | level; }
constexpr int kIoprioClassRt = 1, kIoprioClassBe = 2;

// linux/sched/types.h's, which cannot be included with <sched.h>.
struct sched_attr {
  uint32_t size;
  uint32_t sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime, sched_deadline, sched_period;
  uint32_t sched_util_min, sched_util_max;
};

pid_t Tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

// A pid that was this process's child and is gone (reaped).
pid_t ReapedPid() {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  EXPECT_GT(pid, 0);
  EXPECT_EQ(waitpid(pid, nullptr, 0), pid);
  return pid;
}

// SIGUSR1 blocked for the object's lifetime, and what is pending of it taken.
class BlockedSigusr1 final {
 public:
  BlockedSigusr1() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set_, &old_);
  }
  BlockedSigusr1(const BlockedSigusr1&) = delete;
  BlockedSigusr1& operator=(const BlockedSigusr1&) = delete;
  ~BlockedSigusr1() { sigprocmask(SIG_SETMASK, &old_, nullptr); }
  // The pending SIGUSR1's info, or si_signo 0 if none is.
  siginfo_t Take() {
    siginfo_t si = {};
    timespec zero = {0, 0};
    if (sigtimedwait(&set_, &si, &zero) < 0) si.si_signo = 0;
    return si;
  }

 private:
  sigset_t set_, old_;
};

siginfo_t Queued(int value) {
  siginfo_t si = {};
  si.si_signo = SIGUSR1;
  si.si_code = SI_QUEUE;
  si.si_pid = getpid();
  si.si_uid = getuid();
  si.si_value.sival_int = value;
  return si;
}

TEST(TkillTest, SignalZeroReachesTheCallerAndNotAGoneTask) {
  EXPECT_SYSCALL_SUCCEEDS(syscall(SYS_tkill, Tid(), 0));
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_tkill, ReapedPid(), 0), ESRCH);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_tkill, 0, 0), EINVAL);
}

TEST(TgkillTest, DeliversToTheCallingThread) {
  BlockedSigusr1 blocked;
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_tgkill, getpid(), Tid(), SIGUSR1));
  siginfo_t si = blocked.Take();
  EXPECT_EQ(si.si_signo, SIGUSR1);
  EXPECT_EQ(si.si_pid, getpid());
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_tgkill, ReapedPid(), Tid(), 0), ESRCH);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_tgkill, -1, Tid(), 0), EINVAL);
}

TEST(RtSigqueueinfoTest, QueuesAValueToTheCaller) {
  BlockedSigusr1 blocked;
  siginfo_t si = Queued(42);
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_rt_sigqueueinfo, getpid(), SIGUSR1, &si));
  siginfo_t got = blocked.Take();
  EXPECT_EQ(got.si_signo, SIGUSR1);
  EXPECT_EQ(got.si_code, SI_QUEUE);
  EXPECT_EQ(got.si_value.sival_int, 42);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_rt_sigqueueinfo, ReapedPid(), SIGUSR1, &si), ESRCH);
}

TEST(RtTgsigqueueinfoTest, QueuesAValueToTheCallingThread) {
  BlockedSigusr1 blocked;
  siginfo_t si = Queued(7);
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_rt_tgsigqueueinfo, getpid(), Tid(), SIGUSR1, &si));
  siginfo_t got = blocked.Take();
  EXPECT_EQ(got.si_signo, SIGUSR1);
  EXPECT_EQ(got.si_value.sival_int, 7);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_rt_tgsigqueueinfo, getpid(), ReapedPid(), SIGUSR1, &si),
                            ESRCH);
}

TEST(PidfdOpenTest, OfTheCallerAndOfAGoneChild) {
  int fd = static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0));
  ASSERT_GE(fd, 0) << ErrnoString();
  EXPECT_SYSCALL_SUCCEEDS(syscall(SYS_pidfd_send_signal, fd, 0, nullptr, 0));
  close(fd);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_pidfd_open, ReapedPid(), 0), ESRCH);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_pidfd_open, -1, 0), EINVAL);
}

// glibc registers each thread's list at start: the kernel gives it back.
TEST(GetRobustListTest, OfTheCallerIsTheOneGlibcSet) {
  void* head = nullptr;
  size_t len = 0;
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_get_robust_list, 0, &head, &len));
  EXPECT_NE(head, nullptr);
  EXPECT_EQ(len, 24u);  // sizeof(struct robust_list_head)
  void* own = nullptr;
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_get_robust_list, Tid(), &own, &len));
  EXPECT_EQ(own, head);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_get_robust_list, ReapedPid(), &own, &len), ESRCH);
}

TEST(GetpriorityTest, OfTheCallerByZeroOrPid) {
  long self = syscall(SYS_getpriority, PRIO_PROCESS, 0);
  ASSERT_GE(self, 1);  // the kernel's 20 - nice
  EXPECT_EQ(syscall(SYS_getpriority, PRIO_PROCESS, getpid()), self);
  EXPECT_EQ(syscall(SYS_getpriority, PRIO_PGRP, 0), self);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_getpriority, PRIO_PROCESS, ReapedPid()), ESRCH);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_getpriority, 42, 0), EINVAL);
}

// Raising the nice value needs no privilege; lowering it back does, so a
// child does it.
TEST(SetpriorityTest, AChildRaisesItsNiceValue) {
  int status = RunInChild([] {
    long before = syscall(SYS_getpriority, PRIO_PROCESS, 0);
    int nice = 20 - static_cast<int>(before);
    if (setpriority(PRIO_PROCESS, 0, nice) != 0) return 1;  // the same: allowed
    if (setpriority(PRIO_PROCESS, getpid(), nice + 1) != 0) return 2;
    if (syscall(SYS_getpriority, PRIO_PROCESS, 0) != before - 1) return 3;
    bool privileged = geteuid() == 0;  // CAP_SYS_NICE natively as root
    if (!privileged && (setpriority(PRIO_PROCESS, 0, nice) == 0 || errno != EACCES)) return 4;
    return 0;
  });
  EXPECT_EQ(status, 0);
  EXPECT_SYSCALL_FAILS_WITH(setpriority(PRIO_PROCESS, ReapedPid(), 5), ESRCH);
}

TEST(SchedGetschedulerTest, TheCallerIsSchedOther) {
  EXPECT_EQ(syscall(SYS_sched_getscheduler, 0), SCHED_OTHER);
  EXPECT_EQ(syscall(SYS_sched_getscheduler, getpid()), SCHED_OTHER);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_sched_getscheduler, ReapedPid()), ESRCH);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_sched_getscheduler, -1), EINVAL);
}

TEST(SchedGetparamTest, PriorityIsZeroForSchedOther) {
  sched_param p = {7};
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_sched_getparam, 0, &p));
  EXPECT_EQ(p.sched_priority, 0);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_sched_getparam, ReapedPid(), &p), ESRCH);
}

TEST(SchedSetparamTest, TheSameParamsSucceedAnRtPriorityDoesNot) {
  sched_param p = {0};
  EXPECT_SYSCALL_SUCCEEDS(syscall(SYS_sched_setparam, 0, &p));
  p.sched_priority = 1;  // invalid for SCHED_OTHER
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_sched_setparam, 0, &p), EINVAL);
  p.sched_priority = 0;
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_sched_setparam, ReapedPid(), &p), ESRCH);
}

TEST(SchedSetschedulerTest, AChildMovesToSchedBatch) {
  int status = RunInChild([] {
    sched_param p = {0};
    if (syscall(SYS_sched_setscheduler, 0, SCHED_OTHER, &p) != 0) return 1;
    if (syscall(SYS_sched_setscheduler, getpid(), SCHED_BATCH, &p) != 0) return 2;
    if (syscall(SYS_sched_getscheduler, 0) != SCHED_BATCH) return 3;
    // A real-time policy needs CAP_SYS_NICE (and RLIMIT_RTPRIO is 0).
    p.sched_priority = 1;
    bool privileged = geteuid() == 0;
    if (!privileged &&
        (syscall(SYS_sched_setscheduler, 0, SCHED_FIFO, &p) == 0 || errno != EPERM)) {
      return 4;
    }
    return 0;
  });
  EXPECT_EQ(status, 0);
}

TEST(SchedRrGetIntervalTest, OfTheCallerSucceeds) {
  timespec ts = {-1, -1};
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_sched_rr_get_interval, 0, &ts));
  EXPECT_GE(ts.tv_sec, 0);
  EXPECT_GE(ts.tv_nsec, 0);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_sched_rr_get_interval, ReapedPid(), &ts), ESRCH);
}

TEST(SchedGetattrTest, TheCallerIsSchedOtherWithItsNice) {
  sched_attr attr;
  std::memset(&attr, 0xff, sizeof(attr));
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_sched_getattr, 0, &attr, sizeof(attr), 0));
  EXPECT_EQ(attr.size, sizeof(attr));
  EXPECT_EQ(attr.sched_policy, static_cast<uint32_t>(SCHED_OTHER));
  EXPECT_EQ(attr.sched_nice, 20 - syscall(SYS_getpriority, PRIO_PROCESS, 0));
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_sched_getattr, 0, &attr, sizeof(attr), 1), EINVAL);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_sched_getattr, ReapedPid(), &attr, sizeof(attr), 0), ESRCH);
}

TEST(SchedSetattrTest, AChildRaisesItsNiceValue) {
  int status = RunInChild([] {
    sched_attr attr = {};
    attr.size = sizeof(attr);
    if (syscall(SYS_sched_getattr, 0, &attr, sizeof(attr), 0) != 0) return 1;
    attr.sched_nice += 1;
    if (syscall(SYS_sched_setattr, 0, &attr, 0) != 0) return 2;
    sched_attr now = {};
    if (syscall(SYS_sched_getattr, getpid(), &now, sizeof(now), 0) != 0) return 3;
    if (now.sched_nice != attr.sched_nice) return 4;
    return 0;
  });
  EXPECT_EQ(status, 0);
  sched_attr attr = {};
  attr.size = sizeof(attr);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_sched_setattr, ReapedPid(), &attr, 0), ESRCH);
}

TEST(IoprioGetTest, OfTheCallerByZeroOrPid) {
  long self = syscall(SYS_ioprio_get, kIoprioWhoProcess, 0);
  ASSERT_GE(self, 0) << ErrnoString();
  EXPECT_EQ(syscall(SYS_ioprio_get, kIoprioWhoProcess, getpid()), self);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_ioprio_get, kIoprioWhoProcess, ReapedPid()), ESRCH);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_ioprio_get, 42, 0), EINVAL);
}

TEST(IoprioSetTest, AChildTakesABestEffortLevel) {
  int status = RunInChild([] {
    long be6 = IoprioValue(kIoprioClassBe, 6);
    if (syscall(SYS_ioprio_set, kIoprioWhoProcess, 0, be6) != 0) return 1;
    if (syscall(SYS_ioprio_get, kIoprioWhoProcess, getpid()) != be6) return 2;
    // The real-time class needs CAP_SYS_ADMIN or CAP_SYS_NICE.
    long rt = IoprioValue(kIoprioClassRt, 0);
    bool privileged = geteuid() == 0;
    if (!privileged && (syscall(SYS_ioprio_set, kIoprioWhoProcess, 0, rt) == 0 || errno != EPERM)) {
      return 3;
    }
    return 0;
  });
  EXPECT_EQ(status, 0);
  long be4 = IoprioValue(kIoprioClassBe, 4);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_ioprio_set, kIoprioWhoProcess, ReapedPid(), be4), ESRCH);
}

}  // namespace
}  // namespace sentry::conformance
