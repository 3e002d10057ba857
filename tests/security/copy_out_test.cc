// --copy-out GUEST:HOST_DIR through the real binary: what it writes, as whom,
// and the attacks on it: a guest symlink to a host file or out of the named
// tree, a host symlink or hard link planted in HOST_DIR, names with "..",
// a file past the byte cap, more files than the count cap.
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/security/security_util.h"
#include "tests/util/subprocess.h"

namespace sentry::security {
namespace {

using sentry::testing::RunProcess;
using sentry::testing::SentryRunArgv;

constexpr const char* kNobody = "65534";

class CopyOut : public ::testing::Test {
 protected:
  CopyOut() : dir_("/tmp/sec-copyout-") { chmod(dir_.path().c_str(), 0755); }

  std::string Path(const std::string& rel) const { return dir_.path() + "/" + rel; }

  // `sentry run flags -- sh -c script`; as_nobody: the real uid and gid
  // 65534 (a set-uid sentry's caller), or also the effective ones.
  ProcessResult Sh(const std::string& script, const std::vector<std::string>& flags,
                   const std::string& as_nobody = "") {
    std::vector<std::string> argv;
    if (as_nobody == "real") {
      argv = {"/usr/bin/setpriv", std::string("--ruid=") + kNobody,
              std::string("--rgid=") + kNobody, "--clear-groups", "--"};
    } else if (as_nobody == "all") {
      argv = {"/usr/bin/setpriv", std::string("--reuid=") + kNobody,
              std::string("--regid=") + kNobody, "--clear-groups", "--"};
    }
    for (const std::string& a : SentryRunArgv(flags, {"/bin/sh", "-c", script})) argv.push_back(a);
    return RunProcess(argv, "", 60);
  }

  static std::string Read(const std::string& path) { return ReadFile(path).value_or(""); }

