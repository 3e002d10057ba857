// Paths that cross symlinks, "." and "..", through libc's stat, lstat,
// access, readlink and realpath (under sentry, the fast-metadata library
// answers them from the region once a trap published the parts: each case
// asks twice, and compares every answer with the raw syscall's, which always
// traps), natively and under sentry, with fast metadata on and off.
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

// What stat (or lstat) says: "ino mode" or the errno's name.
std::string LibStat(const std::string& path, bool follow) {
  struct stat st {};
  int r = follow ? stat(path.c_str(), &st) : lstat(path.c_str(), &st);
  if (r != 0) return ErrnoName(errno);
  return std::to_string(st.st_ino) + " " + std::to_string(st.st_mode);
}

std::string RawStat(const std::string& path, bool follow) {
  struct stat st {};
  long r = syscall(SYS_newfstatat, AT_FDCWD, path.c_str(), &st, follow ? 0 : AT_SYMLINK_NOFOLLOW);
  if (r != 0) return ErrnoName(errno);
  return std::to_string(st.st_ino) + " " + std::to_string(st.st_mode);
}

std::string LibAccess(const std::string& path, int mode) {
  return access(path.c_str(), mode) == 0 ? "ok" : ErrnoName(errno);
}

std::string RawAccess(const std::string& path, int mode) {
  return syscall(SYS_access, path.c_str(), mode) == 0 ? "ok" : ErrnoName(errno);
}

std::string LibReadlink(const std::string& path) {
  char buf[256];
  ssize_t n = readlink(path.c_str(), buf, sizeof(buf));
  return n < 0 ? ErrnoName(errno) : std::string(buf, n);
}

std::string RawReadlink(const std::string& path) {
  char buf[256];
  long n = syscall(SYS_readlink, path.c_str(), buf, sizeof(buf));
  return n < 0 ? ErrnoName(errno) : std::string(buf, n);
}

std::string RealPath(const std::string& path) {
  char* r = realpath(path.c_str(), nullptr);
  if (r == nullptr) return ErrnoName(errno);
  std::string out(r);
  free(r);
  char buf[PATH_MAX];
  if (realpath(path.c_str(), buf) == nullptr || out != buf) return "buffer form differs";
  char* c = canonicalize_file_name(path.c_str());
  bool same = c != nullptr && out == c;
  free(c);
  return same ? out : "canonicalize_file_name differs";
}

// Every libc answer about path equals the raw syscall's, twice (the second
// time from the region under sentry); returns stat's answer.
std::string Same(const std::string& path) {
  std::string got;
  for (int round = 0; round < 2; round++) {
    EXPECT_EQ(LibStat(path, true), RawStat(path, true)) << path << " round " << round;
    EXPECT_EQ(LibStat(path, false), RawStat(path, false)) << path << " round " << round;
    EXPECT_EQ(LibAccess(path, R_OK | X_OK), RawAccess(path, R_OK | X_OK)) << path;
    EXPECT_EQ(LibAccess(path, F_OK), RawAccess(path, F_OK)) << path;
    EXPECT_EQ(LibReadlink(path), RawReadlink(path)) << path << " round " << round;
    got = LibStat(path, true);
  }
  return got;
}

TEST(SymlinkWalkTest, MergedUsrLinks) {
  for (const char* p : {"/bin/sh", "/bin", "/bin/", "/lib", "/lib64", "/usr/bin/python3",
                        "/bin/nonexistent", "/lib/nonexistent/x", "/bin/sh/x", "/usr/bin/../lib",
                        "/usr/lib/../bin/./sh", "/bin/../lib", "/usr/./bin//sh", "/usr/bin/.."}) {
    Same(p);
  }
  // realpath's answers, as the kernel resolves them.
  struct stat st {};
  if (lstat("/bin", &st) == 0 && S_ISLNK(st.st_mode)) {
    EXPECT_EQ(RealPath("/bin/sh"), RealPath("/usr/bin/sh"));
    EXPECT_EQ(RealPath("/bin"), "/usr/bin");
  }
  EXPECT_EQ(RealPath("/usr/bin/.."), "/usr");
  EXPECT_EQ(RealPath("/usr/.."), "/");
  EXPECT_EQ(RealPath("/"), "/");
  EXPECT_EQ(RealPath("/usr/bin/nonexistent"), "ENOENT");
  EXPECT_EQ(RealPath("/usr/bin/nonexistent/x"), "ENOENT");
  EXPECT_EQ(RealPath("/etc/passwd/x"), "ENOTDIR");
}

