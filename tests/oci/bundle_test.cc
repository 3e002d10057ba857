// config.json onto RunOptions (sentry/oci/bundle.h), without a sandbox: what
// is honoured, what is said in the notes, and malformed configs refused with
// a message (an engine's file, but parsed as untrusted input all the same).
#include "sentry/oci/bundle.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "sentry/oci/rootfs_users.h"
#include "sentry/oci/spec.h"

namespace sentry::oci {
namespace {

std::string Config(const std::string& process, const std::string& rest = "") {
  return R"({"ociVersion":"1.0.2","root":{"path":"/"},"process":{)" + process + "}" +
         (rest.empty() ? "" : "," + rest) + "}";
}

// "1,2,...,n"
std::string ManyGids(int n) {
  std::string out;
  for (int i = 1; i <= n; ++i) out += (i > 1 ? "," : "") + std::to_string(i);
  return out;
}

TEST(OciBundle, MapsProcessResourcesAndAnnotations) {
  auto b = ParseConfig(
      Config(
          R"("args":["python3","-c","pass"],"env":["A=1"],"cwd":"/work",)"
          R"("user":{"uid":1000,"gid":100,"additionalGids":[5,27,5]},)"
          R"("rlimits":[{"type":"RLIMIT_NOFILE","soft":256,"hard":512},)"
          R"({"type":"RLIMIT_STACK","soft":4194304,"hard":8388608},)"
          R"({"type":"RLIMIT_CORE","soft":100,"hard":100},{"type":"RLIMIT_BOGUS"}],)"
          R"("capabilities":{"bounding":["CAP_KILL"]})",
          R"("hostname":"h1","linux":{"resources":{"memory":{"limit":268435456},)"
          R"("pids":{"limit":64},"cpu":{"quota":50000,"period":100000,"shares":512}},)"
          R"("namespaces":[{"type":"network","path":"/proc/self/ns/net"}],"cgroupsPath":"/a/b"},)"
          R"("annotations":{"dev.sentry.timeout":"5","dev.sentry.network":"allow",)"
          R"("dev.sentry.allow-net":"example.com:443","other":"x"})"),
      "/bundle");
  ASSERT_TRUE(b.ok()) << b.status();
  const RunOptions& o = b->run;
  EXPECT_EQ(o.argv, (std::vector<std::string>{"python3", "-c", "pass"}));
  EXPECT_EQ(o.env, (std::vector<std::string>{"A=1"}));
  EXPECT_TRUE(o.exact_env);
  EXPECT_EQ(o.workdir, "/work");
  EXPECT_EQ(o.uid, 1000);
  EXPECT_EQ(o.gid, 100);
  EXPECT_FALSE(o.root);
  EXPECT_EQ(o.groups, (std::vector<gid_t>{5, 27}));
  EXPECT_EQ(o.nofile, 512u);  // the hard limit; the soft one is the guest's rlimit
  ASSERT_EQ(o.rlimits.size(), 3u);
  EXPECT_EQ(o.rlimits[0].resource, RLIMIT_NOFILE);
  EXPECT_EQ(o.rlimits[0].soft, 256u);
  EXPECT_EQ(o.rlimits[0].hard, 512u);
  EXPECT_EQ(o.rlimits[1].resource, RLIMIT_STACK);
  EXPECT_EQ(o.rlimits[1].soft, 4194304u);
  EXPECT_EQ(o.rlimits[1].hard, 8388608u);
  EXPECT_EQ(o.rlimits[2].resource, RLIMIT_CORE);  // never a core file
  EXPECT_EQ(o.rlimits[2].hard, 0u);
  EXPECT_EQ(o.cpu_period_us, 100000u);
  EXPECT_EQ(o.cpu_shares, 512u);
  EXPECT_EQ(o.outside_netns, "/proc/self/ns/net");
  EXPECT_EQ(o.hostname, "h1");
  EXPECT_EQ(o.memory_bytes, 256u << 20);
  EXPECT_EQ(o.pids, 64u);
  EXPECT_DOUBLE_EQ(o.cpus, 0.5);
  EXPECT_DOUBLE_EQ(o.timeout_sec, 5);
  ASSERT_EQ(o.net.allow.size(), 1u);
  EXPECT_EQ(b->rootfs, "/");
  EXPECT_EQ(b->annotations.at("other"), "x");
  std::string notes = absl::StrJoin(b->notes, "\n");
  for (const char* said : {"RLIMIT_CORE->0", "RLIMIT_BOGUS", "capabilities",
                           "network namespace /proc/self/ns/net", "cgroupsPath"}) {
    EXPECT_NE(notes.find(said), std::string::npos) << said << " in:\n" << notes;
  }
  // Honoured now, so not among what is not.
  for (const char* not_said : {"additionalGids", "cpu.shares"}) {
    EXPECT_EQ(notes.find(not_said), std::string::npos) << not_said << " in:\n" << notes;
  }
}

// Fields sentry does not apply are each said once; process.user.umask is
// the guest's first umask; a malformed one is refused.
TEST(OciBundle, PropagationDevicesAndSwapAreSaidAndUmaskIsHonoured) {
  auto b = ParseConfig(Config(R"("args":["sh"],"user":{"uid":0,"gid":0,"umask":63})",
                              R"("linux":{"rootfsPropagation":"rslave","resources":{)"
                              R"("memory":{"limit":268435456,"swap":536870912},)"
                              R"("devices":[{"allow":false,"access":"rwm"}]}})"),
                       "/bundle");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->run.umask, 077u);
  std::string notes = absl::StrJoin(b->notes, "\n");
  for (const char* said :
       {"linux.rootfsPropagation not honoured", "linux.resources.devices not honoured",
        "linux.resources.memory.swap not honoured"}) {
    size_t at = notes.find(said);
    EXPECT_NE(at, std::string::npos) << said << " in:\n" << notes;
    EXPECT_EQ(notes.find(said, at + 1), std::string::npos) << said << " twice in:\n" << notes;
  }
  EXPECT_EQ(notes.find("umask"), std::string::npos) << notes;
  // Without one, the kernel's default.
  auto plain = ParseConfig(Config(R"("args":["sh"])"), "/bundle");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->run.umask, 022u);
  EXPECT_TRUE(plain->notes.empty()) << absl::StrJoin(plain->notes, "\n");
  for (const char* bad : {R"("umask":512)", R"("umask":-1)", R"("umask":"022")"}) {
    auto r = ParseConfig(
        Config(std::string(R"("args":["sh"],"user":{"uid":0,"gid":0,)") + bad + "}"), "/bundle");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(std::string(r.status().message()).find("umask"), std::string::npos) << r.status();
  }
}

