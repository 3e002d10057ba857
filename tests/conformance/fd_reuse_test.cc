// What an fd stands for after its number is reused, duplicated, inherited or
// passed, and what closing it releases: a flock, an OFD lock, a pipe's, a
// FIFO's and a socket's EOF, a writer (ETXTBSY). Under sentry, directory,
// O_PATH and read-only system-file fds are identified by kcmp against a
// reference the sentry keeps (sentry/kernel/fd_holds.h): these cases fail if
// a stale record were trusted, or if a kept reference outlived a close that
// the guest can observe.
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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

// A directory fd moved to another number right after its open (gnulib's
// fts: F_DUPFD_CLOEXEC, then close), then used: the sentry checks the new
// number against the process's last donation (FdHolds::Guess). And a pipe
// under a number never used before, right after a directory's open: that
// guess must miss, and the fd is the pipe.
TEST(FdReuseTest, DirectoryMovedToAnotherNumberRightAfterItsOpen) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("sub")));
  ASSERT_TRUE(WriteFile(dir.Path("sub/inner"), ""));
  int opened = OpenDir(dir.path());
  ASSERT_SYSCALL_SUCCEEDS(opened);
  int moved = fcntl(opened, F_DUPFD_CLOEXEC, opened + 1);
  ASSERT_SYSCALL_SUCCEEDS(moved);
  ASSERT_SYSCALL_SUCCEEDS(close(opened));
  UniqueFd d(moved);
  UniqueFd sub(openat(d.get(), "sub", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(sub.get());
  EXPECT_SYSCALL_SUCCEEDS(faccessat(sub.get(), "inner", F_OK, 0));
  struct stat st;
  ASSERT_SYSCALL_SUCCEEDS(fstat(d.get(), &st));
  EXPECT_EQ(st.st_ino, StatOrFail(dir.path()).st_ino);
  EXPECT_TRUE(Contains(ListDirFd(d.get()), "sub"));

  UniqueFd fresh(OpenDir(dir.Path("sub")));
  ASSERT_SYSCALL_SUCCEEDS(fresh.get());
  int p[2];
  ASSERT_SYSCALL_SUCCEEDS(pipe2(p, O_CLOEXEC));
  UniqueFd r(p[0]), w(p[1]);
  EXPECT_SYSCALL_FAILS_WITH(openat(r.get(), "inner", O_RDONLY | O_CLOEXEC), ENOTDIR);
  ASSERT_SYSCALL_SUCCEEDS(fstat(w.get(), &st));
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  // The directory under its own number is still the directory.
  EXPECT_SYSCALL_SUCCEEDS(faccessat(fresh.get(), "inner", F_OK, 0));
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

// Whether an OFD write lock on the whole file would conflict with a lock
// some other description of it holds (F_OFD_GETLK asks, from fd's).
bool OfdLockedElsewhere(int fd) {
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  return fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
}

// An OFD lock goes with the last close of its description, as flock's: a
// system file's read lock, taken after fstat identified the fd.
TEST(FdReuseTest, OfdLockOfSystemFileReleasedByClose) {
  const char* path = "/usr/bin/cat";  // no other case locks it
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  ASSERT_SYSCALL_SUCCEEDS(fd);
  struct stat st;
  ASSERT_SYSCALL_SUCCEEDS(fstat(fd, &st));
  struct flock fl {};
  fl.l_type = F_RDLCK;
  fl.l_whence = SEEK_SET;
  ASSERT_SYSCALL_SUCCEEDS(fcntl(fd, F_OFD_SETLK, &fl));
  {
    UniqueFd other(open(path, O_RDONLY | O_CLOEXEC));
    ASSERT_SYSCALL_SUCCEEDS(other.get());
    ASSERT_SYSCALL_SUCCEEDS(fstat(other.get(), &st));
    EXPECT_TRUE(OfdLockedElsewhere(other.get()));  // held by fd's description
  }
  ASSERT_SYSCALL_SUCCEEDS(close(fd));
  UniqueFd again(open(path, O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(again.get());
  ASSERT_SYSCALL_SUCCEEDS(fstat(again.get(), &st));
  EXPECT_FALSE(OfdLockedElsewhere(again.get()));
}

// The same with the blocking form (F_OFD_SETLKW), which takes a free lock at once.
TEST(FdReuseTest, OfdWaitingLockOfSystemFileReleasedByClose) {
  const char* path = "/usr/bin/ls";
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  ASSERT_SYSCALL_SUCCEEDS(fd);
  struct stat st;
  ASSERT_SYSCALL_SUCCEEDS(fstat(fd, &st));
  struct flock fl {};
  fl.l_type = F_RDLCK;
  fl.l_whence = SEEK_SET;
  ASSERT_SYSCALL_SUCCEEDS(fcntl(fd, F_OFD_SETLKW, &fl));
  ASSERT_SYSCALL_SUCCEEDS(fstat(fd, &st));  // identified again after the lock
  ASSERT_SYSCALL_SUCCEEDS(close(fd));
  UniqueFd again(open(path, O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(again.get());
  ASSERT_SYSCALL_SUCCEEDS(fstat(again.get(), &st));
  EXPECT_FALSE(OfdLockedElsewhere(again.get()));
}

// A system file locked twice, and fstat'ed between: each lock goes with its
// description's close (the second open must not be held either).
TEST(FdReuseTest, FlockOfSystemFileTwiceReleasedByClose) {
  ExpectFlockReleasedByClose("/usr/bin/true", O_RDONLY);
  ExpectFlockReleasedByClose("/usr/bin/true", O_RDONLY);
}

// flock's errors are the kernel's: a bad fd, a bad operation.
TEST(FdReuseTest, FlockErrors) {
  EXPECT_SYSCALL_FAILS_WITH(flock(-1, LOCK_EX), EBADF);
  EXPECT_SYSCALL_FAILS_WITH(flock(1000, LOCK_SH), EBADF);
  UniqueFd fd(open("/usr/bin/env", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  struct stat st;
  ASSERT_SYSCALL_SUCCEEDS(fstat(fd.get(), &st));
  EXPECT_SYSCALL_FAILS_WITH(flock(fd.get(), 0), EINVAL);
  EXPECT_SYSCALL_SUCCEEDS(flock(fd.get(), LOCK_UN));  // nothing to unlock: still 0
}

// A system file's fd number taken over (dup2) by another system file's fd
// (files no other case locks: under sentry both are held):
// fstat is the new file's, however often the old one was identified.
TEST(FdReuseTest, SystemFileNumberReplacedByAnotherSystemFile) {
  UniqueFd a(open("/usr/bin/head", O_RDONLY | O_CLOEXEC));
  UniqueFd b(open("/usr/bin/tail", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(a.get());
  ASSERT_SYSCALL_SUCCEEDS(b.get());
  struct stat st;
  ASSERT_SYSCALL_SUCCEEDS(fstat(a.get(), &st));
  ASSERT_SYSCALL_SUCCEEDS(fstat(a.get(), &st));
  EXPECT_EQ(st.st_ino, StatOrFail("/usr/bin/head").st_ino);
  ASSERT_SYSCALL_SUCCEEDS(fstat(b.get(), &st));
  ASSERT_SYSCALL_SUCCEEDS(dup2(b.get(), a.get()));
  ASSERT_SYSCALL_SUCCEEDS(fstat(a.get(), &st));
  EXPECT_EQ(st.st_ino, StatOrFail("/usr/bin/tail").st_ino);
  EXPECT_EQ(st.st_size, StatOrFail("/usr/bin/tail").st_size);
  // And by a pipe: the pipe's.
  int p[2];
  ASSERT_SYSCALL_SUCCEEDS(pipe2(p, O_CLOEXEC));
  UniqueFd r(p[0]), w(p[1]);
  ASSERT_SYSCALL_SUCCEEDS(dup2(r.get(), b.get()));
  ASSERT_SYSCALL_SUCCEEDS(fstat(b.get(), &st));
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

// A socket's peer sees EOF once the other end's only fd is closed, however
// often it was identified.
TEST(FdReuseTest, SocketEofAfterIdentifiedPeerCloses) {
  int sv[2];
  ASSERT_SYSCALL_SUCCEEDS(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
  UniqueFd a(sv[0]);
  struct stat st;
  ASSERT_SYSCALL_SUCCEEDS(fstat(sv[1], &st));
  ASSERT_SYSCALL_SUCCEEDS(fstat(sv[1], &st));
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  ASSERT_SYSCALL_SUCCEEDS(close(sv[1]));
  char c;
  EXPECT_EQ(read(a.get(), &c, 1), 0);
}

// A file written through an fd that was identified (fstat), then closed,
// runs: no writer of it is left behind (ETXTBSY).
TEST(FdReuseTest, FileWrittenThroughIdentifiedFdThenRuns) {
  ScratchDir dir;
  const auto contents = ReadFile("/usr/bin/true");
  ASSERT_TRUE(contents.has_value());
  std::string path = dir.Path("mytrue");
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0755);
  ASSERT_SYSCALL_SUCCEEDS(fd);
  struct stat st;
  ASSERT_SYSCALL_SUCCEEDS(fstat(fd, &st));
  ASSERT_EQ(write(fd, contents->data(), contents->size()), static_cast<ssize_t>(contents->size()));
  ASSERT_SYSCALL_SUCCEEDS(fstat(fd, &st));
  ASSERT_SYSCALL_SUCCEEDS(close(fd));
  int status = RunInChild([&path] {
    char* const argv[] = {const_cast<char*>(path.c_str()), nullptr};
    char* const env[] = {nullptr};
    syscall(SYS_execve, path.c_str(), argv, env);
    return 100 + errno;
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "100 + errno of execve";
}

}  // namespace
}  // namespace sentry::conformance
