// The store's stash: directory tokens and empty files made ahead by its own
// thread, only once resumed, refilled when few are left; real tokens and
// fresh files when its store makes them, and nothing left behind.
#include "vfs/store_stash.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <set>
#include <thread>
#include <vector>

#include "vfs/store.h"

namespace sentry::vfs {
namespace {

// Waits (up to 5 s) for cond; the stash's thread works in the background.
template <typename F>
bool Eventually(F cond) {
  for (int i = 0; i < 5000; ++i) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return cond();
}

// A token stand-in: an fd of /dev/null, counted.
SysResult<DirToken> CountedFd(std::atomic<int>* made) {
  ++*made;
  return DirToken{UniqueFd(open("/dev/null", O_RDONLY | O_CLOEXEC)), {}};
}

StoreStash::Makers TokensOnly(std::atomic<int>* made) {
  StoreStash::Makers m;
  m.token = [made] { return CountedFd(made); };
  return m;
}

TEST(StoreStashTest, MakesNothingUntilResumed) {
  std::atomic<int> made{0};
  StoreStash stash(TokensOnly(&made), std::nullopt);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(made.load(), 0);
  EXPECT_FALSE(stash.TakeToken());  // none in hand: the caller makes its own
  stash.Resume();
  EXPECT_TRUE(Eventually([&] { return made.load() == int(StoreStash::kHigh); }));
}

TEST(StoreStashTest, RefillsWhenFewAreLeft) {
  std::atomic<int> made{0};
  StoreStash stash(TokensOnly(&made), std::nullopt);
  stash.Resume();
  ASSERT_TRUE(Eventually([&] { return made.load() == int(StoreStash::kHigh); }));
  // Taking down to kLow asks for no more...
  for (size_t i = 0; i < StoreStash::kHigh - StoreStash::kLow; ++i) {
    EXPECT_TRUE(stash.TakeToken());
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(made.load(), int(StoreStash::kHigh));
  // ...one more does, up to kHigh again.
  EXPECT_TRUE(stash.TakeToken());
  EXPECT_TRUE(Eventually([&] {
    return made.load() == int(StoreStash::kHigh + StoreStash::kHigh - StoreStash::kLow + 1);
  }));
}

TEST(StoreStashTest, AStoreHandsOutRealDirectoryTokens) {
  std::string dir = std::filesystem::temp_directory_path() / "sentry-stash-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  int fd = open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  {
    Store store(UniqueFd(), getuid(), getgid());
    store.StartStash(std::nullopt);  // before the store has its directory
    store.set_dir_fd(UniqueFd(fd));
    std::set<ino_t> inodes;
    std::vector<UniqueFd> held;     // open, as the guest holds them
    for (int i = 0; i < 40; ++i) {  // more than the stash holds
      auto token = store.NewDirToken();
      ASSERT_TRUE(token.ok());
      struct stat st;
      ASSERT_EQ(fstat(token->fd.get(), &st), 0);
      // The identity it comes with is its own (donations use it unchecked).
      EXPECT_EQ(token->st.st_dev, st.st_dev);
      EXPECT_EQ(token->st.st_ino, st.st_ino);
      EXPECT_TRUE(S_ISDIR(token->st.st_mode));
      EXPECT_TRUE(S_ISDIR(st.st_mode));
      EXPECT_EQ(st.st_nlink, 0u);  // already removed
      inodes.insert(st.st_ino);
      char c;
      EXPECT_EQ(read(token->fd.get(), &c, 1), -1);
      EXPECT_EQ(errno, EISDIR);
      held.push_back(std::move(token->fd));
    }
    EXPECT_EQ(inodes.size(), 40u);  // each an inode of its own
  }
  // Nothing is left in the store's directory, made ahead or not.
  EXPECT_TRUE(std::filesystem::is_empty(dir));
  std::filesystem::remove_all(dir);
}

TEST(StoreStashTest, AStoreHandsOutFreshFilesAndDropsTheRest) {
  std::string dir = std::filesystem::temp_directory_path() / "sentry-stash-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  int fd = open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  {
    Store store(UniqueFd(), getuid(), getgid());
    store.StartStash(std::nullopt);
    store.set_dir_fd(UniqueFd(fd));
    // Let the stash fill, and its files grow old.
    ASSERT_TRUE(Eventually([&] {
      size_t n = 0;
      for (auto& e : std::filesystem::directory_iterator(dir)) n += e.is_regular_file();
      return n == StoreStash::kHigh;
    }));
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    std::set<std::string> names;
    for (int i = 0; i < 40; ++i) {  // more than the stash holds
      timespec before;
      clock_gettime(CLOCK_REALTIME, &before);
      auto name = store.Create(0644);
      ASSERT_TRUE(name.ok());
      names.insert(*name);
      struct stat st;
      ASSERT_TRUE(store.Stat(*name, &st).ok());
      EXPECT_TRUE(S_ISREG(st.st_mode));
      EXPECT_EQ(st.st_mode & 07777, 0666u);
      EXPECT_EQ(st.st_size, 0);
      // A create's times, not the stash's: no older than the call (to the
      // coarse clock's tick, which file times use).
      EXPECT_GE(st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000,
                before.tv_sec * 1000 + before.tv_nsec / 1000000 - 10);
      auto data = store.Open(*name, O_RDWR);
      ASSERT_TRUE(data.ok());
      EXPECT_EQ(write(data->get(), "x", 1), 1);
    }
    EXPECT_EQ(names.size(), 40u);
    // A file with an execute bit is made at once, mode 0777 on the host.
    auto exec = store.Create(0755);
    ASSERT_TRUE(exec.ok());
    struct stat st;
    ASSERT_TRUE(store.Stat(*exec, &st).ok());
    EXPECT_EQ(st.st_mode & 07777, 0777u);
    for (const std::string& n : names) store.Remove(n);
    store.Remove(*exec);
  }
  // The files made ahead and never taken are gone with the store.
  EXPECT_TRUE(std::filesystem::is_empty(dir));
  std::filesystem::remove_all(dir);
}

// A create may take the stash file's write-only description: the very file
// its name leads to, write-only, and the identity Store::Identity gives,
// which is forgotten once the name is removed or released.
TEST(StoreStashTest, ACreateTakesTheWriteOnlyDescriptionAndIdentity) {
  std::string dir = std::filesystem::temp_directory_path() / "sentry-stash-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  int fd = open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  {
    Store store(UniqueFd(), getuid(), getgid());
    store.StartStash(std::nullopt);
    store.set_dir_fd(UniqueFd(fd));
    ASSERT_TRUE(Eventually([&] {
      size_t n = 0;
      for (auto& e : std::filesystem::directory_iterator(dir)) n += e.is_regular_file();
      return n == StoreStash::kHigh;
    }));
    std::vector<std::string> names;
    int taken = 0;
    for (int i = 0; i < 40; ++i) {  // past the stash: some are made at once
      UniqueFd wronly;
      auto name = store.Create(0644, &wronly);
      ASSERT_TRUE(name.ok());
      names.push_back(*name);
      struct stat by_name, known;
      ASSERT_TRUE(store.Stat(*name, &by_name).ok());
      ASSERT_TRUE(store.Identity(*name, &known));
      EXPECT_EQ(known.st_dev, by_name.st_dev);
      EXPECT_EQ(known.st_ino, by_name.st_ino);
      if (!wronly) continue;
      ++taken;
      EXPECT_EQ(fcntl(wronly.get(), F_GETFL) & (O_ACCMODE | O_APPEND | O_NONBLOCK), O_WRONLY);
      struct stat by_fd;
      ASSERT_EQ(fstat(wronly.get(), &by_fd), 0);
      EXPECT_EQ(by_fd.st_ino, by_name.st_ino);
      EXPECT_EQ(lseek(wronly.get(), 0, SEEK_CUR), 0);
    }
    EXPECT_GT(taken, 0);
    // Without a place for it, no description is handed out (closed here).
    auto plain = store.Create(0644);
    ASSERT_TRUE(plain.ok());
    struct stat st;
    EXPECT_TRUE(store.Identity(*plain, &st));
    store.Remove(*plain);
    EXPECT_FALSE(store.Identity(*plain, &st));
    for (size_t i = 0; i < names.size(); ++i) {
      if (i % 2) {
        store.Release(names[i]);
      } else {
        store.Remove(names[i]);
      }
      EXPECT_FALSE(store.Identity(names[i], &st)) << names[i];
    }
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir));
  std::filesystem::remove_all(dir);
}

