// Signals in the guest: it starts with nothing blocked, as a native process
// started from this test does, so SIGTERM and friends work.
#include <gtest/gtest.h>

#include <string>

#include "tests/e2e/e2e_util.h"

namespace sentry::testing {
namespace {

TEST(SignalTest, GuestStartsWithNoSignalBlocked) {
  constexpr const char* kScript =
      "import signal\n"
      "print(sorted(s.name for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])))\n"
      "print(sorted(s for s in range(1, 32) if signal.getsignal(s) == signal.SIG_IGN))\n";
  ProcessResult native = NativeScript(kScript);
  ASSERT_EQ(native.exit_code, 0) << Describe(native);
  ProcessResult r = SandboxScript(kScript);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, native.out);
}

TEST(SignalTest, SigtermKillsTheGuest) {
  ProcessResult r = RunSentry({"--timeout", "5"}, {"/usr/bin/python3", "-c",
                                                   "import os, signal\n"
                                                   "os.kill(os.getpid(), signal.SIGTERM)\n"
                                                   "print('survived')\n"});
  EXPECT_EQ(r.exit_code, 143) << Describe(r);
}

TEST(SignalTest, TerminatingAChildWorks) {
  ProcessResult r = RunSentry({"--timeout", "2"},
                              {"/usr/bin/python3", "-c",
                               "import subprocess\n"
                               "p = subprocess.Popen(['sleep', '30'])\n"
                               "p.terminate()\n"
                               "print(p.wait())\n"},
                              "", 20);
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "-15\n");
}

TEST(SignalTest, PoolContextManagerExits) {
  // Leaving `with Pool()` terminates the workers with SIGTERM; a worker that
  // has not exited by then must die of it, or the pool's join never returns.
  ProcessResult r = RunSentry({"--timeout", "5"},
                              {"/usr/bin/python3", "-c",
                               "import multiprocessing as mp\n"
                               "for i in range(5):\n"
                               "    with mp.Pool(2) as p:\n"
                               "        total = sum(p.map(abs, range(-10, 10)))\n"
                               "print(total)\n"},
                              "", 20);
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "100\n");
}

TEST(SignalTest, SigchldHandlerRuns) {
  ProcessResult r =
      RunSentry({"--timeout", "5"}, {"/usr/bin/python3", "-c",
                                     "import os, signal, time\n"
                                     "got = []\n"
                                     "signal.signal(signal.SIGCHLD, lambda s, f: got.append(s))\n"
                                     "pid = os.fork()\n"
                                     "if pid == 0: os._exit(0)\n"
                                     "os.waitpid(pid, 0)\n"
                                     "time.sleep(0.05)\n"
                                     "print('handled' if got else 'not handled')\n"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "handled\n");
}

}  // namespace
}  // namespace sentry::testing
