// The runtime's own command line, driven as containerd's runc v2 shim drives
// it: create (the monitor stopped before the guest), start, state, kill,
// delete, the pid file's process and its exit status, unknown ids, the lock.
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "gtest/gtest.h"
#include "tests/oci/oci_util.h"

namespace sentry::testing {
namespace {

class OciCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // The monitor a create leaves is re-parented here, as to conmon or the shim.
    prctl(PR_SET_CHILD_SUBREAPER, 1);
  }
  void SetUp() override {
    std::string why;
    rootfs_ = TestRootfs(&why);
    ASSERT_FALSE(rootfs_.empty()) << why;
    root_ = dir_.path() + "/state";
    log_ = dir_.path() + "/log.json";
  }
  std::vector<std::string> Argv(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {SentryBinary(), "--root",       root_, "--log",
                                     log_,           "--log-format", "json"};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  ProcessResult Sentry(const std::vector<std::string>& args) {
    return RunProcess(Argv(args), "", 60);
  }
  std::string Bundle(const std::string& name, const std::vector<std::string>& args,
                     const std::string& extra_process = "", const std::string& extra_top = "") {
    std::string b = dir_.path() + "/" + name;
    WriteBundle(b, rootfs_, args, extra_process, extra_top);
    return b;
  }
  // create as the shim runs it; the container's stdout and stderr go to files.
  int Create(const std::string& id, const std::string& bundle) {
    return SpawnToFiles(Argv({"create", "--bundle", bundle, "--pid-file", PidFile(id), id}),
                        Out(id), Err(id));
  }
  pid_t Pid(const std::string& id) { return atoi(ReadFile(PidFile(id)).c_str()); }
  std::string Status(const std::string& id) {
    ProcessResult r = Sentry({"state", id});
    if (r.exit_code != 0) return "error: " + r.err;
    return nlohmann::json::parse(r.out).value("status", "");
  }
  std::string PidFile(const std::string& id) { return dir_.path() + "/" + id + ".pid"; }
  std::string Out(const std::string& id) { return dir_.path() + "/" + id + ".out"; }
  std::string Err(const std::string& id) { return dir_.path() + "/" + id + ".err"; }

  ScratchDir dir_;
  std::string rootfs_, root_, log_;
};

TEST_F(OciCli, CreateStopsBeforeTheProcessAndThePidExitsWithItsStatus) {
  std::string b = Bundle("b", {"sh", "-c", "echo ran; exit 3"});
  ASSERT_EQ(Create("c1", b), 0) << ReadFile(Err("c1")) << ReadFile(log_);
  pid_t pid = Pid("c1");
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(Alive(pid));
  EXPECT_EQ(Status("c1"), "created");
  ProcessResult state = Sentry({"state", "c1"});
  auto j = nlohmann::json::parse(state.out);
  EXPECT_EQ(j["id"], "c1");
  EXPECT_EQ(j["pid"], pid);
  EXPECT_EQ(j["bundle"], b);
  usleep(200 * 1000);
  EXPECT_EQ(ReadFile(Out("c1")), "");  // nothing ran before start
  ProcessResult start = Sentry({"start", "c1"});
  ASSERT_EQ(start.exit_code, 0) << start.err;
  EXPECT_EQ(WaitExit(pid, 30), 3);
  EXPECT_EQ(ReadFile(Out("c1")), "ran\n");
  EXPECT_EQ(Status("c1"), "stopped");
  EXPECT_NE(Sentry({"start", "c1"}).exit_code, 0);
  ProcessResult del = Sentry({"delete", "c1"});
  EXPECT_EQ(del.exit_code, 0) << del.err;
  EXPECT_NE(Status("c1").find("c1 does not exist"), std::string::npos);
  EXPECT_NE(access((root_ + "/c1").c_str(), F_OK), 0);
}

TEST_F(OciCli, KillTakesNumericAndNamedSignalsAndReachesTheWholeContainer) {
  std::string b = Bundle("b", {"sleep", "100"});
  struct Case {
    std::vector<std::string> kill;
    int code;
  } cases[] = {{{"kill", "k1"}, 143},
               {{"kill", "k2", "KILL"}, 137},
               {{"kill", "k3", "9"}, 137},
               {{"kill", "k4", "SIGINT"}, 130}};
  for (const Case& c : cases) {
    const std::string& id = c.kill[1];
    ASSERT_EQ(Create(id, b), 0) << ReadFile(Err(id)) << ReadFile(log_);
    ASSERT_EQ(Sentry({"start", id}).exit_code, 0);
    EXPECT_EQ(Status(id), "running");
    ProcessResult k = Sentry(c.kill);
    EXPECT_EQ(k.exit_code, 0) << k.err;
    EXPECT_EQ(WaitExit(Pid(id), 30), c.code) << id;
    EXPECT_EQ(Sentry({"delete", id}).exit_code, 0);
  }
  // --all: a shell and the children it waits for.
  std::string b2 = Bundle("b2", {"sh", "-c", "sleep 100 & sleep 100 & wait"});
  ASSERT_EQ(Create("k5", b2), 0) << ReadFile(log_);
  ASSERT_EQ(Sentry({"start", "k5"}).exit_code, 0);
  usleep(300 * 1000);
  ProcessResult ps = Sentry({"ps", "--format", "json", "k5"});
  ASSERT_EQ(ps.exit_code, 0) << ps.err;
  std::vector<pid_t> pids = nlohmann::json::parse(ps.out).get<std::vector<pid_t>>();
  EXPECT_EQ(pids.size(), 3u) << ps.out;
  EXPECT_EQ(Sentry({"kill", "--all", "k5", "TERM"}).exit_code, 0);
  EXPECT_EQ(WaitExit(Pid("k5"), 30), 143);
  for (pid_t p : pids) EXPECT_FALSE(Alive(p)) << p;
  EXPECT_EQ(Sentry({"delete", "k5"}).exit_code, 0);
}

TEST_F(OciCli, KillBeforeStartEndsTheContainerUnrun) {
  std::string b = Bundle("b", {"sh", "-c", "echo ran"});
  ASSERT_EQ(Create("u1", b), 0) << ReadFile(log_);
  EXPECT_EQ(Sentry({"kill", "u1", "KILL"}).exit_code, 0);
  EXPECT_EQ(WaitExit(Pid("u1"), 30), 137);
  EXPECT_EQ(ReadFile(Out("u1")), "");
  EXPECT_EQ(Status("u1"), "stopped");
  EXPECT_EQ(Sentry({"delete", "u1"}).exit_code, 0);
}

TEST_F(OciCli, DeleteForceLeavesNoProcessCgroupOrState) {
  std::string b = Bundle("b", {"sh", "-c", "sleep 100 & sleep 100"});
  ASSERT_EQ(Create("d1", b), 0) << ReadFile(log_);
  pid_t monitor = Pid("d1");
  ASSERT_EQ(Sentry({"start", "d1"}).exit_code, 0);
  usleep(200 * 1000);
  ProcessResult del = Sentry({"delete", "d1"});
  EXPECT_NE(del.exit_code, 0);
  EXPECT_NE(del.err.find("not stopped"), std::string::npos) << del.err;
  std::vector<pid_t> pids =
      nlohmann::json::parse(Sentry({"ps", "--format", "json", "d1"}).out).get<std::vector<pid_t>>();
  ASSERT_FALSE(pids.empty());
  ProcessResult force = Sentry({"delete", "--force", "d1"});
  EXPECT_EQ(force.exit_code, 0) << force.err;
  EXPECT_FALSE(Alive(monitor));
  EXPECT_EQ(WaitExit(monitor, 5), 137);
  for (pid_t p : pids) EXPECT_FALSE(Alive(p)) << p;
  EXPECT_TRUE(ProcessesWith(root_).empty());
  EXPECT_NE(access((root_ + "/d1").c_str(), F_OK), 0);
  EXPECT_EQ(CgroupsNamed("sentry-" + std::to_string(monitor)), std::vector<std::string>{});
}

TEST_F(OciCli, AnUnknownIdIsAnErrorNamingIt) {
  for (const char* verb : {"state", "start", "kill", "delete", "ps"}) {
    ProcessResult r = Sentry({verb, "nosuch"});
    EXPECT_NE(r.exit_code, 0) << verb;
    EXPECT_NE(r.err.find("nosuch"), std::string::npos) << verb << ": " << r.err;
  }
  // As runc: --force makes a missing container no error (engines rely on it).
  EXPECT_EQ(Sentry({"delete", "--force", "nosuch"}).exit_code, 0);
  EXPECT_NE(Sentry({"state", "../x"}).exit_code, 0);
}

TEST_F(OciCli, AFailedCreateLeavesNoProcessAndLogsItsError) {
  std::string b = Bundle("b", {"/no/such/program"});
  EXPECT_NE(Create("f1", b), 0);
  std::string log = ReadFile(log_);
  ASSERT_FALSE(log.empty());
  std::string last = log.substr(log.rfind('\n', log.size() - 2) + 1);
  auto j = nlohmann::json::parse(last);
  EXPECT_EQ(j["level"], "error");
  EXPECT_NE(j["msg"].get<std::string>().find("/no/such/program"), std::string::npos) << last;
  EXPECT_TRUE(j.contains("time"));
  EXPECT_TRUE(ProcessesWith(root_).empty());
  EXPECT_NE(access((root_ + "/f1").c_str(), F_OK), 0);
  EXPECT_NE(Sentry({"state", "f1"}).exit_code, 0);
  // Hooks would run on the host: refused, with the reason.
  std::string h = Bundle("h", {"true"}, "",
                         R"("hooks":{"prestart":[{"path":"/bin/touch","args":["touch","/x"]}]})");
  EXPECT_NE(Create("f2", h), 0);
  EXPECT_NE(ReadFile(log_).find("hooks"), std::string::npos);
  EXPECT_TRUE(ProcessesWith(root_).empty());
}

TEST_F(OciCli, CommandsOnOneIdAreSerialized) {
  std::string b = Bundle("b", {"sleep", "100"});
  ASSERT_EQ(Create("l1", b), 0) << ReadFile(log_);
  int fd = open((root_ + "/l1").c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(flock(fd, LOCK_EX), 0);
  ProcessResult del;
  std::thread t([&] { del = Sentry({"delete", "--force", "l1"}); });
  usleep(400 * 1000);
  EXPECT_TRUE(Alive(Pid("l1")));  // the delete waits for the lock
  flock(fd, LOCK_UN);
  close(fd);
  t.join();
  EXPECT_EQ(del.exit_code, 0) << del.err;
  EXPECT_EQ(WaitExit(Pid("l1"), 10), 137);
}

TEST_F(OciCli, ConfigSetsUserEnvCwdHostnameAndAnnotations) {
  std::string b =
      Bundle("b", {"sh", "-c", "id -u; id -g; echo $FOO; pwd; hostname; touch /scratch/tmp/f"},
             R"("user":{"uid":1000,"gid":1000},"env":["PATH=/usr/bin","FOO=bar"],)"
             R"("cwd":"/home/sandbox","oomScoreAdj":100)",
             R"("hostname":"box","mounts":[{"destination":"/scratch/tmp",)"
             R"("type":"tmpfs","source":"tmpfs"}])");
  ASSERT_EQ(Create("m1", b), 0) << ReadFile(log_);
  ASSERT_EQ(Sentry({"start", "m1"}).exit_code, 0);
  EXPECT_EQ(WaitExit(Pid("m1"), 30), 0);
  EXPECT_EQ(ReadFile(Out("m1")), "1000\n1000\nbar\n/home/sandbox\nbox\n") << ReadFile(Err("m1"));
  EXPECT_EQ(Sentry({"delete", "m1"}).exit_code, 0);
  // dev.sentry.timeout: the options an engine cannot pass as flags.
  std::string t = Bundle("t", {"sleep", "100"}, "", R"("annotations":{"dev.sentry.timeout":"1"})");
  ASSERT_EQ(Create("m2", t), 0) << ReadFile(log_);
  ASSERT_EQ(Sentry({"start", "m2"}).exit_code, 0);
  EXPECT_EQ(WaitExit(Pid("m2"), 30), 124);
  EXPECT_EQ(Sentry({"delete", "m2"}).exit_code, 0);
  // What sentry does not honour is said in the log, not dropped.
  EXPECT_NE(ReadFile(log_).find("not honoured"), std::string::npos);
}

// sentry's own options as annotations, each taking effect: network=none
// clears an allowlist (only lo, a listed address refused at once, said in
// the result), max-output caps each stream the engine gets, trace writes the
// trapped calls to the container's stderr, log appends the run's JSON line
// in /var/log/sentry, disk-mb caps the in-memory writes (ENOSPC).
TEST_F(OciCli, AnnotationsTakeEffect) {
  std::string log_name = "oci-cli-test-" + std::to_string(getpid()) + ".log";
  std::string run_log = "/var/log/sentry/" + log_name;
  std::string b =
      Bundle("b",
             {"python3", "-c",
              "import socket, sys\n"
              "print([n for _, n in socket.if_nameindex()])\n"
              "try:\n"
              "    socket.create_connection(('10.1.2.3', 80), timeout=5)\n"
              "except OSError as e:\n"
              "    print('connect', e.errno)\n"
              "try:\n"
              "    open('/tmp/big', 'wb').write(b'0' * 3000000)\n"
              "except OSError as e:\n"
              "    print('disk', e.errno)\n"
              "sys.stdout.flush()\n"
              "sys.stdout.write('x' * 1000)\n"},
             "",
             R"("annotations":{"dev.sentry.network":"none","dev.sentry.allow-net":"10.1.2.3:80",)"
             R"("dev.sentry.unsafe-allow-private-address":"true","dev.sentry.max-output":"100",)"
             R"("dev.sentry.trace":"true","dev.sentry.log":")" +
                 log_name + R"(","dev.sentry.disk-mb":"1"})");
  ASSERT_EQ(Create("a1", b), 0) << ReadFile(log_);
  ASSERT_EQ(Sentry({"start", "a1"}).exit_code, 0);
  EXPECT_EQ(WaitExit(Pid("a1"), 30), 0) << ReadFile(Err("a1"));
  std::string out = ReadFile(Out("a1"));
  const std::string head = "['lo']\nconnect 101\ndisk 28\n";  // ENETUNREACH, ENOSPC
  EXPECT_EQ(out.substr(0, head.size()), head) << out;
  // 100 bytes passed on, the rest dropped and counted.
  EXPECT_NE(out.find(std::string(100 - head.size(), 'x') + "\n[... " +
                     std::to_string(1000 - (100 - head.size())) + " bytes dropped by sentry"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find(std::string(101 - head.size(), 'x')), std::string::npos) << out;
  // The trace: the connect and its denial.
  std::string err = ReadFile(Err("a1"));
  EXPECT_NE(err.find("connect("), std::string::npos) << err.substr(0, 2000);
  EXPECT_NE(err.find("ENETUNREACH"), std::string::npos) << err.substr(0, 2000);
  std::string line = ReadFile(run_log);
  unlink(run_log.c_str());
  auto j = nlohmann::json::parse(line, nullptr, false);
  ASSERT_TRUE(j.is_object()) << line;
  EXPECT_EQ(j["limits"]["diskBytes"], 1 << 20);
  EXPECT_EQ(j["limits"]["maxOutputBytes"], 100);
  ASSERT_EQ(j["result"]["denied"].size(), 1u) << line;
  EXPECT_EQ(j["result"]["denied"][0]["syscall"], "connect");
  EXPECT_EQ(Sentry({"delete", "a1"}).exit_code, 0);
}

TEST_F(OciCli, WritesNeverReachTheRootfs) {
  std::string b = Bundle("b", {"sh", "-c",
                               "echo x > /etc/oci-new && cat /etc/oci-new && "
                               "rm /usr/bin/true && echo > /etc/passwd && echo ok"});
  ASSERT_EQ(Create("w1", b), 0) << ReadFile(log_);
  ASSERT_EQ(Sentry({"start", "w1"}).exit_code, 0);
  EXPECT_EQ(WaitExit(Pid("w1"), 30), 0) << ReadFile(Err("w1"));
  EXPECT_EQ(ReadFile(Out("w1")), "x\nok\n");
  EXPECT_NE(access((rootfs_ + "/etc/oci-new").c_str(), F_OK), 0);
  EXPECT_EQ(access((rootfs_ + "/usr/bin/true").c_str(), F_OK), 0);
  EXPECT_NE(ReadFile(rootfs_ + "/etc/passwd").find("sandbox"), std::string::npos);
  EXPECT_EQ(Sentry({"delete", "w1"}).exit_code, 0);
}

// config.json's directory binds (podman -v HOST:/data[:ro]): rw writes
// reach the host directory, ro refuses them with EROFS.
TEST_F(OciCli, DirectoryBindsWriteThroughOrAreReadOnly) {
  std::string rw = dir_.path() + "/rw-host";
  std::string ro = dir_.path() + "/ro-host";
  mkdir(rw.c_str(), 0777);
  mkdir(ro.c_str(), 0777);
  chmod(rw.c_str(), 0777);
  chmod(ro.c_str(), 0777);
  std::string b =
      Bundle("b",
             {"sh", "-c",
              "echo out > /data/new.txt && mkdir /data/d && cat /data/new.txt && "
              "(echo x > /ro/x.txt || echo refused) 2>/dev/null"},
             R"("user":{"uid":1000,"gid":1000})",
             R"("mounts":[{"destination":"/data","type":"bind","source":")" + rw +
                 R"(","options":["rbind","rw"]},{"destination":"/ro","type":"bind","source":")" +
                 ro + R"(","options":["rbind","ro"]}])");
  ProcessResult r = Sentry({"run", "--bundle", b, "v1"});
  EXPECT_EQ(r.exit_code, 0) << r.err << ReadFile(log_);
  EXPECT_EQ(r.out, "out\nrefused\n");
  EXPECT_EQ(ReadFile(rw + "/new.txt"), "out\n");
  struct stat st;
  EXPECT_EQ(stat((rw + "/d").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_uid, 1000u);  // process.user, as the host sees it
  EXPECT_NE(access((ro + "/x.txt").c_str(), F_OK), 0);
}

