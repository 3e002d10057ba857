// Where SENTRY_REQUIRE_ENGINES=1 (scripts/test.sh, after installing them),
// every engine the OCI suites drive is here: a missing one fails this test
// instead of turning its suite into skips that ctest counts as passes.
#include "gtest/gtest.h"
#include "tests/oci/oci_util.h"

namespace sentry::testing {
namespace {

TEST(OciEngines, AreInstalledWhereRequired) {
  if (!EnginesRequired()) GTEST_SKIP() << "SENTRY_REQUIRE_ENGINES is not 1";
  const std::vector<std::vector<std::string>> engines = {
      {"/usr/bin/podman"}, {"/usr/bin/containerd"},
      {"/usr/bin/ctr"},    {"/usr/sbin/runc", "/usr/bin/runc"},
      {"/usr/bin/crun"},
  };
  for (const std::vector<std::string>& paths : engines) {
    EXPECT_NE(FirstExecutable(paths), "") << paths[0] << " is missing";
  }
}

}  // namespace
}  // namespace sentry::testing