// Every annotation `features` lists is one the parser takes as sentry's.
TEST(OciBundle, FeaturesListsEveryAnnotationSentryReads) {
  auto features = nlohmann::json::parse(FeaturesJson());
  std::string listed = features["annotations"]["dev.sentry.annotations"];
  EXPECT_NE(listed.find("dev.sentry.unsafe-allow-private-address"), std::string::npos) << listed;
  const std::map<std::string, std::string> valid = {
      {"dev.sentry.network", "none"},  {"dev.sentry.allow-net", "example.com:443"},
      {"dev.sentry.timeout", "5"},     {"dev.sentry.disk-mb", "64"},
      {"dev.sentry.max-output", "64"}, {"dev.sentry.trace", "false"},
      {"dev.sentry.log", "x.log"},     {"dev.sentry.unsafe-allow-private-address", "false"}};
  int count = 0;
  for (absl::string_view key : absl::StrSplit(listed, ", ")) {
    ++count;
    std::string k(key);
    ASSERT_TRUE(valid.count(k)) << k << " has no test value";
    if (k == "dev.sentry.log" && access(kAnnotationLogDir, W_OK) != 0 && geteuid() != 0) continue;
    auto b = ParseConfig(
        Config(R"("args":["sh"])", R"("annotations":{")" + k + R"(":")" + valid.at(k) + R"("})"),
        "/bundle");
    ASSERT_TRUE(b.ok()) << k << ": " << b.status();
    EXPECT_EQ(absl::StrJoin(b->notes, "\n").find("not one of sentry's"), std::string::npos) << k;
  }
  EXPECT_EQ(count, static_cast<int>(valid.size()));
}

TEST(OciBundle, RlimitsAboveTheHostsHardLimitAreLoweredAndSaid) {
  rlimit own;
  ASSERT_EQ(getrlimit(RLIMIT_MSGQUEUE, &own), 0);
  if (own.rlim_max == RLIM_INFINITY) GTEST_SKIP() << "RLIMIT_MSGQUEUE is unlimited here";
  std::string asked = std::to_string(own.rlim_max + 1);
  auto b = ParseConfig(Config(R"("args":["sh"],"rlimits":[{"type":"RLIMIT_MSGQUEUE","soft":)" +
                              asked + R"(,"hard":)" + asked + "}]"),
                       "/bundle");
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ(b->run.rlimits.size(), 1u);
  EXPECT_EQ(b->run.rlimits[0].hard, own.rlim_max);
  EXPECT_EQ(b->run.rlimits[0].soft, own.rlim_max);
  EXPECT_NE(absl::StrJoin(b->notes, "\n").find("RLIMIT_MSGQUEUE " + asked), std::string::npos);
}

