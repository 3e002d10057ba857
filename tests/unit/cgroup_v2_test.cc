// Finding a delegated cgroup v2 subtree, on a fake tree in a directory (the
// parsing and the checks only: this host gives no v2 subtree to a user).
#include "sentry/run/cgroup_v2.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "gtest/gtest.h"

namespace sentry {
namespace {

class FakeCgroupTree : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/sentry-cg2-XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    root_ = templ;
    dir_ = root_ + "/user.slice/user-1000.slice/user@1000.service/app.slice/run.scope";
    std::string p;
    for (const char* part :
         {"/user.slice", "/user-1000.slice", "/user@1000.service", "/app.slice", "/run.scope"}) {
      p += part;
      mkdir((root_ + p).c_str(), 0755);
    }
  }
  void TearDown() override { std::system(("rm -rf " + root_).c_str()); }
  void Write(const std::string& name, const std::string& text, int mode = 0644) {
    std::ofstream(dir_ + "/" + name) << text;
    chmod((dir_ + "/" + name).c_str(), mode);
  }
  static constexpr const char* kSelf =
      "0::/user.slice/user-1000.slice/user@1000.service/app.slice/run.scope\n";
  std::string root_, dir_;
};

TEST_F(FakeCgroupTree, FindsTheCallersSubtreeAndItsControllers) {
  Write("cgroup.procs", "");
  Write("cgroup.subtree_control", "cpuset cpu io memory pids\n");
  DelegatedCgroup d = FindDelegatedCgroup(kSelf, root_);
  EXPECT_EQ(d.dir, dir_) << d.why_not;
  EXPECT_EQ(d.controllers, (std::vector<std::string>{"cpu", "memory", "pids"}));
}

TEST_F(FakeCgroupTree, NoControllerForChildrenIsNoSubtree) {
  Write("cgroup.procs", "");
  Write("cgroup.subtree_control", "\n");
  DelegatedCgroup d = FindDelegatedCgroup(kSelf, root_);
  EXPECT_EQ(d.dir, "");
  EXPECT_NE(d.why_not.find("cgroup.subtree_control"), std::string::npos) << d.why_not;
}

TEST_F(FakeCgroupTree, AV1HostOrAPathOutsideIsNone) {
  Write("cgroup.procs", "");
  Write("cgroup.subtree_control", "memory pids\n");
  // cgroup v1's lines only.
  EXPECT_EQ(FindDelegatedCgroup("12:pids:/user.slice\n4:memory:/user.slice\n", root_).dir, "");
  EXPECT_EQ(FindDelegatedCgroup("0::/../etc\n", root_).dir, "");
  EXPECT_EQ(FindDelegatedCgroup("0::/no/such/dir\n", root_).dir, "");
}

TEST_F(FakeCgroupTree, WithoutItsFilesItIsNone) {
  // (A v2 directory always has them: here, one the caller cannot write.)
  Write("cgroup.subtree_control", "memory pids\n");
  DelegatedCgroup d = FindDelegatedCgroup(kSelf, root_);
  EXPECT_EQ(d.dir, "");
  EXPECT_NE(d.why_not.find("cgroup.procs is not the caller's to write"), std::string::npos)
      << d.why_not;
}

}  // namespace
}  // namespace sentry
