// A container image is untrusted: its rootfs may hold symlinks that name host
// paths, absolute or through "..", at the top level (which the sandbox's
// loader binds) or deeper. None of them may lead to a host file outside the
// rootfs, for the guest's reads or for the exec the kernel does.
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "gtest/gtest.h"
#include "tests/oci/oci_util.h"

namespace sentry::testing {
namespace {

class RootfsEscape : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { prctl(PR_SET_CHILD_SUBREAPER, 1); }
  void SetUp() override {
    std::string why;
    std::string shared = TestRootfs(&why);
    ASSERT_FALSE(shared.empty()) << why;
    // A copy of links (the same filesystem: instant), with hostile entries.
    rootfs_ = dir_.path() + "/rootfs";
    ASSERT_EQ(RunProcess({"/bin/cp", "-al", shared, rootfs_}).exit_code, 0);
    secret_dir_ = dir_.path() + "/host-secret";
    mkdir(secret_dir_.c_str(), 0755);
    std::ofstream(secret_dir_ + "/secret") << "HOST-SECRET\n";
    symlink(secret_dir_.c_str(), (rootfs_ + "/hostdir").c_str());  // top level, absolute
    symlink((secret_dir_ + "/secret").c_str(), (rootfs_ + "/etc/abs-secret").c_str());
    std::string dots = "../../../../../../../../../../../.." + secret_dir_ + "/secret";
    symlink(dots.c_str(), (rootfs_ + "/etc/dots-secret").c_str());
    symlink("/usr/bin/../../../../../../bin/sh", (rootfs_ + "/usr/bin/dots-sh").c_str());
    root_ = dir_.path() + "/state";
  }
  int RunContainer(const std::string& id, const std::vector<std::string>& args) {
    std::string b = dir_.path() + "/" + id;
    WriteBundle(b, rootfs_, args);
    std::vector<std::string> base = {SentryBinary(), "--root", root_};
    std::vector<std::string> create = base;
    for (const char* a : {"create", "--bundle"}) create.push_back(a);
    create.push_back(b);
    create.push_back("--pid-file");
    create.push_back(b + "/pid");
    create.push_back(id);
    out_ = b + "/out";
    if (SpawnToFiles(create, out_, b + "/err") != 0) return -2;
    std::vector<std::string> start = base;
    start.push_back("start");
    start.push_back(id);
    RunProcess(start);
    int code = WaitExit(atoi(ReadFile(b + "/pid").c_str()), 30);
    std::vector<std::string> del = base;
    del.push_back("delete");
    del.push_back(id);
    RunProcess(del);
    return code;
  }

  ScratchDir dir_;
  std::string rootfs_, secret_dir_, root_, out_;
};

TEST_F(RootfsEscape, SymlinksInTheRootfsNeverReachHostFiles) {
  int code = RunContainer(
      "e1", {"sh", "-c",
             "for f in /hostdir/secret /etc/abs-secret /etc/dots-secret; do "
             "cat $f 2>/dev/null || echo \"$f: no\"; done; ls /hostdir 2>/dev/null; true"});
  EXPECT_EQ(code, 0);
  std::string out = ReadFile(out_);
  EXPECT_EQ(out.find("HOST-SECRET"), std::string::npos) << out;
  EXPECT_NE(out.find("/etc/abs-secret: no"), std::string::npos) << out;
  EXPECT_NE(out.find("/etc/dots-secret: no"), std::string::npos) << out;
}

TEST_F(RootfsEscape, AnExecThroughDotsRunsTheRootfsFileNotTheHosts) {
  // /usr/bin/dots-sh resolves, inside the sandbox, to the rootfs's /bin/sh.
  EXPECT_EQ(RunContainer("e2", {"/usr/bin/dots-sh", "-c", "echo inside"}), 0);
  EXPECT_EQ(ReadFile(out_), "inside\n");
}

}  // namespace
}  // namespace sentry::testing
