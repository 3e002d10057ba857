// The same bundles through runc and through sentry, each driven as
// containerd's runc v2 shim drives a runtime (create --bundle --pid-file,
// start, state, kill, delete, the pid file's process waited for as its
// parent), and what each gives compared. A bundle is `runc spec`'s, as
// engines write them (namespaces, mounts, capabilities), over the test rootfs.
// What differs by design (README "What differs from runc") is named where it
// is left out of a comparison. Skipped where runc is not installed.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "gtest/gtest.h"
#include "tests/oci/oci_util.h"

namespace sentry::testing {
namespace {

using nlohmann::json;

struct Runtime {
  std::string name;
  std::string binary;
};

// What one runtime made of one container's life.
struct Life {
  std::vector<std::string> statuses;  // `state` after create, after start (if asked), at the end
  std::string out, err;
  int exit_code = -1;
  json created;  // the state JSON after create
  pid_t pid = 0;
};

class RuncCompare : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // The pid file's process is re-parented here, as to the shim.
    prctl(PR_SET_CHILD_SUBREAPER, 1);
  }
  void SetUp() override {
    std::string runc = FirstExecutable({"/usr/sbin/runc", "/usr/bin/runc"});
    if (runc.empty()) SKIP_WITHOUT_ENGINE("runc is not installed: nothing to compare with");
    std::string why;
    rootfs_ = TestRootfs(&why);
    ASSERT_FALSE(rootfs_.empty()) << why;
    runtimes_ = {{"runc", runc}, {"sentry", SentryBinary()}};
  }

