// What an fd stands for after its number is reused, duplicated, inherited or
// passed, and what closing it releases: a flock, a pipe's and a FIFO's EOF.
// Under sentry, directory and O_PATH fds are identified by kcmp against a
// reference the sentry keeps (sentry/kernel/fd_holds.h): these cases fail if
// a stale record were trusted, or if a kept reference outlived a close that
// the guest can observe.
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

int OpenDir(const std::string& path) {
  return open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

bool Contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// A directory fd closed and its number taken by another directory: the fd is
// the new directory for fstat, getdents64, fchdir and *at calls.
TEST(FdReuseTest, DirectoryNumberReusedByAnotherDirectory) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("a")));
  ASSERT_TRUE(MakeDir(dir.Path("b")));
  ASSERT_TRUE(WriteFile(dir.Path("a/in_a"), ""));
  ASSERT_TRUE(WriteFile(dir.Path("b/in_b"), ""));
  int fd = OpenDir(dir.Path("a"));
  ASSERT_SYSCALL_SUCCEEDS(fd);
  struct stat st;
  ASSERT_SYSCALL_SUCCEEDS(fstat(fd, &st));
  EXPECT_TRUE(Contains(ListDirFd(fd), "in_a"));
  ASSERT_SYSCALL_SUCCEEDS(close(fd));
  int again = OpenDir(dir.Path("b"));
  ASSERT_EQ(again, fd);  // the lowest free number
  UniqueFd closer(again);
  ASSERT_SYSCALL_SUCCEEDS(fstat(again, &st));
  EXPECT_EQ(st.st_ino, StatOrFail(dir.Path("b")).st_ino);
  std::vector<std::string> names = ListDirFd(again);
  EXPECT_TRUE(Contains(names, "in_b"));
  EXPECT_FALSE(Contains(names, "in_a"));
  EXPECT_SYSCALL_SUCCEEDS(faccessat(again, "in_b", F_OK, 0));
  EXPECT_SYSCALL_FAILS_WITH(faccessat(again, "in_a", F_OK, 0), ENOENT);
}

// A directory fd's number taken natively by a pipe (dup2): the fd is the pipe.
TEST(FdReuseTest, DirectoryNumberReplacedByPipe) {
  ScratchDir dir;
  UniqueFd d(OpenDir(dir.path()));
  ASSERT_SYSCALL_SUCCEEDS(d.get());
  struct stat st;
  ASSERT_SYSCALL_SUCCEEDS(fstat(d.get(), &st));
  ASSERT_TRUE(S_ISDIR(st.st_mode));
  int p[2];
  ASSERT_SYSCALL_SUCCEEDS(pipe2(p, O_CLOEXEC));
  UniqueFd r(p[0]), w(p[1]);
  ASSERT_SYSCALL_SUCCEEDS(dup3(r.get(), d.get(), O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fstat(d.get(), &st));
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  char buf[64];
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_getdents64, d.get(), buf, sizeof(buf)), ENOTDIR);
  EXPECT_SYSCALL_FAILS_WITH(fchdir(d.get()), ENOTDIR);
}

// Names in a getdents64 buffer.
std::vector<std::string> NamesIn(const char* buf, long n) {
  std::vector<std::string> names;
  for (long at = 0; at < n;) {
    const char* rec = buf + at;
    unsigned short reclen;
    memcpy(&reclen, rec + 16, sizeof(reclen));
    names.emplace_back(rec + 19);
    at += reclen;
  }
  return names;
}

// A forked child shares the parent's directory description: its position
// too, so the two listings together are the directory once.
TEST(FdReuseTest, ForkedChildContinuesTheListing) {
  ScratchDir dir;
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(WriteFile(dir.Path("f" + std::to_string(i)), ""));
  UniqueFd d(OpenDir(dir.path()));
  ASSERT_SYSCALL_SUCCEEDS(d.get());
  alignas(8) char buf[256];  // a few entries per call
  long n = syscall(SYS_getdents64, d.get(), buf, sizeof(buf));
  ASSERT_GT(n, 0);
  std::vector<std::string> first = NamesIn(buf, n);
  ASSERT_LT(first.size(), 42u);
  int fd = d.get();
  // The child's exit code is how many names it read.
  int status = RunInChild([fd] {
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode)) return 255;
    return static_cast<int>(ListDirFd(fd).size());
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(first.size() + WEXITSTATUS(status), 42u);  // 40 files, "." and ".."
  // The child read to the end of the shared description.
  EXPECT_EQ(syscall(SYS_getdents64, d.get(), buf, sizeof(buf)), 0);
}

