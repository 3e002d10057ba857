// The loader is cloned from the sentry, which may have threads at that
// moment; the clone copies their state but not them. With a thread still
// starting when the loader is cloned (glibc marks a thread being made, and
// its setresuid waits for the mark to clear: in the clone, forever), the
// loader and its guest still reach their seccomp filter, every time (see the
// raw calls in loader.cc).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <span>
#include <thread>

#include "absl/strings/str_cat.h"
#include "loader/loader.h"
#include "loader/prebuilt_filter.h"

namespace sentry {
namespace {

// The loader's next report, or a step of 0 if none came within 5 s.
LoaderMessage NextReport(int fd) {
  LoaderMessage m{};
  pollfd pfd{fd, POLLIN, 0};
  if (poll(&pfd, 1, 5000) != 1 || read(fd, &m, sizeof(m)) != sizeof(m)) {
    m.step = static_cast<LoaderStep>(0);
  }
  return m;
}

TEST(LoaderThreadsTest, StartsWhileAnotherThreadIsBeingMade) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (the guest changes its ids)";
  std::span<const sock_filter> filter = PrebuiltSeccompFilter();
  LoaderSpec spec;  // in namespaces: the loader becomes their root with setresuid
  spec.lower_roots = {"/usr"};
  spec.store_options = "size=1m";
  spec.filter.assign(filter.begin(), filter.end());
  for (int i = 0; i < 100; ++i) {
    // Made just before the clone, as a helper of the sentry's could be: it
    // is still starting (on another CPU) when the loader is cloned.
    std::thread helper([] {});
    int maps[2], report[2], go[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, maps), 0);
    ASSERT_EQ(pipe2(report, O_CLOEXEC), 0);
    ASSERT_EQ(pipe2(go, O_CLOEXEC), 0);
    pid_t loader =
        StartLoader(spec, LoaderPipes{maps[0], report[1], go[0]}, kLoaderCloneNamespaces);
    helper.join();
    ASSERT_GT(loader, 0);
    for (const char* map : {"uid_map", "gid_map"}) {
      std::ofstream(absl::StrCat("/proc/", loader, "/", map))
          << "0 2000000000 1\n1000 2000000001 1\n";
    }
    close(maps[0]);
    close(report[1]);
    close(go[0]);
    ASSERT_EQ(write(maps[1], "m", 1), 1);
    ASSERT_EQ(send(maps[1], "c", 1, MSG_NOSIGNAL), 1);  // no cgroups to join
    // Its network namespace ready, with the DNS server's socket bound there.
    NetnsMade netns;
    netns.tag = 0;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    iovec iov{&netns, sizeof(netns)};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    pollfd pfd{maps[1], POLLIN, 0};
    bool got_netns =
        poll(&pfd, 1, 5000) == 1 && recvmsg(maps[1], &msg, MSG_CMSG_CLOEXEC) == sizeof(netns);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    bool got_socket = got_netns && c && c->cmsg_type == SCM_RIGHTS;
    if (got_socket) {
      int fd;
      memcpy(&fd, CMSG_DATA(c), sizeof(fd));
      close(fd);
    }
    LoaderMessage ready = NextReport(report[0]);
    LoaderMessage listener = NextReport(report[0]);
    close(go[1]);  // the guest reads end-of-file and exits, then the loader
    if (listener.step != LoaderStep::kListener) kill(loader, SIGKILL);  // stuck
    waitpid(loader, nullptr, 0);
    close(maps[1]);
    close(report[0]);
    EXPECT_TRUE(got_netns && netns.tag == 'n') << "run " << i;
    EXPECT_TRUE(got_socket) << "run " << i << ": dns_err " << netns.dns_err;
    EXPECT_EQ(ready.step, LoaderStep::kReady) << "run " << i;
    EXPECT_EQ(listener.step, LoaderStep::kListener) << "run " << i << ": err " << listener.err;
    if (HasFailure()) break;
  }
}

}  // namespace
}  // namespace sentry
