// The sentry's memory stays under a fixed cap whatever the guest does to the
// VFS (issue 14, hole 4). Each hostile workload runs through the real binary
// for seconds, millions of operations where it can, while the test samples
// the sentry's own VmRSS/VmHWM (sentry_rss.h): unique absent names (the
// hole's reproduction: 3 million stats took the sentry to 813 MB), a stat of
// every file of /usr, empty files and directories until ENOSPC, long symlink
// targets, xattrs, and all of them in one run. --disk is large on purpose:
// the metadata budget has a ceiling of its own (vfs/vfs.h), whatever --disk.
#include <iostream>
#include <regex>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/limits/sentry_rss.h"

namespace sentry::limits {
namespace {

// Each workload's loop stops itself after ~10 s (or at its own end); the
// run's --timeout is a backstop.
const std::vector<std::string> kFlags = {"--timeout", "40", "--disk", "8g", "--memory", "512m"};

// A helper the workloads share: loop() calls step(i) until the time is up or
// step returns False, and prints the count.
const char* const kPrelude = R"(
import os, sys, time
T0 = time.time()
def loop(step, limit, secs=10):
    i, t0 = 0, time.time()  # the budget is the loop's: a setup walk may be slow
    while i < limit and time.time() - t0 < secs:
        if step(i) is False:
            break
        i += 1
    return i
def report(name, n):
    print("%s=%d" % (name, n), flush=True)
)";

long Count(const std::string& out, const std::string& name) {
  std::smatch m;
  if (std::regex_search(out, m, std::regex(name + "=(\\d+)"))) return std::stol(m[1]);
  return -1;
}

SampledRun RunWorkload(const std::string& code) {
  SampledRun run = RunSentrySampled(kFlags, {"/usr/bin/python3", "-c", kPrelude + code}, 60);
  EXPECT_FALSE(run.finished.deadline) << "the run did not end";
  EXPECT_GT(run.samples, 0) << "the sentry was never sampled";
  EXPECT_LT(run.peak_kb, kSentryRssCapKb) << "the sentry grew to " << run.peak_kb << " KiB\n"
                                          << Clip(run.finished.out) << Clip(run.finished.err);
  std::cerr << "[ sentry peak ] " << run.peak_kb << " KiB in " << run.finished.wall << " s over "
            << run.samples << " samples: " << Clip(run.finished.out, 300) << "\n";
  return run;
}

TEST(VfsBoundsTest, BaselineOfABareRun) {
  SampledRun run = RunSentrySampled(kFlags, {"/usr/bin/python3", "-c", "pass"}, 30, 2);
  EXPECT_EQ(run.finished.exit_code, 0) << Clip(run.finished.err);
  std::cerr << "[ sentry baseline ] " << run.peak_kb << " KiB\n";
  // The cap leaves the budgets room only if the sentry itself is small.
  EXPECT_LT(run.peak_kb, 16 << 10);
}

// The hole's own reproduction: stat() of unique absent names, as many as fit
// (3 million at most). Every one was remembered before, uncharged.
TEST(VfsBoundsTest, UniqueAbsentNames) {
  SampledRun run = RunWorkload(R"(
def step(i):
    try: os.stat("/usr/absent-%d" % i)
    except FileNotFoundError: pass
report("stats", loop(step, 3000000))
)");
  EXPECT_GT(Count(run.finished.out, "stats"), 100000);
}

// Absent names spread over many lower directories, each cached apart.
TEST(VfsBoundsTest, AbsentNamesInManyDirectories) {
  SampledRun run = RunWorkload(R"(
dirs = [r for r, ds, fs in os.walk("/usr/lib")][:2000]
def step(i):
    try: os.stat("%s/no-%d" % (dirs[i % len(dirs)], i))
    except FileNotFoundError: pass
report("stats", loop(step, 3000000))
)");
  EXPECT_GT(Count(run.finished.out, "stats"), 50000);
}

// os.walk of /usr with a stat of each entry, then stats of the same names
// again and again: every lower node the sentry has exists on the host.
TEST(VfsBoundsTest, StatEveryFileOfUsr) {
  SampledRun run = RunWorkload(R"(
paths = []
for r, ds, fs in os.walk("/usr"):
    for f in fs + ds:
        p = os.path.join(r, f)
        try: os.lstat(p)
        except OSError: pass
        paths.append(p)
report("walked", len(paths))
def step(i):
    try: os.lstat(paths[i % len(paths)])
    except OSError: pass
report("stats", loop(step, 1000000, 15))
)");
  EXPECT_GT(Count(run.finished.out, "walked"), 1000);
}

TEST(VfsBoundsTest, EmptyFilesUntilEnospc) {
  SampledRun run = RunWorkload(R"(
errs = []
def step(i):
    try: os.close(os.open("/tmp/f%d" % i, os.O_CREAT | os.O_WRONLY, 0o644))
    except OSError as e:
        errs.append(e.errno)
        return len(errs) < 1000  # keep knocking for a while past the first
report("files", loop(step, 1000000) - len(errs))
report("enospc", errs.count(28))
)");
  EXPECT_GT(Count(run.finished.out, "files"), 10000);
  EXPECT_GT(Count(run.finished.out, "enospc"), 0);
}

TEST(VfsBoundsTest, EmptyDirectoriesUntilEnospc) {
  SampledRun run = RunWorkload(R"(
errs = []
def step(i):
    try: os.mkdir("/tmp/d%d" % i)
    except OSError as e:
        errs.append(e.errno)
        return len(errs) < 1000
report("dirs", loop(step, 1000000) - len(errs))
report("enospc", errs.count(28))
)");
  EXPECT_GT(Count(run.finished.out, "dirs"), 10000);
  EXPECT_GT(Count(run.finished.out, "enospc"), 0);
}

// Deep nesting first (the sentry walks its tree without recursion), then
// targets of 4000 bytes until ENOSPC.
TEST(VfsBoundsTest, DeepDirectoriesAndLongSymlinkTargets) {
  SampledRun run = RunWorkload(R"(
os.chdir("/tmp")
def deeper(i):
    try: os.mkdir("d"); os.chdir("d")
    except OSError as e: return False
report("depth", loop(deeper, 5000))
os.chdir("/tmp")
target = "t" * 4000
def link(i):
    try: os.symlink(target, "/tmp/s%d" % i)
    except OSError as e: return False
report("links", loop(link, 1000000))
for p in ("/usr/no-%d" % i for i in range(200000)):  # shrinks walk the deep tree
    try: os.stat(p)
    except OSError: pass
report("done", 1)
)");
  EXPECT_EQ(Count(run.finished.out, "depth"), 5000);
  EXPECT_GT(Count(run.finished.out, "links"), 1000);
  EXPECT_EQ(Count(run.finished.out, "done"), 1);
}

TEST(VfsBoundsTest, ManyXattrs) {
  SampledRun run = RunWorkload(R"(
value = b"v" * 65536
def step(i):
    p = "/tmp/x%d" % (i // 100)
    if i % 100 == 0: open(p, "w").close()
    try: os.setxattr(p, "user.%d" % i, value)
    except OSError as e: return False
report("xattrs", loop(step, 1000000))
)");
  EXPECT_GT(Count(run.finished.out, "xattrs"), 100);
}

// Every budget filled in the same run: they add up under the cap.
TEST(VfsBoundsTest, AllAtOnce) {
  SampledRun run = RunWorkload(R"(
def mk(i):
    try: os.mkdir("/tmp/d%d" % i)
    except OSError: return False
report("dirs", loop(mk, 1000000, 4))
n = 0
for r, ds, fs in os.walk("/usr"):
    for f in fs:
        try: os.lstat(os.path.join(r, f)); n += 1
        except OSError: pass
    if time.time() - T0 > 7: break
report("walked", n)
def absent(i):
    try: os.stat("/usr/lib/no-%d" % i)
    except OSError: pass
report("stats", loop(absent, 3000000))
)");
  EXPECT_GT(Count(run.finished.out, "dirs"), 10000);
}

}  // namespace
}  // namespace sentry::limits
