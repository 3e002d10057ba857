// Which uid 0 is root's, and which stands for a caller (userns_root.h).
#include "sentry/run/userns_root.h"

#include "gtest/gtest.h"

namespace sentry {
namespace {

TEST(UsernsRoot, HostRootAndOrdinaryUsersAreLeftAlone) {
  const std::string host = "         0          0 4294967295\n";
  EXPECT_FALSE(ClassifyRoot(0, host, host).applies);
  EXPECT_FALSE(ClassifyRoot(1000, host, host).applies);
  // Not uid 0: an ordinary caller, rootless mode as it is.
  EXPECT_FALSE(ClassifyRoot(1000, "0 1000 1\n", "0 1000 1\n").applies);
}

TEST(UsernsRoot, RootlessPodmansRootIsItsCaller) {
  // podman's map: the caller's uid as 0, its subordinate range above.
  NamespacedRoot r =
      ClassifyRoot(0, "         0       1002          1\n         1     165536      65536\n",
                   "         0       1003          1\n         1     165536      65536\n");
  EXPECT_TRUE(r.applies);
  EXPECT_EQ(r.outer_uid, 1002u);
  EXPECT_EQ(r.outer_gid, 1003u);
  // unshare -r.
  r = ClassifyRoot(0, "0 1002 1\n", "0 1002 1\n");
  EXPECT_TRUE(r.applies);
  EXPECT_EQ(r.outer_uid, 1002u);
}

TEST(UsernsRoot, AMapWithRootsSandboxIdsIsRoot) {
  // A container whose map holds every id root's sandboxes take.
  EXPECT_FALSE(ClassifyRoot(0, "0 100000 4000000000\n", "0 100000 4000000000\n").applies);
  // ... in two lines.
  EXPECT_FALSE(ClassifyRoot(0, "0 100000 2000000000\n2000000000 3000000 100000000\n",
                            "0 100000 4000000000\n")
                   .applies);
  // A hole among them: not root's.
  EXPECT_TRUE(ClassifyRoot(0, "0 100000 2000000000\n2000000001 3000000 100000000\n",
                           "0 100000 4000000000\n")
                  .applies);
}

TEST(UsernsRoot, HostRootNarrowedOrAMalformedMapIsLeftAlone) {
  // 0 is the host's own root: becoming "uid 0" again gains nothing.
  EXPECT_FALSE(ClassifyRoot(0, "0 0 65536\n", "0 0 65536\n").applies);
  EXPECT_FALSE(ClassifyRoot(0, "", "").applies);
  EXPECT_FALSE(ClassifyRoot(0, "1 1002 1\n", "0 1002 1\n").applies);
  EXPECT_FALSE(ClassifyRoot(0, "0 x 1\n", "0 1002 1\n").applies);
}

}  // namespace
}  // namespace sentry