TEST_F(OciCli, TerminalGoesToTheConsoleSocket) {
  std::string sock_path = dir_.path() + "/console.sock";
  int ls = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", sock_path.c_str());
  ASSERT_EQ(bind(ls, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(ls, 1), 0);
  int master = -1;
  std::thread t([&] { master = ReceiveOneFd(ls); });
  std::string b = Bundle("b", {"sh", "-c", "test -t 0 && test -t 1 && test -t 2 && echo tty-yes"},
                         R"("terminal":true)");
  int rc = SpawnToFiles(Argv({"create", "--bundle", b, "--console-socket", sock_path, "--pid-file",
                              PidFile("t1"), "t1"}),
                        Out("t1"), Err("t1"));
  t.join();
  close(ls);
  ASSERT_EQ(rc, 0) << ReadFile(log_);
  ASSERT_GE(master, 0);
  ASSERT_EQ(Sentry({"start", "t1"}).exit_code, 0);
  EXPECT_EQ(WaitExit(Pid("t1"), 30), 0);
  std::string got;
  char buf[256];
  fcntl(master, F_SETFL, O_NONBLOCK);
  ssize_t n;
  while ((n = read(master, buf, sizeof(buf))) > 0) got.append(buf, n);
  close(master);
  EXPECT_NE(got.find("tty-yes"), std::string::npos) << got;
  EXPECT_EQ(Sentry({"delete", "t1"}).exit_code, 0);
}

TEST_F(OciCli, RunInTheForegroundReturnsTheStatusAndLeavesNoState) {
  std::string b = Bundle("b", {"sh", "-c", "echo hi; exit 4"});
  ProcessResult r = Sentry({"run", "--bundle", b, "r1"});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_EQ(r.out, "hi\n");
  EXPECT_NE(Sentry({"state", "r1"}).exit_code, 0);
  // runc's flags tell runc's run from sentry's own, without global flags too.
  ProcessResult plain =
      RunProcess({SentryBinary(), "run", "-b", b, "--pid-file", dir_.path() + "/r2.pid", "r2"});
  EXPECT_EQ(plain.exit_code, 4) << plain.err;
  EXPECT_EQ(plain.out, "hi\n");
}

// --preserve-fds N: the caller's fds 3..3+N-1 are the guest's own 3..3+N-1,
// the objects themselves (systemd's socket activation): a pipe the guest
// writes reaches the caller, a listening socket accepts. exec takes them too.
TEST_F(OciCli, PreservedFdsAreTheGuestsOwn) {
  int pipe_fds[2], exec_pipe[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(exec_pipe, O_CLOEXEC), 0);
  int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(bind(ls, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(ls, 1), 0);
  ASSERT_EQ(getsockname(ls, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  std::string b = Bundle("b", {"python3", "-c",
                               "import os, socket, time\n"
                               "os.write(3, b'via-fd3\\n')\n"
                               "c, _ = socket.socket(fileno=4).accept()\n"
                               "c.sendall(b'accepted')\n"
                               "c.close()\n"
                               "time.sleep(100)\n"});
  int rc = SpawnToFiles(
      Argv({"create", "--preserve-fds", "2", "--bundle", b, "--pid-file", PidFile("p1"), "p1"}),
      Out("p1"), Err("p1"), {pipe_fds[1], ls});
  close(pipe_fds[1]);
  close(ls);
  ASSERT_EQ(rc, 0) << ReadFile(Err("p1")) << ReadFile(log_);
  ASSERT_EQ(Sentry({"start", "p1"}).exit_code, 0);
  char buf[64] = {};
  EXPECT_EQ(read(pipe_fds[0], buf, sizeof(buf) - 1), 8);
  EXPECT_STREQ(buf, "via-fd3\n");
  close(pipe_fds[0]);
  int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  std::string got;
  ssize_t n;
  while ((n = read(c, buf, sizeof(buf))) > 0) got.append(buf, n);
  close(c);
  EXPECT_EQ(got, "accepted") << ReadFile(Err("p1"));
  // exec --preserve-fds: the same for a second process.
  rc = SpawnToFiles(Argv({"exec", "--preserve-fds", "1", "p1", "sh", "-c", "echo via-exec >&3"}),
                    Out("p1-exec"), Err("p1-exec"), {exec_pipe[1]});
  close(exec_pipe[1]);
  EXPECT_EQ(rc, 0) << ReadFile(Err("p1-exec")) << ReadFile(log_);
  std::string from_exec;
  while ((n = read(exec_pipe[0], buf, sizeof(buf))) > 0) from_exec.append(buf, n);
  close(exec_pipe[0]);
  EXPECT_EQ(from_exec, "via-exec\n");
  EXPECT_EQ(Sentry({"delete", "--force", "p1"}).exit_code, 0);
  // More than the caller holds open: refused, naming the first missing fd.
  EXPECT_NE(SpawnToFiles(Argv({"create", "--preserve-fds", "2", "--bundle", b, "p2"}), Out("p2"),
                         Err("p2"), {0}),
            0);
  EXPECT_NE(ReadFile(log_).find("fd 4 is not open"), std::string::npos) << ReadFile(log_);
  EXPECT_NE(Sentry({"state", "p2"}).exit_code, 0);
}

// The attack on --preserve-fds: an engine hands the guest a host directory
// (by mistake, or a tenant's bind by fd). It is trusted as stdio is, so the
// guest holds it, but no path leads through it: not as a dirfd, not as a cwd,
// not through /proc/self/fd. The host's file is neither read nor added to.
TEST_F(OciCli, APreservedHostDirectoryLeadsNowhere) {
  std::string host_dir = dir_.path() + "/given";
  ASSERT_EQ(mkdir(host_dir.c_str(), 0755), 0);
  {
    std::ofstream f(host_dir + "/secret.txt");
    f << "TOPSECRET\n";
  }
  ASSERT_EQ(chmod((host_dir + "/secret.txt").c_str(), 0644), 0);
  int dirfd = open(host_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dirfd, 0);
  std::string b =
      Bundle("b", {"python3", "-c",
                   "import os\n"
                   "def attempt(name, f):\n"
                   "    try:\n"
                   "        print(name, repr(f()))\n"
                   "    except OSError as e:\n"
                   "        print(name, 'refused', e.errno)\n"
                   "attempt('openat', lambda: os.read(os.open('secret.txt', os.O_RDONLY,"
                   " dir_fd=3), 100))\n"
                   "attempt('proc', lambda: open('/proc/self/fd/3/secret.txt').read())\n"
                   "attempt('create', lambda: os.open('new.txt', os.O_CREAT | os.O_WRONLY,"
                   " 0o644, dir_fd=3))\n"
                   "attempt('fchdir', lambda: (os.chdir(3), open('secret.txt').read()))\n"
                   "attempt('cwd', lambda: os.getcwd())\n"});
  int rc = SpawnToFiles(Argv({"run", "--preserve-fds", "1", "--bundle", b, "d1"}), Out("d1"),
                        Err("d1"), {dirfd});
  close(dirfd);
  std::string out = ReadFile(Out("d1"));
  EXPECT_EQ(rc, 0) << ReadFile(Err("d1")) << ReadFile(log_);
  EXPECT_EQ(out.find("TOPSECRET"), std::string::npos) << out;
  EXPECT_NE(out.find("openat refused"), std::string::npos) << out;
  EXPECT_NE(out.find("proc refused"), std::string::npos) << out;
  EXPECT_NE(out.find("create refused"), std::string::npos) << out;
  EXPECT_NE(out.find("fchdir refused"), std::string::npos) << out;
  EXPECT_NE(access((host_dir + "/new.txt").c_str(), F_OK), 0);
  EXPECT_EQ(ReadFile(host_dir + "/secret.txt"), "TOPSECRET\n");
}

// The global flags and forms an engine may use that change little: each is
// accepted and does what its help says.
TEST_F(OciCli, GlobalFlagsAndSmallForms) {
  std::string b = Bundle("b", {"sleep", "100"});
  std::string text_log = dir_.path() + "/log.txt";
  std::string sock_path = dir_.path() + "/pidfd.sock";
  int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", sock_path.c_str());
  ASSERT_EQ(bind(ls, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(ls, 1), 0);
  int pidfd = -1;
  std::string pidfd_name;
  std::thread t([&] { pidfd = ReceiveOneFd(ls, &pidfd_name); });
  std::vector<std::string> global = {SentryBinary(),     "--root",         root_,          "--log",
                                     text_log,           "--debug",        "--log-format", "text",
                                     "--systemd-cgroup", "--rootless=true"};
  std::vector<std::string> create = global;
  for (const char* a : {"create", "--no-pivot", "--no-new-keyring", "--pidfd-socket"}) {
    create.push_back(a);
  }
  create.insert(create.end(), {sock_path, "--bundle", b, "--pid-file", PidFile("g1"), "g1"});
  int rc = SpawnToFiles(create, Out("g1"), Err("g1"));
  t.join();
  close(ls);
  ASSERT_EQ(rc, 0) << ReadFile(Err("g1")) << ReadFile(text_log);
  std::string log = ReadFile(text_log);
  EXPECT_NE(log.find("level=info msg=\"--systemd-cgroup: sentry makes its own cgroups with "
                     "cgroupfs\""),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("level=debug msg=\"g1: created, monitor " + std::to_string(Pid("g1"))),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find('{'), std::string::npos) << log;  // text, not JSON
  ASSERT_GE(pidfd, 0);
  EXPECT_EQ(pidfd_name, "g1");
  ASSERT_EQ(Sentry({"start", "g1"}).exit_code, 0);
  ProcessResult ps = Sentry({"ps", "--format", "table", "g1"});
  EXPECT_EQ(ps.exit_code, 0) << ps.err;
  EXPECT_EQ(ps.out.rfind("PID         CMD\n", 0), 0u) << ps.out;
  EXPECT_NE(ps.out.find(" sleep 100\n"), std::string::npos) << ps.out;
  // The pidfd is the pid file's process: signalled through it, the container ends.
  EXPECT_EQ(syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0), 0);
  close(pidfd);
  EXPECT_EQ(WaitExit(Pid("g1"), 30), 137);
  EXPECT_EQ(Sentry({"delete", "g1"}).exit_code, 0);
  // A bare --rootless before the verb is taken as true.
  EXPECT_EQ(RunProcess({SentryBinary(), "--root", root_, "--rootless", "list", "-q"}).exit_code, 0);
  // run --detach with the default --root (/run/sentry-oci): back at once,
  // the container running; its directory goes with delete.
  const std::string kDefaultRoot = "/run/sentry-oci";
  bool had_root = access(kDefaultRoot.c_str(), F_OK) == 0;
  std::string id = "sentry-oci-cli-test-" + std::to_string(getpid());
  rc = SpawnToFiles({SentryBinary(), "run", "--detach", "-b", b, "--pid-file", PidFile(id), id},
                    Out(id), Err(id));
  EXPECT_EQ(rc, 0) << ReadFile(Err(id));
  EXPECT_EQ(access((kDefaultRoot + "/" + id).c_str(), F_OK), 0);
  ProcessResult state = RunProcess({SentryBinary(), "state", id});
  EXPECT_EQ(nlohmann::json::parse(state.out, nullptr, false).value("status", ""), "running")
      << state.out << state.err;
  EXPECT_EQ(RunProcess({SentryBinary(), "kill", id, "KILL"}).exit_code, 0);
  EXPECT_EQ(WaitExit(Pid(id), 30), 137);
  EXPECT_EQ(RunProcess({SentryBinary(), "delete", id}).exit_code, 0);
  EXPECT_NE(access((kDefaultRoot + "/" + id).c_str(), F_OK), 0);
  if (!had_root) rmdir(kDefaultRoot.c_str());
}

TEST_F(OciCli, ToolCommands) {
  ProcessResult f = RunProcess({SentryBinary(), "features"});
  ASSERT_EQ(f.exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(f.out)["ociVersionMin"], "1.0.0");
  ProcessResult v = RunProcess({SentryBinary(), "--version"});
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_NE(v.out.find("spec: "), std::string::npos) << v.out;
  std::string sd = dir_.path() + "/spec";
  mkdir(sd.c_str(), 0755);
  EXPECT_EQ(Sentry({"spec", "--bundle", sd}).exit_code, 0);
  auto spec = nlohmann::json::parse(ReadFile(sd + "/config.json"));
  EXPECT_EQ(spec["root"]["path"], "rootfs");
  EXPECT_NE(Sentry({"spec", "--bundle", sd}).exit_code, 0);  // exists
  for (const char* verb : {"pause", "resume", "update", "checkpoint", "restore"}) {
    ProcessResult r = RunProcess({SentryBinary(), verb, "x"});
    EXPECT_NE(r.exit_code, 0) << verb;
    EXPECT_NE(r.err.find("not supported by sentry"), std::string::npos) << verb << r.err;
  }
  std::string b = Bundle("b", {"sleep", "100"});
  ASSERT_EQ(Create("ls1", b), 0);
  ProcessResult list = Sentry({"list", "--format", "json"});
  auto all = nlohmann::json::parse(list.out);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0]["id"], "ls1");
  EXPECT_EQ(all[0]["status"], "created");
  EXPECT_EQ(Sentry({"list", "-q"}).out, "ls1\n");
  EXPECT_EQ(Sentry({"delete", "ls1"}).exit_code, 0);
  EXPECT_EQ(WaitExit(Pid("ls1"), 10), 137);
}

}  // namespace
}  // namespace sentry::testing
