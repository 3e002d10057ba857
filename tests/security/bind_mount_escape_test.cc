// Escapes through `-v HOST:GUEST` mounts (the default, in-memory writes, :ro
// and the write-through :rw). A mount shows one host directory; nothing the guest does may reach
// the host directory's parent or anything else of the host, nor change the
// mounted directory itself. Each test checks what the guest got and, from the
// host side, that the mounted tree and its parent are exactly as before.
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "tests/security/security_util.h"

namespace sentry::security {
namespace {

// /tmp/sec-bind-XXXX/ holds secret.txt (what no guest may read) and mnt/, the
// mounted directory, with a file, a subdirectory and links that point out of
// it (as a careless or hostile host directory would hold).
class MountFixture {
 public:
  MountFixture() : parent_("/tmp/sec-bind-") {
    secret_ = RandomToken();
    WriteFileOrDie(parent_.path() + "/secret.txt", secret_ + "\n");
    mnt_ = parent_.path() + "/mnt";
    mkdir(mnt_.c_str(), 0777);
    chmod(mnt_.c_str(), 0777);
    mkdir((mnt_ + "/sub").c_str(), 0777);
    chmod((mnt_ + "/sub").c_str(), 0777);
    chmod(parent_.path().c_str(), 0755);
    WriteFileOrDie(mnt_ + "/inside.txt", "inside\n", 0666);
    (void)!symlink((parent_.path() + "/secret.txt").c_str(), (mnt_ + "/abs_out").c_str());
    (void)!symlink("../secret.txt", (mnt_ + "/rel_out").c_str());
    (void)!symlink("../../secret.txt", (mnt_ + "/sub/rel_out2").c_str());
    (void)!symlink("/", (mnt_ + "/to_root").c_str());
    before_ = State();
    outside_ = Outside();
  }
  const std::string& outside_before() const { return outside_; }
  const std::string& mnt() const { return mnt_; }
  const std::string& parent() const { return parent_.path(); }
  const std::string& secret() const { return secret_; }
  std::string State() const { return TreeState(parent_.path(), 4, /*with_content=*/true); }
  // The host outside the mount: the parent's own entries and the secret
  // (mode, owner and content), for :rw runs that change mnt/ itself.
  std::string Outside() const {
    std::string out;
    for (const std::string& name : ListDir(parent_.path())) out += name + " ";
    struct stat st {};
    lstat(parent_.path().c_str(), &st);
    out += "\nparent mode " + std::to_string(st.st_mode) + " nlink " + std::to_string(st.st_nlink) +
           " mtime " + std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
    lstat((parent_.path() + "/secret.txt").c_str(), &st);
    out += "\nsecret mode " + std::to_string(st.st_mode) + " uid " + std::to_string(st.st_uid) +
           " size " + std::to_string(st.st_size) + " nlink " + std::to_string(st.st_nlink) + "\n";
    return out + ReadFile(parent_.path() + "/secret.txt").value_or("<unreadable>");
  }
  // "" when the host side is exactly as made.
  std::string Changes() const {
    std::string now = State();
    return now == before_ ? "" : "before:\n" + before_ + "after:\n" + now;
  }

