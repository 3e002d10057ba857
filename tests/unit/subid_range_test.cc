// /etc/subuid's lines as shadow writes them, and the helpers' arguments.
#include "sentry/run/subid_range.h"

#include "gtest/gtest.h"

namespace sentry {
namespace {

TEST(SubidRange, FindsTheFirstRangeOfTheNameOrTheUid) {
  const std::string text =
      "alice:100000:65536\n"
      "bob:165536:65536\n"
      "bob:300000:10\n"
      "1005:231072:4096\n";
  SubidRange r = FindSubidRange(text, "bob", 1002);
  EXPECT_EQ(r.start, 165536u);
  EXPECT_EQ(r.count, 65536u);
  r = FindSubidRange(text, "carol", 1005);  // by number
  EXPECT_EQ(r.start, 231072u);
  EXPECT_EQ(r.count, 4096u);
  EXPECT_EQ(FindSubidRange(text, "carol", 1006).count, 0u);
  EXPECT_EQ(FindSubidRange(text, "", 1002).count, 0u);
}

TEST(SubidRange, SkipsBadLines) {
  const std::string text =
      "# comment\n"
      "bob:x:65536\n"
      "bob:1:\n"
      "bob:0:100\n"               // 0 is the host's root: never a range
      "bob:4294967295:2\n"        // past the last id
      "bob:100000:0\n"            // empty
      "bob:100000:65536:extra\n"  // a fourth field
      "bobby:1000:10\n"           // a longer name
      "  bob:200000:1000  \n";
  SubidRange r = FindSubidRange(text, "bob", 1002);
  EXPECT_EQ(r.start, 200000u);
  EXPECT_EQ(r.count, 1000u);
}

TEST(SubidRange, MapsTheCallerToZeroAndTheRangeAfter) {
  EXPECT_EQ(MapArgs(1002, {165536, 65536}), "0 1002 1 1 165536 65536");
  SubidPlan p;
  p.caller_uid = 1002;
  p.caller_gid = 1003;
  p.uids = {165536, 65536};
  p.gids = {200000, 65536};
  EXPECT_EQ(p.HostUid(0), 1002u);
  EXPECT_EQ(p.HostUid(1000), 166535u);
  EXPECT_EQ(p.HostGid(0), 1003u);
  EXPECT_EQ(p.HostGid(1000), 200999u);
}

}  // namespace
}  // namespace sentry
