// Host listings read ahead on a thread of their own (vfs/listing_ahead.h):
// a directory queued is read there and its listing is what ListHost would
// have read (the same names, the same fd kept); a directory replaced on the
// host after its lookup reads as empty, as without the thread; what waits
// and what is kept stays within the bounds; a listing ListHost needs
// before the thread reads it is ListHost's own.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/vfs_fixture.h"

namespace sentry::vfs {
namespace {

void WriteHostFile(const std::string& path, const std::string& data) {
  int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(write(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()));
  close(fd);
}

// The thread's file identity: nobody's when the test runs as root (whose
// own would read anything), else the caller's (0: keep it).
uid_t AheadId() { return geteuid() == 0 ? 65534 : 0; }

// What the thread charged for its CPU (the sandbox's share, in a run): not
// the fixture's, which goes before the VFS and its thread.
std::atomic<uint64_t> charged_ns{0};
std::atomic<int> charges{0};

class VfsListingAheadTest : public VfsTest {
 protected:
  void SetUp() override {
    VfsTest::SetUp();
    charged_ns = 0;
    charges = 0;
    v().StartListingAhead(std::nullopt, AheadId(), AheadId(), [](uint64_t ns) {
      charged_ns += ns;
      ++charges;
    });
  }
  // Waits until the thread has read `read` listings (kept), at most 10 s.
  ListingAhead::Counts AwaitRead(uint64_t read) {
    ListingAhead::Counts c;
    for (int i = 0; i < 10000; ++i) {
      c = v().listing_ahead()->counts();
      if (c.read >= read) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return c;
  }
  // /lower/NAME queued and handed over; then waits until the thread has
  // read `read` listings in all.
  NodeRef ReadAheadNow(const std::string& name, uint64_t read) {
    NodeRef dir = Looked(name);
    v().ReadAhead(dir);
    v().FlushReadAhead();
    EXPECT_EQ(AwaitRead(read).read, read);
    return dir;
  }
};

TEST_F(VfsListingAheadTest, AQueuedDirectoryIsListedFromWhatTheThreadRead) {
  NodeRef dir = Looked("dir");
  ASSERT_TRUE(dir);
  v().ReadAhead(dir);
  v().FlushReadAhead();
  EXPECT_EQ(AwaitRead(1).read, 1u);
  // Its CPU time is charged, once per listing read.
  EXPECT_EQ(charges.load(), 1);
  EXPECT_GT(charged_ns.load(), 0u);
  // Read and checked there: its open became the directory's fd.
  EXPECT_TRUE(dir->host_dir->fd.opened());
  // Changed on the host after the read ahead: the listing is the one read
  // (as a listing read then by ListHost would be, and kept as such).
  WriteHostFile(lower_dir_ + "/dir/later.txt", "x");
  EXPECT_EQ(Listed(dir), std::vector<std::string>{"inner.txt"});
  EXPECT_EQ(v().listing_ahead()->counts().hits, 1u);
  EXPECT_EQ(Read(*Get("/lower/dir/inner.txt")), "inner\n");
}

TEST_F(VfsListingAheadTest, ReplacedBeforeTheReadReadsEmpty) {
  NodeRef dir = Looked("dir");
  ASSERT_TRUE(dir);
  // Replaced after its lookup, before the thread opens it: whatever stands
  // at the name now is never read, and the directory lists empty.
  ASSERT_EQ(rename((lower_dir_ + "/dir").c_str(), (lower_dir_ + "/dir.old").c_str()), 0);
  ASSERT_EQ(mkdir((lower_dir_ + "/dir").c_str(), 0755), 0);
  WriteHostFile(lower_dir_ + "/dir/planted.txt", "p");
  v().ReadAhead(dir);
  v().FlushReadAhead();
  // Nothing is kept for it: wait for the thread by a second directory.
  NodeRef empty = ReadAheadNow("empty", 1);
  EXPECT_TRUE(Listed(dir).empty());
  EXPECT_FALSE(dir->host_dir->fd.opened());
  EXPECT_EQ(ErrnoOf(Lookup("/lower/dir/planted.txt")), "ENOENT");
  EXPECT_TRUE(Listed(empty).empty());
  EXPECT_EQ(v().listing_ahead()->counts().hits, 1u);
}

TEST_F(VfsListingAheadTest, ReadsOnlyWhatItsIdentityMay) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (a second identity)";
  // Root's own, unreadable to the thread's identity (as the notification
  // thread's unprivileged one): never read there, whatever the caller's.
  std::string secret = lower_dir_ + "/secret";
  ASSERT_EQ(mkdir(secret.c_str(), 0700), 0);
  ASSERT_EQ(chmod(secret.c_str(), 0700), 0);
  WriteHostFile(secret + "/hidden.txt", "h");
  NodeRef hidden = Looked("secret");
  NodeRef dir = Looked("dir");
  ASSERT_TRUE(hidden && dir);
  v().ReadAhead(hidden);
  v().ReadAhead(dir);  // read after: the sign the thread is past secret
  v().FlushReadAhead();
  EXPECT_EQ(AwaitRead(1).read, 1u);
  EXPECT_EQ(Listed(dir), std::vector<std::string>{"inner.txt"});
  EXPECT_EQ(v().listing_ahead()->counts().hits, 1u);
  // This test's own (root) ListHost still lists it: only the thread refused.
  EXPECT_EQ(Listed(hidden), std::vector<std::string>{"hidden.txt"});
  EXPECT_EQ(v().listing_ahead()->counts().hits, 1u);
}

TEST_F(VfsListingAheadTest, ListedBeforeTheThreadGetsToItIsListHostsOwn) {
  NodeRef dir = Looked("dir");
  ASSERT_TRUE(dir);
  // Queued, not handed over yet (no Flush): ListHost reads it itself, and
  // it is no longer handed over.
  v().ReadAhead(dir);
  EXPECT_EQ(Listed(dir), std::vector<std::string>{"inner.txt"});
  // A listed directory is not queued again.
  v().ReadAhead(dir);
  v().FlushReadAhead();
  NodeRef empty = ReadAheadNow("empty", 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ListingAhead::Counts c = v().listing_ahead()->counts();
  EXPECT_EQ(c.read, 1u);  // empty only
  EXPECT_EQ(c.hits, 0u);
  EXPECT_TRUE(Listed(empty).empty());
  EXPECT_EQ(v().listing_ahead()->counts().hits, 1u);
}

TEST_F(VfsListingAheadTest, WhatIsKeptStaysWithinItsBounds) {
  // Two batches of 200: at most kMaxQueued of a batch wait (the last
  // queued are dropped) and at most kMaxKept listings are kept (the
  // oldest read are dropped); a dropped one is listed by ListHost as before.
  const int batch = 200;
  const int n = 2 * batch;
  static_assert(ListingAhead::kMaxKept < 2 * 200 && ListingAhead::kMaxQueued >= 200);
  for (int i = 0; i < n; ++i) {
    std::string d = lower_dir_ + "/d" + std::to_string(i);
    ASSERT_EQ(mkdir(d.c_str(), 0755), 0);
    WriteHostFile(d + "/f" + std::to_string(i), "");
  }
  std::vector<NodeRef> dirs;
  for (int i = 0; i < n; ++i) {
    dirs.push_back(Looked("d" + std::to_string(i)));
    ASSERT_TRUE(dirs.back());
  }
  for (int round = 0; round < 2; ++round) {
    for (int i = round * batch; i < (round + 1) * batch; ++i) v().ReadAhead(dirs[i]);
    v().FlushReadAhead();
    EXPECT_EQ(AwaitRead((round + 1) * batch).read, static_cast<uint64_t>((round + 1) * batch));
  }
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(Listed(dirs[i]), std::vector<std::string>{"f" + std::to_string(i)}) << i;
  }
  // The oldest read (the first batch's first) were dropped.
  EXPECT_EQ(v().listing_ahead()->counts().hits, ListingAhead::kMaxKept);
}

}  // namespace
}  // namespace sentry::vfs