 private:
  TempDir parent_;
  std::string mnt_;
  std::string secret_;
  std::string before_;
  std::string outside_;
};

// Reads every path that might lead out; none may show the secret.
const char* const kReadOut = R"PY(
import os
def rd(p):
    with open(p) as f:
        return f.read()
t("abs_link", lambda: rd("/data/abs_out"))
t("rel_link", lambda: rd("/data/rel_out"))
t("rel_link_deep", lambda: rd("/data/sub/rel_out2"))
t("dotdot", lambda: rd("/data/../secret.txt"))
t("dotdot_deep", lambda: rd("/data/sub/../../secret.txt"))
t("dotdot_many", lambda: rd("/data" + "/.." * 12 + PARENT + "/secret.txt"))
t("parent_path", lambda: rd(PARENT + "/secret.txt"))
t("to_root", lambda: rd("/data/to_root" + PARENT + "/secret.txt"))
t("proc_root", lambda: rd("/proc/self/root/data/../secret.txt"))
t("proc_root_link", lambda: rd("/proc/self/root/data/rel_out"))
t("proc_cwd", lambda: (os.chdir("/data/sub"), rd("/proc/self/cwd/../../secret.txt"))[1])
fd = os.open("/data", os.O_RDONLY | os.O_DIRECTORY)
t("dirfd_dotdot", lambda: os.read(os.open("../secret.txt", os.O_RDONLY, dir_fd=fd), 100))
t("proc_fd", lambda: rd("/proc/self/fd/%d/../secret.txt" % fd))
t("listing", lambda: sorted(os.listdir("/data")))
t("parent_listing", lambda: sorted(os.listdir("/data/..")))
)PY";

void ExpectNoSecret(const Results& r, const ProcessResult& run, const std::string& secret) {
  EXPECT_EQ(run.out.find(secret), std::string::npos) << Describe(run);
  for (const char* name : {"abs_link", "rel_link", "rel_link_deep", "dotdot", "dotdot_deep",
                           "dotdot_many", "parent_path", "to_root", "proc_root", "proc_root_link",
                           "proc_cwd", "dirfd_dotdot", "proc_fd"}) {
    EXPECT_NE(Code(r, name), "OK") << name << "\n" << Describe(run);
    EXPECT_NE(Code(r, name), "<missing>") << name << "\n" << Describe(run);
  }
  EXPECT_EQ(Value(r, "listing"), "['abs_out', 'inside.txt', 'rel_out', 'sub', 'to_root']")
      << Describe(run);
  EXPECT_EQ(Value(r, "parent_listing").find("secret"), std::string::npos) << Describe(run);
}

TEST(BindMountEscape, LinksAndDotDotStayInTheSandbox) {
  for (const char* mode : {"", ":ro", ":rw"}) {
    MountFixture fx;
    std::string body = "PARENT = " + PyQuote(fx.parent()) + "\n" + kReadOut;
    ProcessResult run = RunPy(body, {"-v", fx.mnt() + ":/data" + mode});
    ASSERT_EQ(run.exit_code, 0) << mode << "\n" << Describe(run);
    Results r = ParseResults(run.out);
    EXPECT_EQ(Code(r, "abs_link"), "ENOENT") << Describe(run);  // the sandbox's own /tmp
    ExpectNoSecret(r, run, fx.secret());
    EXPECT_EQ(fx.Changes(), "") << mode;
  }
}

// Writes that would change the host: through links, `..`, renames and hard
// links out of and into the mount. The default keeps them in memory; :ro
// refuses them with EROFS. Either way the host stays exactly as it was.
const char* const kWriteOut = R"PY(
import os
def wr(p, data="pwned\n"):
    with open(p, "w") as f:
        f.write(data)
    return "written"
t("write_rel_link", lambda: wr("/data/rel_out"))
t("write_abs_link", lambda: wr("/data/abs_out"))
t("write_dotdot", lambda: wr("/data/../secret.txt"))
t("write_inside", lambda: wr("/data/inside.txt"))
t("create", lambda: wr("/data/new.txt"))
t("mkdir", lambda: os.mkdir("/data/newdir"))
t("symlink", lambda: os.symlink("/etc", "/data/newlink"))
t("rename_out", lambda: os.rename("/data/inside.txt", "/tmp/moved.txt"))
open("/tmp/in.txt", "w").write("from the guest\n")
t("rename_in", lambda: os.rename("/tmp/in.txt", "/data/in.txt"))
t("link_out", lambda: os.link("/data/inside.txt", "/tmp/hard.txt"))
t("link_in", lambda: os.link("/tmp/in.txt" if os.path.exists("/tmp/in.txt") else "/etc/hostname", "/data/hard_in.txt"))
t("unlink", lambda: os.unlink("/data/rel_out"))
t("rmdir", lambda: os.rmdir("/data/sub"))
t("chmod", lambda: os.chmod("/data/inside.txt", 0o777))
t("utime", lambda: os.utime("/data/inside.txt", (1, 1)))
t("truncate", lambda: os.truncate("/data/inside.txt", 0))
t("mkfifo", lambda: os.mkfifo("/data/fifo"))
t("setxattr", lambda: os.setxattr("/data/inside.txt", "user.x", b"1"))
import socket
s = socket.socket(socket.AF_UNIX)
t("bind_socket", lambda: s.bind("/data/sock"))
s2 = socket.socket(socket.AF_UNIX)
t("bind_socket_dotdot", lambda: s2.bind("/data/../sock2"))
t("reread", lambda: open("/data/inside.txt").read())
)PY";

