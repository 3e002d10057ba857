// The directory-token stash: tokens made ahead by its own thread, only once
// resumed, refilled when few are left, and real tokens when its store makes
// them.
#include "vfs/dir_token_stash.h"

#include <fcntl.h>
#include <gtest/gtest.h>
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
SysResult<UniqueFd> CountedFd(std::atomic<int>* made) {
  ++*made;
  return UniqueFd(open("/dev/null", O_RDONLY | O_CLOEXEC));
}

TEST(DirTokenStashTest, MakesNothingUntilResumed) {
  std::atomic<int> made{0};
  DirTokenStash stash([&made] { return CountedFd(&made); }, std::nullopt);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(made.load(), 0);
  EXPECT_FALSE(stash.Take());  // none in hand: the caller makes its own
  stash.Resume();
  EXPECT_TRUE(Eventually([&] { return made.load() == int(DirTokenStash::kHigh); }));
}

TEST(DirTokenStashTest, RefillsWhenFewAreLeft) {
  std::atomic<int> made{0};
  DirTokenStash stash([&made] { return CountedFd(&made); }, std::nullopt);
  stash.Resume();
  ASSERT_TRUE(Eventually([&] { return made.load() == int(DirTokenStash::kHigh); }));
  // Taking down to kLow asks for no more...
  for (size_t i = 0; i < DirTokenStash::kHigh - DirTokenStash::kLow; ++i) {
    EXPECT_TRUE(stash.Take());
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(made.load(), int(DirTokenStash::kHigh));
  // ...one more does, up to kHigh again.
  EXPECT_TRUE(stash.Take());
  EXPECT_TRUE(Eventually([&] {
    return made.load() ==
           int(DirTokenStash::kHigh + DirTokenStash::kHigh - DirTokenStash::kLow + 1);
  }));
}

TEST(DirTokenStashTest, AStoreHandsOutRealDirectoryTokens) {
  std::string dir = std::filesystem::temp_directory_path() / "sentry-stash-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  int fd = open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  {
    Store store(UniqueFd(), getuid(), getgid());
    store.StartDirTokenStash(std::nullopt);  // before the store has its directory
    store.set_dir_fd(UniqueFd(fd));
    std::set<ino_t> inodes;
    std::vector<UniqueFd> held;     // open, as the guest holds them
    for (int i = 0; i < 40; ++i) {  // more than the stash holds
      auto token = store.NewDirToken();
      ASSERT_TRUE(token.ok());
      struct stat st;
      ASSERT_EQ(fstat(token->get(), &st), 0);
      EXPECT_TRUE(S_ISDIR(st.st_mode));
      EXPECT_EQ(st.st_nlink, 0u);  // already removed
      inodes.insert(st.st_ino);
      char c;
      EXPECT_EQ(read(token->get(), &c, 1), -1);
      EXPECT_EQ(errno, EISDIR);
      held.push_back(std::move(*token));
    }
    EXPECT_EQ(inodes.size(), 40u);  // each an inode of its own
  }
  // Nothing is left in the store's directory, made ahead or not.
  EXPECT_TRUE(std::filesystem::is_empty(dir));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sentry::vfs
