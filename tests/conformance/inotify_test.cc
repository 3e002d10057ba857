// inotify_add_watch's errnos and the events a watch reports (inotify(7)):
// names in a watched directory, a watched file's own events, the watch
// descriptor the kernel gives for the same object twice.
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

struct Event {
  int wd;
  uint32_t mask;
  uint32_t cookie;
  std::string name;
};

// Every event queued on fd, waiting up to 200 ms for the first and
// 100 ms for each next.
std::vector<Event> ReadEvents(int fd) {
  std::vector<Event> out;
  alignas(inotify_event) char buf[8192];
  for (int wait_ms = 200;; wait_ms = 100) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, wait_ms) <= 0) return out;
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) return out;
    for (ssize_t i = 0; i < n;) {
      auto* e = reinterpret_cast<inotify_event*>(buf + i);
      out.push_back({e->wd, e->mask, e->cookie, e->len ? std::string(e->name) : ""});
      i += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
    }
  }
}

TEST(InotifyTest, AddWatchErrnos) {
  ScratchDir dir;
  UniqueFd in(inotify_init1(IN_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(in.get());
  std::string file = dir.Path("f");
  UniqueFd f(open(file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
  ASSERT_SYSCALL_SUCCEEDS(f.get());
  EXPECT_SYSCALL_FAILS_WITH(inotify_add_watch(in.get(), file.c_str(), 0), EINVAL);
  EXPECT_SYSCALL_FAILS_WITH(inotify_add_watch(in.get(), file.c_str(), 0x00800000), EINVAL);
  EXPECT_SYSCALL_FAILS_WITH(inotify_add_watch(-1, file.c_str(), IN_MODIFY), EBADF);
  EXPECT_SYSCALL_FAILS_WITH(inotify_add_watch(999, file.c_str(), IN_MODIFY), EBADF);
  EXPECT_SYSCALL_FAILS_WITH(inotify_add_watch(f.get(), file.c_str(), IN_MODIFY), EINVAL);
  EXPECT_SYSCALL_FAILS_WITH(
      inotify_add_watch(in.get(), file.c_str(), IN_MODIFY | IN_MASK_ADD | IN_MASK_CREATE), EINVAL);
  EXPECT_SYSCALL_FAILS_WITH(inotify_add_watch(in.get(), dir.Path("none").c_str(), IN_MODIFY),
                            ENOENT);
  EXPECT_SYSCALL_FAILS_WITH(inotify_add_watch(in.get(), "", IN_MODIFY), ENOENT);
  EXPECT_SYSCALL_FAILS_WITH(inotify_add_watch(in.get(), file.c_str(), IN_MODIFY | IN_ONLYDIR),
                            ENOTDIR);
  EXPECT_SYSCALL_FAILS_WITH(inotify_add_watch(in.get(), (file + "/x").c_str(), IN_MODIFY), ENOTDIR);
  // A dangling symlink: followed, nothing; not followed, the link itself.
  std::string link = dir.Path("dangling");
  ASSERT_SYSCALL_SUCCEEDS(symlink("none", link.c_str()));
  EXPECT_SYSCALL_FAILS_WITH(inotify_add_watch(in.get(), link.c_str(), IN_MODIFY), ENOENT);
  EXPECT_SYSCALL_SUCCEEDS(inotify_add_watch(in.get(), link.c_str(), IN_MODIFY | IN_DONT_FOLLOW));
}

TEST(InotifyTest, TheSameObjectGivesTheSameWatch) {
  ScratchDir dir;
  UniqueFd in(inotify_init1(IN_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(in.get());
  std::string sub = dir.Path("d");
  ASSERT_SYSCALL_SUCCEEDS(mkdir(sub.c_str(), 0755));
  int wd = inotify_add_watch(in.get(), sub.c_str(), IN_CREATE);
  ASSERT_SYSCALL_SUCCEEDS(wd);
  EXPECT_EQ(inotify_add_watch(in.get(), (sub + "/.").c_str(), IN_DELETE | IN_MASK_ADD), wd);
  EXPECT_SYSCALL_FAILS_WITH(inotify_add_watch(in.get(), sub.c_str(), IN_DELETE | IN_MASK_CREATE),
                            EEXIST);
  int other = inotify_add_watch(in.get(), dir.path().c_str(), IN_CREATE);
  ASSERT_SYSCALL_SUCCEEDS(other);
  EXPECT_NE(other, wd);
  // IN_MASK_ADD kept IN_CREATE: a new name is reported.
  ASSERT_SYSCALL_SUCCEEDS(mkdir((sub + "/n").c_str(), 0755));
  std::vector<Event> ev = ReadEvents(in.get());
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].wd, wd);
  EXPECT_EQ(ev[0].mask, static_cast<uint32_t>(IN_CREATE | IN_ISDIR));
  EXPECT_EQ(ev[0].name, "n");
  ASSERT_SYSCALL_SUCCEEDS(inotify_rm_watch(in.get(), wd));
  ev = ReadEvents(in.get());
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].mask, static_cast<uint32_t>(IN_IGNORED));
  EXPECT_SYSCALL_FAILS_WITH(inotify_rm_watch(in.get(), wd), EINVAL);
}

TEST(InotifyTest, ADirectoryWatchNamesEachChange) {
  ScratchDir dir;
  UniqueFd in(inotify_init1(IN_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(in.get());
  std::string d = dir.path();
  int wd = inotify_add_watch(
      in.get(), d.c_str(),
      IN_CREATE | IN_DELETE | IN_MODIFY | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE);
  ASSERT_SYSCALL_SUCCEEDS(wd);
  UniqueFd f(open((d + "/a").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
  ASSERT_SYSCALL_SUCCEEDS(f.get());
  ASSERT_EQ(write(f.get(), "hi", 2), 2);
  f = UniqueFd();
  ASSERT_SYSCALL_SUCCEEDS(mkdir((d + "/s").c_str(), 0755));
  ASSERT_SYSCALL_SUCCEEDS(rename((d + "/a").c_str(), (d + "/b").c_str()));
  ASSERT_SYSCALL_SUCCEEDS(rename((d + "/b").c_str(), (d + "/s/b").c_str()));
  ASSERT_SYSCALL_SUCCEEDS(unlink((d + "/s/b").c_str()));
  ASSERT_SYSCALL_SUCCEEDS(rmdir((d + "/s").c_str()));
  std::vector<Event> ev = ReadEvents(in.get());
  struct Want {
    uint32_t mask;
    const char* name;
  };
  const Want want[] = {
      {IN_CREATE, "a"},     {IN_MODIFY, "a"},   {IN_CLOSE_WRITE, "a"}, {IN_CREATE | IN_ISDIR, "s"},
      {IN_MOVED_FROM, "a"}, {IN_MOVED_TO, "b"}, {IN_MOVED_FROM, "b"},  {IN_DELETE | IN_ISDIR, "s"},
  };
  ASSERT_EQ(ev.size(), std::size(want));
  for (size_t i = 0; i < ev.size(); ++i) {
    EXPECT_EQ(ev[i].wd, wd) << i;
    EXPECT_EQ(ev[i].mask, want[i].mask) << i;
    EXPECT_EQ(ev[i].name, want[i].name) << i;
  }
  EXPECT_NE(ev[4].cookie, 0u);
  EXPECT_EQ(ev[4].cookie, ev[5].cookie);
}

TEST(InotifyTest, AFileWatchSeesItsDataAndItsEnd) {
  ScratchDir dir;
  UniqueFd in(inotify_init1(IN_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(in.get());
  std::string file = dir.Path("f");
  UniqueFd f(open(file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
  ASSERT_SYSCALL_SUCCEEDS(f.get());
  int wd = inotify_add_watch(in.get(), file.c_str(), IN_MODIFY | IN_CLOSE_WRITE | IN_DELETE_SELF);
  ASSERT_SYSCALL_SUCCEEDS(wd);
  ASSERT_EQ(write(f.get(), "x", 1), 1);
  f = UniqueFd();
  ASSERT_SYSCALL_SUCCEEDS(unlink(file.c_str()));
  std::vector<Event> ev = ReadEvents(in.get());
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[0].mask, static_cast<uint32_t>(IN_MODIFY));
  EXPECT_EQ(ev[1].mask, static_cast<uint32_t>(IN_CLOSE_WRITE));
  EXPECT_EQ(ev[2].mask, static_cast<uint32_t>(IN_DELETE_SELF));
  EXPECT_EQ(ev[3].mask, static_cast<uint32_t>(IN_IGNORED));
  for (const Event& e : ev) {
    EXPECT_EQ(e.wd, wd);
    EXPECT_EQ(e.name, "");
  }
}

TEST(InotifyTest, AMovedDirectorySeesItsOwnMove) {
  ScratchDir dir;
  UniqueFd in(inotify_init1(IN_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(in.get());
  std::string d = dir.Path("d");
  ASSERT_SYSCALL_SUCCEEDS(mkdir(d.c_str(), 0755));
  int wd = inotify_add_watch(in.get(), d.c_str(), IN_MOVE_SELF | IN_DELETE_SELF);
  ASSERT_SYSCALL_SUCCEEDS(wd);
  ASSERT_SYSCALL_SUCCEEDS(rename(d.c_str(), dir.Path("e").c_str()));
  ASSERT_SYSCALL_SUCCEEDS(rmdir(dir.Path("e").c_str()));
  std::vector<Event> ev = ReadEvents(in.get());
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].mask, static_cast<uint32_t>(IN_MOVE_SELF));
  EXPECT_EQ(ev[1].mask, static_cast<uint32_t>(IN_DELETE_SELF));
  EXPECT_EQ(ev[2].mask, static_cast<uint32_t>(IN_IGNORED));
}

}  // namespace
}  // namespace sentry::conformance