TEST(BindMountEscape, WritesNeverReachTheHost) {
  MountFixture fx;
  ProcessResult run = RunPy(kWriteOut, {"-v", fx.mnt() + ":/data"});
  ASSERT_EQ(run.exit_code, 0) << Describe(run);
  Results r = ParseResults(run.out);
  // In memory, as on an overlay: these work inside and change nothing outside.
  for (const char* name : {"write_rel_link", "write_dotdot", "write_inside", "create", "mkdir",
                           "symlink", "rename_out", "rename_in", "unlink", "rmdir", "mkfifo"}) {
    EXPECT_NE(Code(r, name), "<missing>") << name << "\n" << Describe(run);
  }
  EXPECT_EQ(Code(r, "create"), "OK") << Describe(run);
  EXPECT_EQ(Code(r, "rename_in"), "OK") << Describe(run);
  EXPECT_EQ(fx.Changes(), "");
  EXPECT_EQ(ReadFile(fx.parent() + "/secret.txt"), fx.secret() + "\n");
}

TEST(BindMountEscape, ReadOnlyRefusesEveryChangeWithErofs) {
  MountFixture fx;
  ProcessResult run = RunPy(kWriteOut, {"-v", fx.mnt() + ":/data:ro"});
  ASSERT_EQ(run.exit_code, 0) << Describe(run);
  Results r = ParseResults(run.out);
  for (const char* name :
       {"write_inside", "create", "mkdir", "symlink", "rename_out", "rename_in", "link_in",
        "unlink", "rmdir", "chmod", "utime", "truncate", "mkfifo", "setxattr", "bind_socket"}) {
    EXPECT_EQ(Code(r, name), "EROFS") << name << "\n" << Describe(run);
  }
  EXPECT_EQ(Value(r, "reread"), "'inside\\n'") << Describe(run);
  EXPECT_EQ(fx.Changes(), "");
}

// A host thread swaps a directory of the mount for a symlink to the parent
// (and back) while the guest walks through it: a lookup that raced must find
// the directory or the link (which resolves in the sandbox), never the host
// parent.
TEST(BindMountEscape, SymlinkSwappedDuringTheWalk) {
  MountFixture fx;
  std::string dir = fx.mnt() + "/swap";
  std::string aside = fx.mnt() + "/swap.dir";
  mkdir(dir.c_str(), 0755);
  WriteFileOrDie(dir + "/secret.txt", "decoy\n");
  std::atomic<bool> stop{false};
  std::thread swapper([&] {
    while (!stop) {
      rename(dir.c_str(), aside.c_str());
      (void)!symlink(fx.parent().c_str(), dir.c_str());
      unlink(dir.c_str());
      rename(aside.c_str(), dir.c_str());
    }
  });
  std::string body = R"PY(
import os
hits = 0
for i in range(3000):
    try:
        with open("/data/swap/secret.txt") as f:
            if f.read() != "decoy\n":
                hits += 1
    except OSError:
        pass
t("hits", lambda: hits)
)PY";
  ProcessResult run = RunPy(body, {"-v", fx.mnt() + ":/data"}, 120);
  stop = true;
  swapper.join();
  ASSERT_EQ(run.exit_code, 0) << Describe(run);
  EXPECT_EQ(Value(ParseResults(run.out), "hits"), "0") << Describe(run);
  EXPECT_EQ(run.out.find(fx.secret()), std::string::npos);
}

