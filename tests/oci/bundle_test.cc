// config.json onto RunOptions (sentry/oci/bundle.h), without a sandbox: what
// is honoured, what is said in the notes, and malformed configs refused with
// a message (an engine's file, but parsed as untrusted input all the same).
#include "sentry/oci/bundle.h"

#include <unistd.h>

#include "absl/strings/str_join.h"
#include "gtest/gtest.h"

namespace sentry::oci {
namespace {

std::string Config(const std::string& process, const std::string& rest = "") {
  return R"({"ociVersion":"1.0.2","root":{"path":"/"},"process":{)" + process + "}" +
         (rest.empty() ? "" : "," + rest) + "}";
}

TEST(OciBundle, MapsProcessResourcesAndAnnotations) {
  auto b = ParseConfig(
      Config(
          R"("args":["python3","-c","pass"],"env":["A=1"],"cwd":"/work",)"
          R"("user":{"uid":1000,"gid":100,"additionalGids":[5]},)"
          R"("rlimits":[{"type":"RLIMIT_NOFILE","soft":256,"hard":256},)"
          R"({"type":"RLIMIT_CORE","soft":0,"hard":0}],"capabilities":{"bounding":["CAP_KILL"]})",
          R"("hostname":"h1","linux":{"resources":{"memory":{"limit":268435456},)"
          R"("pids":{"limit":64},"cpu":{"quota":50000,"period":100000,"shares":512}},)"
          R"("namespaces":[{"type":"network","path":"/run/netns/x"}],"cgroupsPath":"/a/b"},)"
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
  EXPECT_EQ(o.nofile, 256u);
  EXPECT_EQ(o.hostname, "h1");
  EXPECT_EQ(o.memory_bytes, 256u << 20);
  EXPECT_EQ(o.pids, 64u);
  EXPECT_DOUBLE_EQ(o.cpus, 0.5);
  EXPECT_DOUBLE_EQ(o.timeout_sec, 5);
  ASSERT_EQ(o.net.allow.size(), 1u);
  EXPECT_EQ(b->rootfs, "/");
  EXPECT_EQ(b->annotations.at("other"), "x");
  std::string notes = absl::StrJoin(b->notes, "\n");
  for (const char* said : {"additionalGids", "RLIMIT_CORE", "capabilities", "cpu.shares",
                           "/run/netns/x", "cgroupsPath"}) {
    EXPECT_NE(notes.find(said), std::string::npos) << said << " in:\n" << notes;
  }
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