// A directory fd passed over a unix socket is the same directory in the
// receiver, under another number.
TEST(FdReuseTest, DirectoryPassedOverSocket) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("marker"), ""));
  int sv[2];
  ASSERT_SYSCALL_SUCCEEDS(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
  UniqueFd a(sv[0]), b(sv[1]);
  UniqueFd d(OpenDir(dir.path()));
  ASSERT_SYSCALL_SUCCEEDS(d.get());
  struct stat st;
  ASSERT_SYSCALL_SUCCEEDS(fstat(d.get(), &st));
  char byte = 'x';
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  int sent = d.get();
  memcpy(CMSG_DATA(c), &sent, sizeof(int));
  ASSERT_SYSCALL_SUCCEEDS(sendmsg(a.get(), &msg, 0));
  int bfd = b.get();
  ino_t ino = st.st_ino;
  int status = RunInChild([bfd, ino] {
    char got;
    iovec iov{&got, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    if (recvmsg(bfd, &msg, MSG_CMSG_CLOEXEC) != 1) return 1;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    if (!c || c->cmsg_type != SCM_RIGHTS) return 2;
    int fd;
    memcpy(&fd, CMSG_DATA(c), sizeof(int));
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_ino != ino) return 3;
    if (!Contains(ListDirFd(fd), "marker")) return 4;
    return faccessat(fd, "marker", F_OK, 0) == 0 ? 0 : 5;
  });
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// A flock goes with the last close of its description: a second open of the
// same file then takes it at once. Each lock is taken after the fd was
// identified (fstat), as a program that checks its file first does.
void ExpectFlockReleasedByClose(const std::string& path, int flags) {
  int fd = open(path.c_str(), flags | O_CLOEXEC);
  ASSERT_SYSCALL_SUCCEEDS(fd);
  struct stat st;
  ASSERT_SYSCALL_SUCCEEDS(fstat(fd, &st));
  ASSERT_SYSCALL_SUCCEEDS(flock(fd, LOCK_EX));
  // Held: another description of the same file cannot have it meanwhile.
  int status = RunInChild([&path, flags] {
    int other = open(path.c_str(), flags | O_CLOEXEC);
    if (other < 0) return 1;
    struct stat st;
    if (fstat(other, &st) != 0) return 2;
    return flock(other, LOCK_EX | LOCK_NB) == -1 && errno == EWOULDBLOCK ? 0 : 3;
  });
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << path << ": " << status;
  ASSERT_SYSCALL_SUCCEEDS(close(fd));
  int again = open(path.c_str(), flags | O_CLOEXEC);
  ASSERT_SYSCALL_SUCCEEDS(again);
  UniqueFd closer(again);
  ASSERT_SYSCALL_SUCCEEDS(fstat(again, &st));
  EXPECT_SYSCALL_SUCCEEDS(flock(again, LOCK_EX | LOCK_NB)) << path;
}

TEST(FdReuseTest, FlockOfScratchFileReleasedByClose) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("lock"), "x"));
  ExpectFlockReleasedByClose(dir.Path("lock"), O_RDONLY);
}

TEST(FdReuseTest, FlockOfSystemFileReleasedByClose) {
  ExpectFlockReleasedByClose("/usr/bin/env", O_RDONLY);
}

// A directory's lock, after listings: released by the close too.
TEST(FdReuseTest, FlockOfListedDirectoryReleasedByClose) {
  ScratchDir dir;
  int fd = OpenDir(dir.path());
  ASSERT_SYSCALL_SUCCEEDS(fd);
  ListDirFd(fd);
  ASSERT_SYSCALL_SUCCEEDS(flock(fd, LOCK_EX));
  ASSERT_SYSCALL_SUCCEEDS(close(fd));
  UniqueFd again(OpenDir(dir.path()));
  ASSERT_SYSCALL_SUCCEEDS(again.get());
  ListDirFd(again.get());
  EXPECT_SYSCALL_SUCCEEDS(flock(again.get(), LOCK_EX | LOCK_NB));
}

// A pipe's reader sees EOF once the writer's last fd is closed, however
// often the fds were identified before.
TEST(FdReuseTest, PipeEofAfterIdentifiedWriterCloses) {
  int p[2];
  ASSERT_SYSCALL_SUCCEEDS(pipe2(p, O_CLOEXEC));
  UniqueFd r(p[0]);
  struct stat st;
  ASSERT_SYSCALL_SUCCEEDS(fstat(p[1], &st));
  ASSERT_SYSCALL_SUCCEEDS(fstat(p[1], &st));
  ASSERT_SYSCALL_SUCCEEDS(fstat(r.get(), &st));
  ASSERT_SYSCALL_SUCCEEDS(close(p[1]));
  char c;
  EXPECT_EQ(read(r.get(), &c, 1), 0);
}

// The same for a FIFO opened by name (an object the sandbox donates).
TEST(FdReuseTest, FifoEofAfterIdentifiedWriterCloses) {
  ScratchDir dir;
  ASSERT_SYSCALL_SUCCEEDS(mkfifo(dir.Path("fifo").c_str(), 0600));
  UniqueFd r(open(dir.Path("fifo").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(r.get());
  int w = open(dir.Path("fifo").c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_SYSCALL_SUCCEEDS(w);
  struct stat st;
  ASSERT_SYSCALL_SUCCEEDS(fstat(w, &st));
  ASSERT_SYSCALL_SUCCEEDS(fstat(w, &st));
  ASSERT_SYSCALL_SUCCEEDS(fstat(r.get(), &st));
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  ASSERT_SYSCALL_SUCCEEDS(write(w, "z", 1));
  ASSERT_SYSCALL_SUCCEEDS(close(w));
  char c;
  EXPECT_EQ(read(r.get(), &c, 1), 1);
  EXPECT_EQ(read(r.get(), &c, 1), 0);  // EOF, not EAGAIN: no writer is left
}

// An O_PATH fd of a directory, reused by a regular file's fd.
TEST(FdReuseTest, OPathNumberReusedByFile) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "12345"));
  int fd = open(dir.path().c_str(), O_PATH | O_CLOEXEC);
  ASSERT_SYSCALL_SUCCEEDS(fd);
  struct stat st;
  ASSERT_SYSCALL_SUCCEEDS(fstat(fd, &st));
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_SYSCALL_SUCCEEDS(faccessat(fd, "f", F_OK, 0));
  ASSERT_SYSCALL_SUCCEEDS(close(fd));
  int again = open(dir.Path("f").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_EQ(again, fd);
  UniqueFd closer(again);
  ASSERT_SYSCALL_SUCCEEDS(fstat(again, &st));
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_size, 5);
  EXPECT_SYSCALL_FAILS_WITH(faccessat(again, "f", F_OK, 0), ENOTDIR);
}

}  // namespace
}  // namespace sentry::conformance