// A lower directory node opens its host fd at its first use, not at its
// lookup (vfs/host_dir_fd.h). Directories the guest has stat'ed (nodes, fds
// not opened) are replaced on the host before it walks into them: by a
// symlink out of the mount, and by another directory moved into its place.
// The first must never lead out; the second is not the inode looked up and
// reads as empty; an untouched one opens as before.
TEST(BindMountEscape, LazyDirectoryReplacedAfterItsLookup) {
  for (const char* mode : {"", ":ro"}) {
    MountFixture fx;
    std::string m = fx.mnt();
    for (const char* d : {"/lazy_link", "/lazy_moved", "/lazy_kept", "/other"}) {
      mkdir((m + d).c_str(), 0755);
      WriteFileOrDie(m + d + "/keep.txt", std::string(d + 1) + "\n");
    }
    mkdir((fx.parent() + "/out").c_str(), 0755);
    WriteFileOrDie(fx.parent() + "/out/keep.txt", fx.secret() + "\n");
    WriteFileOrDie(m + "/go.txt", "go\n");
    // The swap starts when the sentry opens go.txt for the guest.
    int in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    ASSERT_GE(in, 0);
    ASSERT_GE(inotify_add_watch(in, m.c_str(), IN_OPEN), 0);
    std::thread swapper([&] {
      pollfd p{in, POLLIN, 0};
      if (poll(&p, 1, 60000) != 1) return;
      rename((m + "/lazy_link").c_str(), (m + "/lazy_link.old").c_str());
      (void)!symlink((fx.parent() + "/out").c_str(), (m + "/lazy_link").c_str());
      rename((m + "/lazy_moved").c_str(), (m + "/lazy_moved.old").c_str());
      rename((m + "/other").c_str(), (m + "/lazy_moved").c_str());
    });
    std::string body = R"PY(
import os, time
for d in ("lazy_link", "lazy_moved", "lazy_kept"):
    os.stat("/data/" + d)
open("/data/go.txt").read()
time.sleep(3)
def rd(p):
    with open(p) as f:
        return f.read()
for d in ("lazy_link", "lazy_moved", "lazy_kept"):
    t(d + "_read", lambda: rd("/data/%s/keep.txt" % d))
    t(d + "_list", lambda: sorted(os.listdir("/data/" + d)))
    t(d + "_stat", lambda: os.stat("/data/%s/keep.txt" % d).st_size)
)PY";
    ProcessResult run = RunPy(body, {"-v", m + ":/data" + mode}, 120);
    swapper.join();
    close(in);
    ASSERT_EQ(run.exit_code, 0) << mode << "\n" << Describe(run);
    Results r = ParseResults(run.out);
    EXPECT_EQ(run.out.find(fx.secret()), std::string::npos) << Describe(run);
    EXPECT_EQ(run.out.find("other"), std::string::npos) << Describe(run);
    for (const char* d : {"lazy_link", "lazy_moved"}) {
      EXPECT_NE(Code(r, std::string(d) + "_read"), "OK") << mode << "\n" << Describe(run);
      EXPECT_NE(Code(r, std::string(d) + "_read"), "<missing>") << Describe(run);
      EXPECT_NE(Code(r, std::string(d) + "_stat"), "OK") << mode << "\n" << Describe(run);
      EXPECT_EQ(Value(r, std::string(d) + "_list"), "[]") << mode << "\n" << Describe(run);
    }
    EXPECT_EQ(Value(r, "lazy_kept_read"), "'lazy_kept\\n'") << mode << "\n" << Describe(run);
    EXPECT_EQ(Value(r, "lazy_kept_list"), "['keep.txt']") << mode << "\n" << Describe(run);
    EXPECT_EQ(Value(r, "lazy_kept_stat"), "10") << mode << "\n" << Describe(run);
  }
}

// :rw: the same attacks, now that writes reach the host. Inside the mount
// they work; nothing leads out: rename and link across the mount's edge are
// EXDEV, a unix socket is EACCES and a FIFO EPERM (never made on the host),
// links and `..` resolve in the sandbox. The parent and the secret (mode,
// owner, content) are exactly as before.
TEST(BindMountEscape, ReadWriteChangesStayBeneathTheMount) {
  MountFixture fx;
  ProcessResult run = RunPy(kWriteOut, {"-v", fx.mnt() + ":/data:rw"});
  ASSERT_EQ(run.exit_code, 0) << Describe(run);
  Results r = ParseResults(run.out);
  for (const char* name :
       {"write_inside", "create", "mkdir", "symlink", "unlink", "truncate", "setxattr"}) {
    EXPECT_EQ(Code(r, name), "OK") << name << "\n" << Describe(run);
  }
  // inside.txt is root's on the host: the guest (uid 1000) is not its owner.
  EXPECT_EQ(Code(r, "chmod"), "EPERM") << Describe(run);
  EXPECT_EQ(Code(r, "utime"), "EPERM") << Describe(run);
  for (const char* name : {"rename_out", "rename_in", "link_out", "link_in"}) {
    EXPECT_EQ(Code(r, name), "EXDEV") << name << "\n" << Describe(run);
  }
  EXPECT_EQ(Code(r, "bind_socket"), "EACCES") << Describe(run);
  EXPECT_EQ(Code(r, "mkfifo"), "EPERM") << Describe(run);
  EXPECT_EQ(Code(r, "rmdir"), "ENOTEMPTY") << Describe(run);  // sub/ holds rel_out2
  for (const char* name : {"write_rel_link", "write_abs_link", "write_dotdot"}) {
    EXPECT_NE(Code(r, name), "<missing>") << name << "\n" << Describe(run);
  }
  // The writes reached the host, inside the mount only.
  EXPECT_EQ(ReadFile(fx.mnt() + "/new.txt"), "pwned\n");
  char target[64] = {};
  EXPECT_EQ(readlink((fx.mnt() + "/newlink").c_str(), target, sizeof(target) - 1), 4);
  EXPECT_STREQ(target, "/etc");
  struct stat st;
  EXPECT_EQ(lstat((fx.mnt() + "/sock").c_str(), &st), -1);
  EXPECT_EQ(lstat((fx.mnt() + "/fifo").c_str(), &st), -1);
  EXPECT_EQ(lstat((fx.parent() + "/sock2").c_str(), &st), -1);
  EXPECT_EQ(fx.Outside(), fx.outside_before());
}