TEST(OciBundle, ContainersHaveNoWallClockLimitAndTheirStdin) {
  auto b = ParseConfig(Config(R"("args":["sh"])"), "/bundle");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->run.timeout_sec, 0);
  EXPECT_EQ(b->run.stdin_path, "-");
  EXPECT_FALSE(b->run.copy_script);
  EXPECT_EQ(b->run.uid, 0);  // no user: root, as runc
  EXPECT_TRUE(b->run.root);
}

TEST(OciBundle, SmallBoundFilesAreCopiedAndTheEnginesResolvConfIsNot) {
  char tmpl[] = "/tmp/oci-bundle-test-XXXXXX";
  int fd = mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "10.0.0.1 db\n", 12), 12);
  close(fd);
  std::string mounts = std::string(R"("mounts":[{"destination":"/etc/hosts","type":"bind",)") +
                       R"("source":")" + tmpl + R"(","options":["rbind"]},)" +
                       R"({"destination":"/etc/resolv.conf","type":"bind","source":")" + tmpl +
                       R"("},{"destination":"/data","type":"bind","source":"/usr"},)" +
                       R"({"destination":"/proc","type":"proc","source":"proc"}])";
  auto b = ParseConfig(Config(R"("args":["sh"])", mounts), "/bundle");
  unlink(tmpl);
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ(b->run.engine_files.size(), 1u);
  EXPECT_EQ(b->run.engine_files[0].first, "/etc/hosts");
  EXPECT_EQ(b->run.engine_files[0].second, "10.0.0.1 db\n");
  std::string notes = absl::StrJoin(b->notes, "\n");
  // A directory bind is a mount (rw without "ro", as the engine asks).
  ASSERT_EQ(b->run.mounts.size(), 1u);
  EXPECT_EQ(b->run.mounts[0].host_path, "/usr");
  EXPECT_EQ(b->run.mounts[0].guest_path, "/data");
  EXPECT_EQ(b->run.mounts[0].mode, BindMount::Mode::kReadWrite);
  EXPECT_NE(notes.find("resolv.conf"), std::string::npos) << notes;
}

// A pod's container (containerd's CRI) joins the pod's UTS namespace by
// path and names no hostname: the pod's is the /etc/hostname bound in, and
// the path not joined is said.
TEST(OciBundle, AJoinedUtsNamespaceGivesTheBoundHostname) {
  auto with = [](const std::string& text, const std::string& hostname_field) {
    char tmpl[] = "/tmp/oci-bundle-test-XXXXXX";
    int fd = mkstemp(tmpl);
    EXPECT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    close(fd);
    auto b = ParseConfig(
        Config(R"("args":["sh"])",
               hostname_field + R"("mounts":[{"destination":"/etc/hostname","type":"bind",)" +
                   R"("source":")" + tmpl + R"("}],)" + R"("linux":{"namespaces":[{"type":"uts",)" +
                   R"("path":"/proc/1/ns/uts"}]})"),
        "/bundle");
    unlink(tmpl);
    return b;
  };
  auto pod = with("web-0\n", "");
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->run.hostname, "web-0");
  EXPECT_NE(absl::StrJoin(pod->notes, "\n").find("uts namespace /proc/1/ns/uts is not joined"),
            std::string::npos);
  auto own = with("web-0\n", R"("hostname":"h1",)");
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(own->run.hostname, "h1");
  for (const std::string& bad :
       {std::string("two words\n"), std::string("\n"), std::string("a/b"), std::string(65, 'a')}) {
    auto b = with(bad, "");
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(b->run.hostname, "") << bad;
    EXPECT_NE(absl::StrJoin(b->notes, "\n").find("/etc/hostname"), std::string::npos) << bad;
  }
}

