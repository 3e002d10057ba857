// A network namespace the engine made, named by path in config.json
// (podman with a network, a CRI pod's sandbox): the guest keeps its own
// (loopback only), the connections dev.sentry.allow-net lets out leave from
// the engine's namespace, and nothing else reaches it or the host's: not
// their loopback listeners, not private or metadata addresses.
#include <unistd.h>

#include <fstream>

#include "gtest/gtest.h"
#include "tests/oci/oci_util.h"

namespace sentry::testing {
namespace {

// Connects to each host on argv[1]'s port: what the listener said, or the errno's name.
constexpr const char* kProbe = R"(
import errno, os, socket, sys
port = int(sys.argv[1])
for host in sys.argv[2:]:
    try:
        c = socket.create_connection((host, port), timeout=5)
        print(host, c.recv(16).decode().strip() or "closed")
    except OSError as e:
        print(host, errno.errorcode.get(e.errno, e.errno))
print("links", sorted(n for _, n in socket.if_nameindex()))
)";

class OciNetns : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    rootfs_ = TestRootfs(&why);
    ASSERT_FALSE(rootfs_.empty()) << why;
    ASSERT_TRUE(ns_.ok()) << "cannot make a network namespace with listeners";
  }
  // `sentry run` of a bundle in the engine's namespace (network path
  // netns_path) with these annotations; stdout, or the error and log.
  ProcessResult Run(const std::string& name, const std::string& annotations,
                    const std::vector<std::string>& hosts, const std::string& netns_path = "") {
    std::vector<std::string> args = {"python3", "-c", kProbe, std::to_string(ns_.port())};
    args.insert(args.end(), hosts.begin(), hosts.end());
    std::string b = dir_.path() + "/" + name;
    WriteBundle(b, rootfs_, args, "",
                R"("annotations":{)" + annotations +
                    R"(},"linux":{"namespaces":[{"type":"pid"},{"type":"network","path":")" +
                    (netns_path.empty() ? ns_.path() : netns_path) + R"("}]})");
    return RunProcess({SentryBinary(), "--root", dir_.path() + "/state", "--log", Log(),
                       "--log-format", "json", "run", "--bundle", b, name},
                      "", 60);
  }
  std::string Log() { return dir_.path() + "/log.json"; }

  ScratchDir dir_;
  std::string rootfs_;
  EngineNetns ns_;
};

TEST_F(OciNetns, AllowedConnectionsLeaveFromTheEnginesNamespace) {
  std::string allow = "127.0.0.1:" + std::to_string(ns_.port());
  ProcessResult r = Run("n1",
                        R"("dev.sentry.allow-net":")" + allow +
                            R"(","dev.sentry.unsafe-allow-private-address":"true")",
                        {"127.0.0.1"});
  EXPECT_EQ(r.exit_code, 0) << r.err << ReadFile(Log());
  // The engine's loopback answered, not the host's; the guest itself has lo alone.
  EXPECT_EQ(r.out, "127.0.0.1 engine\nlinks ['lo']\n");
  EXPECT_EQ(ns_.engine_connections(), 1);
  EXPECT_EQ(ns_.host_connections(), 0);
  EXPECT_NE(ReadFile(Log()).find("network namespace " + ns_.path()), std::string::npos);
}

// Escape attempts: with the engine's namespace joined, the policy still
// decides. Its loopback and the host's stay out of reach (the guest's
// 127.0.0.1 is its own, where nothing listens), and private, metadata and
// loopback addresses are refused even when allowlisted, unless the operator
// said dev.sentry.unsafe-allow-private-address.
TEST_F(OciNetns, TheEnginesNamespaceLetsOutOnlyWhatThePolicyAllows) {
  ProcessResult none = Run("n2", "", {"127.0.0.1", "10.1.2.3", "169.254.169.254"});
  EXPECT_EQ(none.exit_code, 0) << none.err << ReadFile(Log());
  EXPECT_EQ(none.out,
            "127.0.0.1 ECONNREFUSED\n10.1.2.3 ENETUNREACH\n169.254.169.254 ENETUNREACH\n"
            "links ['lo']\n");
  // Allowlisted without the unsafe annotation: refused when the bundle is
  // read (never taken and then not let out), naming what would allow it.
  std::string port = std::to_string(ns_.port());
  for (const std::string& rule :
       {"127.0.0.1:" + port, "10.1.2.3:" + port, "169.254.169.254:" + port}) {
    ProcessResult listed = Run("n3", R"("dev.sentry.allow-net":")" + rule + R"(")", {"127.0.0.1"});
    EXPECT_NE(listed.exit_code, 0) << rule << listed.out;
    EXPECT_NE(ReadFile(Log()).find("dev.sentry.unsafe-allow-private-address"), std::string::npos)
        << ReadFile(Log());
  }
  EXPECT_EQ(ns_.engine_connections(), 0);
  EXPECT_EQ(ns_.host_connections(), 0);
}

TEST_F(OciNetns, APathThatIsNoNetworkNamespaceFailsCreate) {
  std::string file = dir_.path() + "/not-a-netns";
  std::ofstream(file) << "x";
  for (const std::string& path :
       {file, std::string("/proc/self/ns/mnt"), std::string("/proc/999999999/ns/net")}) {
    ProcessResult r = Run("n4", "", {"127.0.0.1"}, path);
    EXPECT_NE(r.exit_code, 0) << path;
    EXPECT_NE(ReadFile(Log()).find("network namespace " + path + " cannot be used"),
              std::string::npos)
        << ReadFile(Log());
  }
  EXPECT_EQ(ns_.engine_connections(), 0);
}

}  // namespace
}  // namespace sentry::testing