// setuid and setgid never land on the host, whoever the guest is.
TEST(BindMountEscape, ReadWriteNeverMakesSetuidFiles) {
  MountFixture fx;
  ProcessResult run = RunPy(R"PY(
import os
open("/data/su", "w").write("#!/bin/sh\n")
t("chmod", lambda: os.chmod("/data/su", 0o6755))
t("mode", lambda: oct(os.stat("/data/su").st_mode & 0o7777))
)PY",
                            {"-v", fx.mnt() + ":/data:rw"});
  ASSERT_EQ(run.exit_code, 0) << Describe(run);
  Results r = ParseResults(run.out);
  EXPECT_EQ(Value(r, "mode"), "'0o755'") << Describe(run);
  struct stat st;
  ASSERT_EQ(stat((fx.mnt() + "/su").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  EXPECT_EQ(fx.Outside(), fx.outside_before());
}

// A host thread swaps a directory of a :rw mount for a symlink to the
// mount's parent, and a file for a symlink to the secret, while the guest
// creates, writes, renames, chmods, truncates and links through them. A call
// that raced fails or acts inside the mount; the parent never gains an entry
// and the secret never changes.
TEST(BindMountEscape, ReadWriteSymlinkSwappedDuringWrites) {
  MountFixture fx;
  std::string dir = fx.mnt() + "/swap";
  std::string aside = fx.mnt() + "/swap.dir";
  std::string victim = fx.mnt() + "/victim";
  std::string victim_aside = fx.mnt() + "/victim.file";
  mkdir(dir.c_str(), 0777);
  chmod(dir.c_str(), 0777);
  WriteFileOrDie(victim, "victim\n", 0666);
  std::atomic<bool> stop{false};
  std::thread swapper([&] {
    while (!stop) {
      rename(dir.c_str(), aside.c_str());
      (void)!symlink(fx.parent().c_str(), dir.c_str());
      rename(victim.c_str(), victim_aside.c_str());
      (void)!symlink((fx.parent() + "/secret.txt").c_str(), victim.c_str());
      unlink(dir.c_str());
      rename(aside.c_str(), dir.c_str());
      unlink(victim.c_str());
      rename(victim_aside.c_str(), victim.c_str());
    }
  });
  std::string body = R"PY(
import os
def q(f, *a):
    try:
        f(*a)
    except OSError:
        pass
def wr(p):
    with open(p, "w") as f:
        f.write("pwned\n")
for i in range(400):
    q(wr, "/data/swap/secret.txt")
    q(wr, "/data/swap/out%d" % (i % 4))
    q(os.mkdir, "/data/swap/dd")
    q(os.rename, "/data/swap/out0", "/data/swap/moved")
    q(os.symlink, "x", "/data/swap/ln")
    q(os.link, "/data/victim", "/data/swap/hard")
    q(os.chmod, "/data/swap/secret.txt", 0o777)
    q(os.chmod, "/data/victim", 0o777)
    q(os.truncate, "/data/victim", 0)
    q(os.utime, "/data/victim", (1, 1))
    q(wr, "/data/victim")
    q(os.unlink, "/data/swap/ln")
t("done", lambda: 1)
)PY";
  ProcessResult run = RunPy(body, {"-v", fx.mnt() + ":/data:rw"}, 120);
  stop = true;
  swapper.join();
  ASSERT_EQ(run.exit_code, 0) << Describe(run);
  EXPECT_EQ(Value(ParseResults(run.out), "done"), "1") << Describe(run);
  EXPECT_EQ(fx.Outside(), fx.outside_before());
}

}  // namespace
}  // namespace sentry::security