  // `runc spec`'s config.json with the test rootfs, args, and edit applied.
  std::string Bundle(const std::string& name, const std::vector<std::string>& args,
                     const std::function<void(json&)>& edit = nullptr) {
    std::string b = dir_.path() + "/" + name;
    mkdir(b.c_str(), 0755);
    ProcessResult spec = RunProcess({runtimes_[0].binary, "spec", "--bundle", b});
    EXPECT_EQ(spec.exit_code, 0) << spec.err;
    json c = json::parse(ReadFile(b + "/config.json"));
    c["root"]["path"] = rootfs_;
    c["process"]["terminal"] = false;
    c["process"]["args"] = args;
    c["process"]["env"] = {"PATH=/usr/bin:/bin", "HOME=/root"};
    if (edit) edit(c);
    std::ofstream(b + "/config.json") << c.dump();
    return b;
  }
  std::vector<std::string> Argv(const Runtime& rt, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {
        rt.binary, "--root", Path(rt, "state"), "--log", Path(rt, "log"), "--log-format", "json"};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  ProcessResult Cmd(const Runtime& rt, const std::vector<std::string>& args) {
    return RunProcess(Argv(rt, args), "", 60);
  }
  std::string Path(const Runtime& rt, const std::string& what) {
    return dir_.path() + "/" + rt.name + "." + what;
  }
  std::string Status(const Runtime& rt, const std::string& id) {
    ProcessResult r = Cmd(rt, {"state", id});
    if (r.exit_code != 0) return "error";
    return json::parse(r.out).value("status", "");
  }
  // create as the shim runs it (stdout and stderr into files); the pid file's pid.
  pid_t Create(const Runtime& rt, const std::string& id, const std::string& bundle) {
    int rc = SpawnToFiles(
        Argv(rt, {"create", "--bundle", bundle, "--pid-file", Path(rt, id + ".pid"), id}),
        Path(rt, id + ".out"), Path(rt, id + ".err"));
    EXPECT_EQ(rc, 0) << rt.name << ": " << ReadFile(Path(rt, id + ".err"))
                     << ReadFile(Path(rt, "log"));
    return rc == 0 ? atoi(ReadFile(Path(rt, id + ".pid")).c_str()) : 0;
  }
  // A container's whole life: create, state, start, (state), the pid's
  // exit, state, delete.
  Life Live(const Runtime& rt, const std::string& id, const std::string& bundle) {
    Life l;
    l.pid = Create(rt, id, bundle);
    if (l.pid <= 0) return l;
    ProcessResult state = Cmd(rt, {"state", id});
    l.created = json::parse(state.out, nullptr, false);
    l.statuses.push_back(l.created.is_object() ? l.created.value("status", "") : state.err);
    EXPECT_EQ(ReadFile(Path(rt, id + ".out")), "") << rt.name << ": ran before start";
    ProcessResult start = Cmd(rt, {"start", id});
    EXPECT_EQ(start.exit_code, 0) << rt.name << ": " << start.err;
    l.exit_code = WaitExit(l.pid, 30);
    l.statuses.push_back(Status(rt, id));
    l.out = ReadFile(Path(rt, id + ".out"));
    l.err = ReadFile(Path(rt, id + ".err"));
    ProcessResult del = Cmd(rt, {"delete", id});
    EXPECT_EQ(del.exit_code, 0) << rt.name << ": " << del.err;
    l.statuses.push_back(Status(rt, id));
    return l;
  }

  ScratchDir dir_;
  std::string rootfs_;
  std::vector<Runtime> runtimes_;
};

TEST_F(RuncCompare, OutputExitCodeProcessFieldsAndState) {
  std::string b = Bundle("b",
                         {"sh", "-c",
                          "echo out; echo err >&2; id -u; id -g; echo \"$FOO\"; pwd; hostname; "
                          "[ -e /proc/self/stat ] && echo proc; exit 3"},
                         [](json& c) {
                           c["process"]["env"] = {"PATH=/usr/bin:/bin", "FOO=a b=c"};
                           c["process"]["cwd"] = "/home/sandbox";
                           c["process"]["user"] = {{"uid", 1000}, {"gid", 1000}};
                           c["hostname"] = "box";
                         });
  std::vector<Life> lives;
  for (const Runtime& rt : runtimes_) lives.push_back(Live(rt, "c1", b));
  const Life& runc = lives[0];
  const Life& sentry = lives[1];
  EXPECT_EQ(runc.out, "out\n1000\n1000\na b=c\n/home/sandbox\nbox\nproc\n");
  EXPECT_EQ(runc.err, "err\n");
  EXPECT_EQ(runc.exit_code, 3);
  EXPECT_EQ(runc.statuses, (std::vector<std::string>{"created", "stopped", "error"}));
  EXPECT_EQ(sentry.out, runc.out);
  EXPECT_EQ(sentry.err, runc.err);
  EXPECT_EQ(sentry.exit_code, runc.exit_code);
  EXPECT_EQ(sentry.statuses, runc.statuses);
  // The state JSON: the same members, id, bundle, rootfs and pid file's pid.
  // By design, not compared: ociVersion is each runtime's own spec version
  // (runc 1.1's "1.0.2-dev"); created is a time; and the pid is sentry's
  // monitor, not the container's process (README: "The pid in the pid file
  // is the monitor's").
  for (const Life& l : lives) {
    ASSERT_TRUE(l.created.is_object());
    EXPECT_EQ(l.created["id"], "c1");
    EXPECT_EQ(l.created["bundle"], b);
    EXPECT_EQ(l.created["rootfs"], rootfs_);
    EXPECT_EQ(l.created["pid"], l.pid);
    EXPECT_EQ(l.created["ociVersion"].get<std::string>().rfind("1.", 0), 0u) << l.created;
  }
  std::vector<std::string> keys[2];
  for (int i = 0; i < 2; ++i) {
    for (auto& [k, v] : lives[i].created.items()) keys[i].push_back(k);
  }
  EXPECT_EQ(keys[1], keys[0]);
}

TEST_F(RuncCompare, SignalsFromKill) {
  // SIGTERM to a process that does not trap it, where that process is not
  // its pid namespace's init (the bundle asks for the engine's pid
  // namespace): both end it, 128+15. (sentry makes a pid namespace of its
  // own whatever the bundle says: not compared here.)
  std::string plain = Bundle("plain", {"sleep", "100"}, [](json& c) {
    json& ns = c["linux"]["namespaces"];
    ns.erase(std::remove_if(ns.begin(), ns.end(), [](const json& n) { return n["type"] == "pid"; }),
             ns.end());
  });
  // A shell that traps it: its handler runs under both.
  std::string trap = Bundle(
      "trap", {"sh", "-c", "trap 'echo got TERM; exit 7' TERM; echo ready; sleep 100 & wait"});
  // The same `sleep` as its pid namespace's init (runc spec's bundle).
  std::string init = Bundle("init", {"sleep", "100"});
  for (const Runtime& rt : runtimes_) {
    SCOPED_TRACE(rt.name);
    pid_t p = Create(rt, "k1", plain);
    ASSERT_GT(p, 0);
    EXPECT_EQ(Status(rt, "k1"), "created");
    ASSERT_EQ(Cmd(rt, {"start", "k1"}).exit_code, 0);
    EXPECT_EQ(Status(rt, "k1"), "running");
    ProcessResult k = Cmd(rt, {"kill", "k1", "TERM"});
    EXPECT_EQ(k.exit_code, 0) << k.err;
    EXPECT_EQ(WaitExit(p, 30), 143);
    EXPECT_EQ(Status(rt, "k1"), "stopped");
    EXPECT_EQ(Cmd(rt, {"delete", "k1"}).exit_code, 0);

    p = Create(rt, "k2", trap);
    ASSERT_GT(p, 0);
    ASSERT_EQ(Cmd(rt, {"start", "k2"}).exit_code, 0);
    for (int i = 0; i < 500 && ReadFile(Path(rt, "k2.out")).empty(); ++i) usleep(10 * 1000);
    usleep(100 * 1000);  // from "ready" to the shell's wait
    EXPECT_EQ(Cmd(rt, {"kill", "k2", "15"}).exit_code, 0);
    EXPECT_EQ(WaitExit(p, 30), 7);
    EXPECT_EQ(ReadFile(Path(rt, "k2.out")), "ready\ngot TERM\n");
    EXPECT_EQ(Cmd(rt, {"delete", "k2"}).exit_code, 0);

    // By design (README "What differs from runc": the container's process
    // is not its pid namespace's init): under runc the kernel drops a
    // signal that init has no handler for, so SIGTERM leaves `sleep`
    // running and only SIGKILL ends it (an engine's stop waits out its
    // timeout); under sentry it ends it as any process, 143.
    p = Create(rt, "k3", init);
    ASSERT_GT(p, 0);
    ASSERT_EQ(Cmd(rt, {"start", "k3"}).exit_code, 0);
    EXPECT_EQ(Cmd(rt, {"kill", "k3", "SIGTERM"}).exit_code, 0);
    if (rt.name == "runc") {
      usleep(300 * 1000);
      EXPECT_TRUE(Alive(p));
      EXPECT_EQ(Status(rt, "k3"), "running");
      EXPECT_EQ(Cmd(rt, {"kill", "k3", "KILL"}).exit_code, 0);
      EXPECT_EQ(WaitExit(p, 30), 137);
    } else {
      EXPECT_EQ(WaitExit(p, 30), 143);
    }
    EXPECT_EQ(Status(rt, "k3"), "stopped");
    EXPECT_EQ(Cmd(rt, {"delete", "k3"}).exit_code, 0);
  }
}

TEST_F(RuncCompare, AnUnknownIdIsAnError) {
  for (const char* verb : {"state", "start", "kill", "delete"}) {
    for (const Runtime& rt : runtimes_) {
      ProcessResult r = Cmd(rt, {verb, "nosuch"});
      EXPECT_NE(r.exit_code, 0) << rt.name << " " << verb;
      // runc says "container does not exist"; sentry names the id too.
      EXPECT_NE(r.err.find("does not exist"), std::string::npos) << rt.name << " " << verb;
      EXPECT_NE(ReadFile(Path(rt, "log")).find("does not exist"), std::string::npos)
          << rt.name << " " << verb;
      std::remove(Path(rt, "log").c_str());
    }
  }
  for (const Runtime& rt : runtimes_) {
    EXPECT_EQ(Cmd(rt, {"delete", "--force", "nosuch"}).exit_code, 0) << rt.name;
  }
}

// The pid file's process dies between create and start (an OOM kill, an
// operator's kill -9): start fails, saying the container has stopped; state
// says stopped; delete leaves nothing.
TEST_F(RuncCompare, AStartAfterThePidDiedFailsAndDeleteLeavesNothing) {
  std::string b = Bundle("b", {"sh", "-c", "echo ran"});
  for (const Runtime& rt : runtimes_) {
    SCOPED_TRACE(rt.name);
    pid_t p = Create(rt, "f1", b);
    ASSERT_GT(p, 0);
    ProcessResult ps = Cmd(rt, {"ps", "--format", "json", "f1"});
    ASSERT_EQ(ps.exit_code, 0) << ps.err;
    std::vector<pid_t> pids = json::parse(ps.out).get<std::vector<pid_t>>();
    ASSERT_FALSE(pids.empty());
    ASSERT_EQ(kill(p, SIGKILL), 0);
    EXPECT_EQ(WaitExit(p, 10), 137);
    ProcessResult start = Cmd(rt, {"start", "f1"});
    EXPECT_NE(start.exit_code, 0);
    std::string log = ReadFile(Path(rt, "log"));
    EXPECT_NE(log.find("stopped"), std::string::npos) << log;
    EXPECT_EQ(Status(rt, "f1"), "stopped");
    ProcessResult del = Cmd(rt, {"delete", "f1"});
    EXPECT_EQ(del.exit_code, 0) << del.err;
    EXPECT_EQ(Status(rt, "f1"), "error");
    EXPECT_EQ(ReadFile(Path(rt, "f1.out")), "");
    for (pid_t q : pids) EXPECT_FALSE(Alive(q)) << q;
    EXPECT_TRUE(ProcessesWith(Path(rt, "state")).empty());
    EXPECT_NE(access((Path(rt, "state") + "/f1").c_str(), F_OK), 0);
    // sentry's sandbox cgroups are named after the monitor (sentry/run/cgroups.cc).
    EXPECT_EQ(CgroupsNamed("sentry-" + std::to_string(p)), std::vector<std::string>{});
  }
}

}  // namespace
}  // namespace sentry::testing