TEST(StoreStashTest, ReleasedFilesGoOffTheCallersThreadWithinTheByteCap) {
  std::string dir = std::filesystem::temp_directory_path() / "sentry-stash-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  int fd = open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  {
    Store store(UniqueFd(), getuid(), getgid());
    store.StartStash(std::nullopt);
    store.set_dir_fd(UniqueFd(fd));
    auto small = store.Create(0644);
    ASSERT_TRUE(small.ok());
    store.Release(*small);
    EXPECT_TRUE(Eventually([&] { return !std::filesystem::exists(dir + "/" + *small); }));
    // A file larger than the cap is removed before Release returns.
    auto big = store.Create(0644);
    ASSERT_TRUE(big.ok());
    {
      auto data = store.Open(*big, O_WRONLY);
      ASSERT_TRUE(data.ok());
      std::string mib(StoreStash::kMaxDeferredBytes + 4096, 'x');
      ASSERT_EQ(write(data->get(), mib.data(), mib.size()), ssize_t(mib.size()));
    }
    store.Release(*big);
    EXPECT_FALSE(std::filesystem::exists(dir + "/" + *big));
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir));
  std::filesystem::remove_all(dir);
}

// A pipe's write end handed to CloseLater: its read end sees EOF once the
// stash's thread has closed it.
struct Pipe {
  UniqueFd r, w;
  Pipe() {
    int p[2];
    if (pipe2(p, O_CLOEXEC) == 0) {
      r = UniqueFd(p[0]);
      w = UniqueFd(p[1]);
    }
  }
  bool Closed() const {
    pollfd pfd{r.get(), POLLIN, 0};
    return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLHUP);
  }
};

