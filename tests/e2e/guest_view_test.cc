// What the guest sees: its home and cwd, a root without the host's private
// directories, an empty /tmp, and a clean environment.
#include <gtest/gtest.h>

#include <string>

#include "tests/e2e/e2e_util.h"

namespace sentry::testing {
namespace {

constexpr const char* kViewScript = R"(import os, socket
print("cwd=" + os.getcwd())
print("home=" + os.environ.get("HOME", "") + " " + os.path.expanduser("~"))
print("user=" + os.environ.get("USER", ""))
print("ids=%d %d" % (os.getuid(), os.getgid()))
print("env=" + ",".join(sorted(os.environ)))
print("lang=" + os.environ.get("LANG", "") + " " + os.environ.get("LC_ALL", ""))
print("root=" + ",".join(sorted(os.listdir("/"))))
try:
    os.listdir("/root"); print("root_dir=listable")
except PermissionError as e:
    print("root_dir=EACCES")
print("tmp=" + ",".join(os.listdir("/tmp")))
print("var_tmp=" + ",".join(os.listdir("/var/tmp")))
print("secret=" + os.environ.get("FOO_SECRET", "<unset>"))
print("hostname=" + socket.gethostname())
print("shadow=" + str(os.path.exists("/etc/shadow")))
print("a=" + os.environ.get("A", "<unset>"))
print("k=" + os.environ.get("K", "<unset>"))
)";

TEST(GuestViewTest, HomeRootTmpAndEnvironment) {
  TempDir host_tmp_marker;  // the host's /tmp is not empty
  host_tmp_marker.Write("marker", "x");
  ProcessResult r = SentryIn("/", {}, {"/usr/bin/python3", "-c", kViewScript}, {"FOO_SECRET=1"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  auto kv = KeyValues(r.out);
  EXPECT_EQ(kv["cwd"], "/home/sandbox");
  EXPECT_EQ(kv["home"], "/home/sandbox /home/sandbox");
  EXPECT_EQ(kv["user"], "sandbox");
  EXPECT_EQ(kv["ids"], "1000 1000");
  EXPECT_EQ(kv["env"], "HOME,HOSTNAME,LANG,LC_ALL,LOGNAME,PATH,TMPDIR,USER");
  EXPECT_EQ(kv["lang"], "C.UTF-8 C.UTF-8");
  EXPECT_EQ(kv["secret"], "<unset>");
  std::string root = "," + kv["root"] + ",";
  EXPECT_EQ(root.find(",work,"), std::string::npos) << root;
  EXPECT_NE(root.find(",usr,"), std::string::npos) << root;
  EXPECT_NE(root.find(",tmp,"), std::string::npos) << root;
  EXPECT_NE(root.find(",home,"), std::string::npos) << root;
  EXPECT_EQ(kv["root_dir"], "EACCES");
  EXPECT_EQ(kv["tmp"], "");
  EXPECT_EQ(kv["var_tmp"], "");
  EXPECT_EQ(kv["hostname"], "sandbox");
  EXPECT_EQ(kv["shadow"], "False");
}

// What psutil's Process() and loky's workers (scikit-learn's n_jobs) read of
// a process's own /proc directory: statm, limits, io, smaps_rollup, environ
// (0400, the process's own), and a stopped child's state as "stopped", not
// the sentry's tracing stop.
TEST(GuestViewTest, ProcOfItsOwnProcessAsPsutilReadsIt) {
  const std::string script = R"py(import os, signal, subprocess, time
me = "/proc/self/"
print("statm", len(open(me + "statm").read().split()))
print("limits", open(me + "limits").readline().split()[0])
print("io", "rchar" in open(me + "io").read())
print("rollup", "Rss:" in open(me + "smaps_rollup").read())
print("environ", b"HOME=" in open(me + "environ", "rb").read())
st = os.stat(me + "environ")
print("owner", st.st_uid == os.getuid(), oct(st.st_mode & 0o777))
child = subprocess.Popen(["sleep", "9"])
os.kill(child.pid, signal.SIGSTOP)
os.waitpid(child.pid, os.WUNTRACED)
state = [l for l in open("/proc/%d/status" % child.pid) if l.startswith("State:")][0]
print("state", state.split(None, 1)[1].strip())
print("stat", open("/proc/%d/stat" % child.pid).read().rsplit(")", 1)[1].split()[0])
child.kill()
child.wait()
try:
    import psutil
except ImportError:
    print("psutil", True)
else:
    p = psutil.Process()
    print("psutil", p.memory_info().rss > 0 and p.memory_full_info().uss > 0)
)py";
  ProcessResult native = NativeScript(script);
  ASSERT_EQ(native.exit_code, 0) << Describe(native);
  ProcessResult r = SandboxScript(script);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, native.out) << r.err;
  EXPECT_NE(r.out.find("state T (stopped)\nstat T\n"), std::string::npos) << r.out;
}

TEST(GuestViewTest, EnvFlagAddsVariables) {
  ProcessResult r = SentryIn("/", {"--env", "A=B", "--env", "K=with=equals"},
                             {"/usr/bin/python3", "-c", kViewScript});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  auto kv = KeyValues(r.out);
  EXPECT_EQ(kv["a"], "B");
  EXPECT_EQ(kv["k"], "with=equals");
  EXPECT_EQ(kv["env"], "A,HOME,HOSTNAME,K,LANG,LC_ALL,LOGNAME,PATH,TMPDIR,USER");
}

// --env K=V, or docker's --env K (the caller's K, if set); a value without a
// name is an error.
TEST(GuestViewTest, EnvFlagNeedsAName) {
  ProcessResult r = RunSentry({"--env", "=NONAME"}, {"/bin/true"});
  EXPECT_EQ(r.exit_code, 125) << Describe(r);
  EXPECT_NE(r.err.find("--env"), std::string::npos) << r.err;
}

TEST(GuestViewTest, RootFlagMakesTheGuestUidZero) {
  ProcessResult r = SentryIn("/", {"--root"}, {"/usr/bin/python3", "-c", kViewScript});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  auto kv = KeyValues(r.out);
  EXPECT_EQ(kv["ids"], "0 0");
  EXPECT_EQ(kv["user"], "root");
  EXPECT_EQ(kv["root_dir"], "listable");
  EXPECT_EQ(kv["tmp"], "");
}

TEST(GuestViewTest, FilesWrittenInOneRunAreGoneInTheNext) {
  ProcessResult first =
      RunSentry({}, {"/bin/sh", "-c", "echo left > /tmp/left && echo home > ~/left && ls /tmp ~"});
  ASSERT_EQ(first.exit_code, 0) << Describe(first);
  EXPECT_NE(first.out.find("left"), std::string::npos);
  ProcessResult second = RunSentry({}, {"/bin/sh", "-c", "ls -A /tmp ~; echo end"});
  ASSERT_EQ(second.exit_code, 0) << Describe(second);
  EXPECT_EQ(second.out.find("left"), std::string::npos) << second.out;
}

TEST(GuestViewTest, NetworkIsLoopbackOnly) {
  ProcessResult r = RunSentry({"--timeout", "10"},
                              {"/usr/bin/python3", "-c",
                               "import socket, threading\n"
                               "try:\n"
                               "    socket.create_connection(('1.1.1.1', 80), timeout=2)\n"
                               "    print('reached the outside')\n"
                               "except OSError as e:\n"
                               "    print('outside', e.errno)\n"
                               "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
                               "def serve():\n"
                               "    c, _ = s.accept(); c.sendall(c.recv(100).upper()); c.close()\n"
                               "t = threading.Thread(target=serve); t.start()\n"
                               "c = socket.create_connection(s.getsockname())\n"
                               "c.sendall(b'ping'); print(c.recv(100)); t.join()\n"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "outside 101\nb'PING'\n");  // ENETUNREACH
}

}  // namespace
}  // namespace sentry::testing
