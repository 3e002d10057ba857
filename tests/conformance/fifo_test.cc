// Blocking opens of a FIFO wait for the other end (fifo(7)), and a signal
// interrupts the wait.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

TEST(FifoOpenTest, WriterWaitsForAReader) {
  ScratchDir dir;
  std::string path = dir.Path("fifo");
  ASSERT_SYSCALL_SUCCEEDS(mkfifo(path.c_str(), 0600));
  std::string got;
  std::thread reader([&] {
    std::this_thread::sleep_for(milliseconds(150));
    UniqueFd r(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    char buf[8] = {};
    if (r.get() >= 0 && read(r.get(), buf, sizeof(buf) - 1) > 0) got = buf;
  });
  auto start = Clock::now();
  UniqueFd w(open(path.c_str(), O_WRONLY | O_CLOEXEC));  // blocks until the reader opens
  auto waited = Clock::now() - start;
  ASSERT_SYSCALL_SUCCEEDS(w.get());
  EXPECT_GE(waited, milliseconds(100));
  EXPECT_EQ(fcntl(w.get(), F_GETFL) & O_NONBLOCK, 0);
  ASSERT_EQ(write(w.get(), "hi", 2), 2);
  w = UniqueFd();
  reader.join();
  EXPECT_EQ(got, "hi");
}

TEST(FifoOpenTest, ReaderWaitsForAWriter) {
  ScratchDir dir;
  std::string path = dir.Path("fifo");
  ASSERT_SYSCALL_SUCCEEDS(mkfifo(path.c_str(), 0600));
  std::thread writer([&] {
    std::this_thread::sleep_for(milliseconds(150));
    UniqueFd w(open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (w.get() >= 0) (void)!write(w.get(), "data", 4);
  });
  auto start = Clock::now();
  UniqueFd r(open(path.c_str(), O_RDONLY | O_CLOEXEC));  // blocks until the writer opens
  auto waited = Clock::now() - start;
  ASSERT_SYSCALL_SUCCEEDS(r.get());
  EXPECT_GE(waited, milliseconds(100));
  char buf[8] = {};
  // The writer's data, then the end once it closed: never an early EOF.
  EXPECT_EQ(read(r.get(), buf, sizeof(buf)), 4);
  EXPECT_STREQ(buf, "data");
  writer.join();
  EXPECT_EQ(read(r.get(), buf, sizeof(buf)), 0);
}

TEST(FifoOpenTest, ReadWriteNeverWaits) {
  ScratchDir dir;
  std::string path = dir.Path("fifo");
  ASSERT_SYSCALL_SUCCEEDS(mkfifo(path.c_str(), 0600));
  UniqueFd rw(open(path.c_str(), O_RDWR | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(rw.get());
  ASSERT_EQ(write(rw.get(), "x", 1), 1);
  char c = 0;
  EXPECT_EQ(read(rw.get(), &c, 1), 1);
  EXPECT_EQ(c, 'x');
}

void OnAlarm(int) {}

TEST(FifoOpenTest, ASignalInterruptsTheWait) {
  ScratchDir dir;
  std::string path = dir.Path("fifo");
  ASSERT_SYSCALL_SUCCEEDS(mkfifo(path.c_str(), 0600));
  struct sigaction sa {
  }, old{};
  sa.sa_handler = OnAlarm;  // no SA_RESTART: the open fails with EINTR
  ASSERT_SYSCALL_SUCCEEDS(sigaction(SIGALRM, &sa, &old));
  itimerval t{{0, 0}, {0, 100000}};
  ASSERT_SYSCALL_SUCCEEDS(setitimer(ITIMER_REAL, &t, nullptr));
  EXPECT_SYSCALL_FAILS_WITH(open(path.c_str(), O_WRONLY | O_CLOEXEC), EINTR);
  sigaction(SIGALRM, &old, nullptr);
  // The wait given up left no writer behind: a non-blocking reader sees the
  // FIFO without one (EOF at once), and a non-blocking writer still has no
  // reader.
  EXPECT_SYSCALL_FAILS_WITH(open(path.c_str(), O_WRONLY | O_NONBLOCK), ENXIO);
}

// open is a cancellation point (pthreads(7)), also through the sandbox's
// preload library, which interposes it: a thread blocked opening a FIFO is
// cancelled.
TEST(FifoOpenTest, PthreadCancelEndsABlockedOpen) {
  ScratchDir dir;
  static std::string path;
  path = dir.Path("fifo");
  ASSERT_SYSCALL_SUCCEEDS(mkfifo(path.c_str(), 0600));
  pthread_t th;
  ASSERT_EQ(pthread_create(
                &th, nullptr,
                [](void*) -> void* {
                  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);  // no writer: blocks
                  if (fd >= 0) close(fd);
                  return nullptr;
                },
                nullptr),
            0);
  std::this_thread::sleep_for(milliseconds(150));
  ASSERT_EQ(pthread_cancel(th), 0);
  void* result = nullptr;
  ASSERT_EQ(pthread_join(th, &result), 0);
  EXPECT_EQ(result, PTHREAD_CANCELED);
}

}  // namespace
}  // namespace sentry::conformance