TEST(OciBundle, RefusesWhatItCannotRun) {
  struct Bad {
    std::string config;
    const char* says;
  } bad[] = {
      {"not json", "not valid JSON"},
      {"[1,2]", "not a JSON object"},
      {R"({"process":{"args":["sh"]}})", "root.path"},
      {R"({"root":{"path":"/no/such/dir"},"process":{"args":["sh"]}})", "not a directory"},
      {Config(R"("args":[])"), "process.args"},
      {Config(R"("args":"sh")"), "process.args"},
      {Config(R"("args":[1,2])"), "config.json"},
      {Config(R"("args":["sh"],"cwd":"rel")"), "absolute"},
      {Config(R"("args":["sh"],"user":{"uid":-5})"), "uid"},
      {Config(R"("args":["sh"],"user":{"uid":"root"})"), "config.json"},
      {Config(R"("args":["sh"])", R"("hooks":{"prestart":[{"path":"/bin/true"}]})"), "hooks"},
      {Config(R"("args":["sh"])", R"("annotations":{"dev.sentry.network":"all"})"),
       "none or allow"},
      {Config(R"("args":["sh"])", R"("annotations":{"dev.sentry.network":"allow"})"), "allow-net"},
      {Config(R"("args":["sh"])", R"("annotations":{"dev.sentry.log":"/etc/cron.d/x"})"),
       "file name"},
      {Config(R"("args":["sh"])", R"("annotations":{"dev.sentry.log":"../x"})"), "file name"},
      {Config(R"("args":["sh"],"user":{"uid":0,"additionalGids":[-1]})"), "additionalGids"},
      {Config(R"("args":["sh"],"user":{"uid":0,"additionalGids":"5"})"), "additionalGids"},
      {Config(R"("args":["sh"],"user":{"uid":0,"additionalGids":[)" + ManyGids(33) + "]}"),
       "at most 32"},
      {Config(R"("args":["sh"])",
              R"("linux":{"namespaces":[{"type":"network","path":"/proc/self/ns/mnt"}]})"),
       "not a network namespace"},
      {Config(R"("args":["sh"])",
              R"("linux":{"namespaces":[{"type":"network","path":"/no/such/netns"}]})"),
       "cannot be used"},
  };
  for (const Bad& c : bad) {
    auto b = ParseConfig(c.config, "/bundle");
    ASSERT_FALSE(b.ok()) << c.config;
    EXPECT_NE(b.status().message().find(c.says), std::string::npos)
        << c.config << ": " << b.status();
  }
}

}  // namespace
}  // namespace sentry::oci

namespace sentry::oci {
namespace {

// exec --user NAME: the rootfs's own files, never a host file an image's
// symlink points at.
TEST(OciRootfsUsers, NamesResolveInTheRootfsAndSymlinksStayInside) {
  char tmpl[] = "/tmp/oci-users-test-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string top = tmpl, rootfs = top + "/rootfs";
  ASSERT_EQ(mkdir(rootfs.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((rootfs + "/etc").c_str(), 0755), 0);
  {
    std::ofstream(rootfs + "/etc/passwd")
        << "root:x:0:0::/root:/bin/sh\napp:x:1000:1001::/:/bin/sh\n";
    std::ofstream(rootfs + "/etc/group") << "root:x:0:\nstaff:x:50:\n";
    std::ofstream(top + "/secret") << "evil:x:7:7::/:/bin/sh\n";
  }
  auto app = ResolveUser(rootfs, "app");
  ASSERT_TRUE(app.ok()) << app.status();
  EXPECT_EQ(app->uid, 1000u);
  EXPECT_EQ(app->gid, 1001u);
  auto app_staff = ResolveUser(rootfs, "app:staff");
  ASSERT_TRUE(app_staff.ok()) << app_staff.status();
  EXPECT_EQ(app_staff->gid, 50u);
  auto bare = ResolveUser(rootfs, "1234");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->uid, 1234u);
  EXPECT_FALSE(bare->gid.has_value());  // the process keeps its gid, as before
  auto numbers = ResolveUser(rootfs, "5:6");
  ASSERT_TRUE(numbers.ok());
  EXPECT_EQ(*numbers->gid, 6u);
  for (const char* bad : {"nosuch", "app:nogroup", "", ":", "a:b:c", "4294967295"}) {
    EXPECT_FALSE(ResolveUser(rootfs, bad).ok()) << bad;
  }
  // An image whose etc/passwd leads outside: resolved inside the rootfs (.. stops
  // at its root), so the host file is never read.
  unlink((rootfs + "/etc/passwd").c_str());
  ASSERT_EQ(symlink("../../../../../secret", (rootfs + "/etc/passwd").c_str()), 0);
  EXPECT_FALSE(ResolveUser(rootfs, "evil").ok());
  unlink((rootfs + "/etc/passwd").c_str());
  ASSERT_EQ(symlink((top + "/secret").c_str(), (rootfs + "/etc/passwd").c_str()), 0);
  EXPECT_FALSE(ResolveUser(rootfs, "evil").ok());
  EXPECT_EQ(std::system(("rm -rf " + top).c_str()), 0);
}

}  // namespace
}  // namespace sentry::oci