TEST(SymlinkWalkTest, LinksOfEveryKind) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  ASSERT_TRUE(MakeDir(dir.Path("d/e")));
  ASSERT_TRUE(WriteFile(dir.Path("d/e/f"), "x"));
  ASSERT_TRUE(MakeSymlink("d/e/f", dir.Path("rel")));
  ASSERT_TRUE(MakeSymlink(dir.Path("d/e"), dir.Path("abs")));
  ASSERT_TRUE(MakeSymlink("rel", dir.Path("chain1")));
  ASSERT_TRUE(MakeSymlink("chain1", dir.Path("chain2")));
  ASSERT_TRUE(MakeSymlink("loop2", dir.Path("loop1")));
  ASSERT_TRUE(MakeSymlink("loop1", dir.Path("loop2")));
  ASSERT_TRUE(MakeSymlink("nowhere/x", dir.Path("dangling")));
  ASSERT_TRUE(MakeSymlink("../d", dir.Path("d/up")));
  ASSERT_TRUE(MakeSymlink("/usr/bin", dir.Path("usrbin")));
  std::string f = Same(dir.Path("d/e/f"));
  EXPECT_EQ(Same(dir.Path("rel")), f);
  EXPECT_EQ(Same(dir.Path("chain2")), f);
  EXPECT_EQ(Same(dir.Path("abs/f")), f);
  EXPECT_EQ(Same(dir.Path("d/up/e/f")), f);
  EXPECT_EQ(Same(dir.Path("d/up/up/up/e/../e/f")), f);
  // ".." after a symlink is the target's parent, not the link's directory.
  EXPECT_EQ(Same(dir.Path("abs/../e/f")), f);
  EXPECT_EQ(Same(dir.Path("loop1")), "ELOOP");
  EXPECT_EQ(Same(dir.Path("loop1/x")), "ELOOP");
  EXPECT_EQ(Same(dir.Path("dangling")), "ENOENT");
  EXPECT_EQ(Same(dir.Path("usrbin/sh")), Same("/usr/bin/sh"));
  Same(dir.Path("rel/x"));
  Same(dir.Path("abs/"));
  Same(dir.Path("rel/"));
  EXPECT_EQ(RealPath(dir.Path("chain2")), RealPath(dir.Path("d/e/f")));
  EXPECT_EQ(RealPath(dir.Path("d/up/up/e/..")), RealPath(dir.Path("d")));
  EXPECT_EQ(RealPath(dir.Path("loop1")), "ELOOP");
  EXPECT_EQ(RealPath(dir.Path("dangling")), "ENOENT");
  // A relative path, from the working directory.
  char cwd[PATH_MAX];
  ASSERT_NE(getcwd(cwd, sizeof(cwd)), nullptr);
  ASSERT_EQ(chdir(dir.Path("d").c_str()), 0);
  EXPECT_EQ(Same("up/e/f"), f);
  EXPECT_EQ(Same("../rel"), f);
  EXPECT_EQ(RealPath("up/e/./f"), RealPath(dir.Path("d/e/f")));
  ASSERT_EQ(chdir(cwd), 0);
}

// A link replaced, or its target changed, is answered anew at once.
TEST(SymlinkWalkTest, ReplacedLinkIsSeenAtOnce) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("a")));
  ASSERT_TRUE(MakeDir(dir.Path("b")));
  ASSERT_TRUE(WriteFile(dir.Path("a/f"), "a"));
  ASSERT_TRUE(WriteFile(dir.Path("b/f"), "b"));
  ASSERT_TRUE(MakeSymlink("a", dir.Path("link")));
  std::string fa = Same(dir.Path("link/f"));
  EXPECT_EQ(RealPath(dir.Path("link/f")), dir.Path("a/f"));
  ASSERT_EQ(unlink(dir.Path("link").c_str()), 0);
  ASSERT_TRUE(MakeSymlink("b", dir.Path("link")));
  std::string fb = Same(dir.Path("link/f"));
  EXPECT_NE(fa, fb);
  EXPECT_EQ(RealPath(dir.Path("link/f")), dir.Path("b/f"));
  ASSERT_EQ(rename(dir.Path("b").c_str(), dir.Path("c").c_str()), 0);
  EXPECT_EQ(Same(dir.Path("link/f")), "ENOENT");
  EXPECT_EQ(RealPath(dir.Path("link/f")), "ENOENT");
  ASSERT_EQ(rename(dir.Path("c").c_str(), dir.Path("b").c_str()), 0);
  EXPECT_EQ(Same(dir.Path("link/f")), fb);
}

// A directory the caller may not search: EACCES through a link too.
TEST(SymlinkWalkTest, UnsearchableDirectory) {
  SKIP_IF_ROOT();
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("closed")));
  ASSERT_TRUE(WriteFile(dir.Path("closed/f"), "x"));
  ASSERT_TRUE(MakeSymlink("closed/f", dir.Path("in")));
  ASSERT_TRUE(MakeSymlink("closed", dir.Path("cl")));
  Same(dir.Path("in"));
  ASSERT_EQ(chmod(dir.Path("closed").c_str(), 0600), 0);
  EXPECT_EQ(Same(dir.Path("in")), "EACCES");
  EXPECT_EQ(Same(dir.Path("cl/f")), "EACCES");
  EXPECT_EQ(Same(dir.Path("cl/..")), "EACCES");
  EXPECT_EQ(RealPath(dir.Path("in")), "EACCES");
  ASSERT_EQ(chmod(dir.Path("closed").c_str(), 0755), 0);
}

}  // namespace
}  // namespace sentry::conformance
