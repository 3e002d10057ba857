// sched_getaffinity and sched_setaffinity: under sentry they are answered by
// the sentry (which pins a new guest to one CPU at start-up, unseen), and must
// read as the kernel's own.
#include <ctype.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

cpu_set_t Affinity(pid_t pid = 0) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  EXPECT_EQ(sched_getaffinity(pid, sizeof(mask), &mask), 0) << strerror(errno);
  return mask;
}

// What the process was started with: every CPU the machine has here (the
// test runs unrestricted natively and under sentry).
TEST(SchedAffinityTest, StartsWithEveryOnlineCpu) {
  cpu_set_t mask = Affinity();
  EXPECT_EQ(CPU_COUNT(&mask), sysconf(_SC_NPROCESSORS_ONLN));
}

// The CPU list glibc's get_nprocs reads, and /proc/stat's per-CPU lines,
// name the same CPUs as the affinity mask (under sentry: its /sys, sysfs.h).
TEST(SchedAffinityTest, SysAndProcListTheAffinityCpus) {
  cpu_set_t mask = Affinity();
  FILE* f = fopen("/sys/devices/system/cpu/online", "r");
  ASSERT_NE(f, nullptr) << strerror(errno);
  cpu_set_t online;
  CPU_ZERO(&online);
  int lo = 0, hi = 0;
  char sep = 0;
  while (fscanf(f, "%d", &lo) == 1) {
    hi = lo;
    if (fscanf(f, "%c", &sep) == 1 && sep == '-') {
      ASSERT_EQ(fscanf(f, "%d", &hi), 1);
      if (fscanf(f, "%c", &sep) != 1) sep = 0;
    }
    for (int i = lo; i <= hi && i < CPU_SETSIZE; ++i) CPU_SET(i, &online);
  }
  fclose(f);
  EXPECT_TRUE(CPU_EQUAL(&online, &mask));
  f = fopen("/proc/stat", "r");
  ASSERT_NE(f, nullptr) << strerror(errno);
  char line[4096];
  int lines = 0;
  while (fgets(line, sizeof(line), f)) {
    int cpu = -1;
    if (line[0] == 'c' && isdigit(static_cast<unsigned char>(line[3])) &&
        sscanf(line, "cpu%d ", &cpu) == 1) {
      ++lines;
      EXPECT_TRUE(cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &mask)) << line;
    }
  }
  fclose(f);
  EXPECT_EQ(lines, CPU_COUNT(&mask));
}

TEST(SchedAffinityTest, ReturnsTheBytesTheKernelFilled) {
  unsigned long mask[16] = {};
  long n = syscall(SYS_sched_getaffinity, 0, sizeof(mask), mask);
  ASSERT_GT(n, 0) << strerror(errno);
  EXPECT_EQ(n % sizeof(long), 0);
  EXPECT_LE(static_cast<size_t>(n), sizeof(mask));
}

TEST(SchedAffinityTest, SetThenGetInAChild) {
  pid_t child = fork();
  if (child == 0) {
    cpu_set_t all = Affinity();
    int first = -1;
    for (int c = 0; c < CPU_SETSIZE && first < 0; ++c)
      if (CPU_ISSET(c, &all)) first = c;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    if (sched_setaffinity(0, sizeof(one), &one) != 0) _exit(1);
    cpu_set_t now = Affinity();
    if (!CPU_EQUAL(&now, &one)) _exit(2);
    // A thread inherits the mask.
    bool same = false;
    std::thread([&] {
      cpu_set_t t = Affinity();
      same = CPU_EQUAL(&t, &one);
    }).join();
    if (!same) _exit(3);
    if (sched_getcpu() != first) _exit(4);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(SchedAffinityTest, OfAnotherProcessByPid) {
  pid_t child = fork();
  if (child == 0) {
    // Stopped rather than paused: the parent asks once it is, so the
    // child's calls are the same from run to run (docs/syscalls.md).
    raise(SIGSTOP);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, WUNTRACED), child);
  ASSERT_TRUE(WIFSTOPPED(status)) << status;
  cpu_set_t mine = Affinity(), theirs = Affinity(child);
  EXPECT_TRUE(CPU_EQUAL(&mine, &theirs));
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

TEST(SchedAffinityTest, Errors) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  // A pid that is no process.
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_sched_getaffinity, 999999, sizeof(mask), &mask), ESRCH);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_sched_setaffinity, 999999, sizeof(mask), &mask), ESRCH);
  // A length that is not a multiple of a long, and one too short.
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_sched_getaffinity, 0, 3, &mask), EINVAL);
  // Memory that is not there.
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_sched_getaffinity, 0, sizeof(mask), nullptr), EFAULT);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_sched_setaffinity, 0, sizeof(mask), nullptr), EFAULT);
  // No CPU at all.
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_sched_setaffinity, 0, sizeof(mask), &mask), EINVAL);
}

}  // namespace
}  // namespace sentry::conformance