TEST(StoreStashTest, ClosesLaterInBatchesOnItsOwnWakeUps) {
  std::atomic<int> made{0};
  StoreStash stash(TokensOnly(&made), std::nullopt);
  // Not started: closed at once.
  Pipe early;
  stash.CloseLater(std::move(early.w));
  EXPECT_TRUE(early.Closed());
  stash.Resume();
  ASSERT_TRUE(Eventually([&] { return made.load() == int(StoreStash::kHigh); }));
  // One fd: no wake-up of its own; it waits for the next refill...
  Pipe one;
  stash.CloseLater(std::move(one.w));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(one.Closed());
  // ...which taking down to below kLow asks for.
  for (size_t i = 0; i <= StoreStash::kHigh - StoreStash::kLow; ++i) EXPECT_TRUE(stash.TakeToken());
  EXPECT_TRUE(Eventually([&] { return one.Closed(); }));
  // kMaxClosing waiting wake it by themselves.
  std::vector<Pipe> many(StoreStash::kMaxClosing);
  for (Pipe& p : many) stash.CloseLater(std::move(p.w));
  EXPECT_TRUE(Eventually([&] {
    for (const Pipe& p : many) {
      if (!p.Closed()) return false;
    }
    return true;
  }));
}

TEST(StoreStashTest, WhatWaitsToBeClosedIsClosedAtTheStop) {
  std::atomic<int> made{0};
  Pipe p;
  {
    StoreStash stash(TokensOnly(&made), std::nullopt);
    stash.Resume();
    ASSERT_TRUE(Eventually([&] { return made.load() == int(StoreStash::kHigh); }));
    stash.CloseLater(std::move(p.w));
  }
  EXPECT_TRUE(p.Closed());
}

}  // namespace
}  // namespace sentry::vfs
