#include <sys/xattr.h>

#include "tests/conformance/conformance_util.h"

// Whether a filesystem supports extended attributes at all differs between
// hosts, so only the path lookup that comes before is tested here.
namespace sentry::conformance {
namespace {

TEST(XattrTest, GetOnMissingPathFails) {
  ScratchDir dir;
  char buf[64];
  EXPECT_SYSCALL_FAILS_WITH(getxattr(dir.Path("missing").c_str(), "user.x", buf, sizeof(buf)),
                            ENOENT);
}

TEST(XattrTest, SetOnMissingPathFails) {
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(setxattr(dir.Path("missing").c_str(), "user.x", "v", 1, 0), ENOENT);
}

TEST(XattrTest, LgetOnMissingPathFails) {
  ScratchDir dir;
  char buf[64];
  EXPECT_SYSCALL_FAILS_WITH(lgetxattr(dir.Path("missing").c_str(), "user.x", buf, sizeof(buf)),
                            ENOENT);
}

TEST(XattrTest, ListOnMissingPathFails) {
  ScratchDir dir;
  char buf[64];
  EXPECT_SYSCALL_FAILS_WITH(listxattr(dir.Path("missing").c_str(), buf, sizeof(buf)), ENOENT);
}

TEST(XattrTest, RemoveOnMissingPathFails) {
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(removexattr(dir.Path("missing").c_str(), "user.x"), ENOENT);
}

}  // namespace
}  // namespace sentry::conformance