  TempDir dir_;
};

TEST_F(CopyOut, FilesDirectoriesAndPatternsLandUnderTheirNames) {
  ProcessResult r =
      Sh("mkdir -p out/sub data && echo a > out/a.txt && echo b > out/sub/b && chmod 755 out/a.txt "
         "&& echo 1 > data/x.csv && echo 2 > data/y.csv && echo n > data/z.txt && echo top > t.txt",
         {"--copy-out", "out:" + Path("res"), "--copy-out", "data/*.csv:" + Path("csv"),
          "--copy-out", "/home/sandbox/t.txt:" + Path("one")});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Read(Path("res/out/a.txt")), "a\n");
  EXPECT_EQ(Read(Path("res/out/sub/b")), "b\n");
  EXPECT_EQ(Read(Path("csv/x.csv")), "1\n");
  EXPECT_EQ(Read(Path("csv/y.csv")), "2\n");
  EXPECT_NE(access(Path("csv/z.txt").c_str(), F_OK), 0);
  EXPECT_EQ(Read(Path("one/t.txt")), "top\n");
  struct stat st;
  ASSERT_EQ(stat(Path("res/out/a.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
  // --json says what each did.
  ProcessResult j = Sh("echo x > f", {"--json", "--copy-out", "f:" + Path("j")});
  EXPECT_NE(j.out.find(R"("copyOut":[{"from":"f",)"), std::string::npos) << j.out;
  EXPECT_NE(j.out.find(R"("files":1,"bytes":2,"skipped":[],"error":null)"), std::string::npos)
      << j.out;
}

TEST_F(CopyOut, AGuestSymlinkIsNeverFollowed) {
  // Out of the tree to a host file, to the host directory itself, and a
  // symlink named directly: none is read through.
  ProcessResult r =
      Sh("mkdir out && echo ok > out/ok && ln -s /etc/passwd out/pw && "
         "ln -s /etc out/etc && ln -s " +
             dir_.path() + " out/host && ln -s /etc/shadow sh",
         {"--copy-out", "out:" + Path("res"), "--copy-out", "sh:" + Path("sh")});
  EXPECT_EQ(r.exit_code, 125) << Describe(r);  // the named symlink fails the copy
  EXPECT_EQ(Read(Path("res/out/ok")), "ok\n");
  struct stat st;
  for (const char* name : {"res/out/pw", "res/out/etc", "res/out/host", "sh/sh"}) {
    EXPECT_NE(lstat(Path(name).c_str(), &st), 0) << name;
  }
  EXPECT_NE(r.err.find("skipped out/pw: a symlink (not followed)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--copy-out sh:" + Path("sh") + " failed: sh: a symlink"), std::string::npos)
      << r.err;
  // A symlink on the way to the name is not followed either.
  ProcessResult via = Sh("ln -s /etc e", {"--copy-out", "e/passwd:" + Path("via")});
  EXPECT_EQ(via.exit_code, 125) << Describe(via);
  EXPECT_NE(lstat(Path("via/passwd").c_str(), &st), 0);
  EXPECT_NE(via.err.find("symlink"), std::string::npos) << via.err;
}

TEST_F(CopyOut, AHostSymlinkOrHardLinkInTheDirectoryIsNotWrittenThrough) {
  std::string victim_dir = Path("victim");
  ASSERT_EQ(mkdir(victim_dir.c_str(), 0755), 0);
  std::string victim = victim_dir + "/file";
  WriteFileOrDie(victim, "untouched\n", 0644);
  ASSERT_EQ(mkdir(Path("res").c_str(), 0755), 0);
  // res/out -> victim (a directory the guest's out would be written into),
  // res/f -> victim/file, res/h a hard link to it.
  ASSERT_EQ(symlink(victim_dir.c_str(), Path("res/out").c_str()), 0);
  ASSERT_EQ(symlink(victim.c_str(), Path("res/f").c_str()), 0);
  ASSERT_EQ(link(victim.c_str(), Path("res/h").c_str()), 0);
  ProcessResult d = Sh("mkdir out && echo evil > out/file", {"--copy-out", "out:" + Path("res")});
  EXPECT_EQ(d.exit_code, 125) << Describe(d);
  EXPECT_NE(d.err.find("on the host, not a directory"), std::string::npos) << d.err;
  ProcessResult f = Sh("echo evil > f && echo evil > h",
                       {"--copy-out", "f:" + Path("res"), "--copy-out", "h:" + Path("res")});
  EXPECT_EQ(f.exit_code, 0) << Describe(f);
  EXPECT_EQ(Read(victim), "untouched\n");
  EXPECT_EQ(Read(Path("res/f")), "evil\n");  // the symlink itself replaced
  struct stat st;
  ASSERT_EQ(lstat(Path("res/f").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  // HOST_DIR itself a symlink: refused.
  ASSERT_EQ(symlink(victim_dir.c_str(), Path("link").c_str()), 0);
  ProcessResult l = Sh("echo evil > g", {"--copy-out", "g:" + Path("link")});
  EXPECT_EQ(l.exit_code, 125) << Describe(l);
  EXPECT_NE(access((victim_dir + "/g").c_str(), F_OK), 0);
}

TEST_F(CopyOut, DotDotNamesAreRefusedWhenTheFlagsAreRead) {
  for (const std::string& v : {"../etc/passwd:" + Path("x"), "out/../../x:" + Path("x"),
                               "/:" + Path("x"), std::string("out:")}) {
    ProcessResult r = Sh("true", {"--copy-out", v});
    EXPECT_EQ(r.exit_code, 125) << v << ": " << Describe(r);
    EXPECT_NE(r.err.find("--copy-out"), std::string::npos) << r.err;
  }
  EXPECT_NE(access(Path("x").c_str(), F_OK), 0);
}

TEST_F(CopyOut, CapsStopTheCopyAndSaySo) {
  // 3 MiB past a 2 MiB cap: the file is not written at all.
  ProcessResult big = Sh("mkdir out && head -c 3145728 /dev/zero > out/big",
                         {"--copy-out", "out:" + Path("big"), "--copy-out-max", "2m"});
  EXPECT_EQ(big.exit_code, 125) << Describe(big);
  EXPECT_NE(big.err.find("at most 2 MiB in all"), std::string::npos) << big.err;
  EXPECT_NE(access(Path("big/out/big").c_str(), F_OK), 0);
  // 300 files past a cap of 50 entries.
  ProcessResult many =
      Sh("mkdir out && cd out && i=0; while [ $i -lt 300 ]; do : > f$i; "
         "i=$((i+1)); done",
         {"--copy-out", "out:" + Path("many"), "--copy-out-max-files", "50"});
  EXPECT_EQ(many.exit_code, 125) << Describe(many);
  EXPECT_NE(many.err.find("at most 50 files"), std::string::npos) << many.err;
  EXPECT_NE(many.err.find("(49 files written)"), std::string::npos) << many.err;
}

TEST_F(CopyOut, FilesAreTheCallersUnderASetUidSentryAndWithoutRoot) {
  // The real uid is nobody's, the effective root's: the files are nobody's,
  // and a directory nobody may not write is refused.
  chmod(dir_.path().c_str(), 0777);
  ProcessResult r = Sh("echo mine > f", {"--copy-out", "f:" + Path("mine")}, "real");
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  struct stat st;
  ASSERT_EQ(stat(Path("mine/f").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534u);
  EXPECT_EQ(st.st_gid, 65534u);
  ASSERT_EQ(mkdir(Path("roots").c_str(), 0755), 0);
  ProcessResult denied = Sh("echo x > f", {"--copy-out", "f:" + Path("roots")}, "real");
  EXPECT_EQ(denied.exit_code, 125) << Describe(denied);
  EXPECT_NE(denied.err.find("EACCES"), std::string::npos) << denied.err;
  EXPECT_NE(access(Path("roots/f").c_str(), F_OK), 0);
  // A sentry that is nobody altogether: the same (without namespaces such
  // a sentry needs a store directory of its own, which this test has not).
  if (SeccompOnly()) return;
  ProcessResult plain = Sh("echo plain > f", {"--copy-out", "f:" + Path("plain")}, "all");
  ASSERT_EQ(plain.exit_code, 0) << Describe(plain);
  ASSERT_EQ(stat(Path("plain/f").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534u);
}

}  // namespace
}  // namespace sentry::security
