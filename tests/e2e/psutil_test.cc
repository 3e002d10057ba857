// What psutil, joblib's loky workers (scikit-learn's n_jobs) and procps
// read of /proc, through the real binary: the same answers as natively for
// the sandbox's own processes, sockets and files.
#include <gtest/gtest.h>

#include <string>

#include "tests/e2e/e2e_util.h"

namespace sentry::testing {
namespace {

// Prints one line per question, each a fact that holds natively for this
// process whatever the host (argv[1] is a scratch directory).
constexpr const char* kPsutilScript =
    R"py(import os, signal, socket, subprocess, sys, time, warnings
# psutil warns when a /proc file it wants is missing
warnings.simplefilter("error", RuntimeWarning)
import psutil
base = sys.argv[1]
me = psutil.Process()
f = open(os.path.join(base, "opened.txt"), "w+")
f.write("0123456789"); f.flush(); f.seek(3)
tcp = socket.socket(); tcp.bind(("127.0.0.1", 0)); tcp.listen()
port = tcp.getsockname()[1]
unix_path = os.path.join(base, "p.sock")
unix = socket.socket(socket.AF_UNIX); unix.bind(unix_path); unix.listen()
child = subprocess.Popen(["sleep", "30"])
m = me.memory_info()
print("memory_info", m.rss > 0 and m.vms >= m.rss)
full = me.memory_full_info()
print("memory_full_info", full.uss > 0 and full.pss > 0)
io = me.io_counters()
print("io_counters", io.read_chars > 0 and io.read_count > 0)
print("num_fds", me.num_fds() == len(os.listdir("/proc/self/fd")))
files = [o for o in me.open_files() if o.path == f.name]
print("open_files", [(o.fd == f.fileno(), o.position, o.mode) for o in files])
conns = [c for c in me.connections("inet") if c.laddr and c.laddr.port == port]
print("connections", [(c.status, c.laddr.ip) for c in conns])
print("status", me.status())
print("cpu_times", me.cpu_times().user >= 0)
print("create_time", abs(me.create_time() - time.time()) < 60)
print("children", [c.pid for c in me.children()] == [child.pid])
c = psutil.Process(child.pid)
for _ in range(100):
    if c.status() == "sleeping": break
    time.sleep(0.01)
print("child", c.status(), c.name(), c.ppid() == os.getpid())
os.kill(child.pid, signal.SIGSTOP)
os.waitpid(child.pid, os.WUNTRACED)
print("stopped", c.status())
os.kill(child.pid, signal.SIGCONT)
child.kill(); child.wait()
net = psutil.net_connections("inet")
print("net_connections", [(x.status, x.pid == os.getpid()) for x in net
                          if x.laddr and x.laddr.port == port])
print("net_unix", [x.pid == os.getpid() for x in psutil.net_connections("unix")
                   if x.laddr == unix_path])
v = psutil.virtual_memory()
print("virtual_memory", v.total > 0 and 0 < v.available <= v.total)
s = psutil.swap_memory()
print("swap_memory", s.total >= 0 and s.sin >= 0)
print("disk_io_counters", psutil.disk_io_counters() is not None)
print("net_io_counters", psutil.net_io_counters(pernic=True).get("lo") is not None)
print("boot_time", psutil.boot_time() <= time.time())
print("cpu_times_percent", psutil.cpu_times().idle >= 0)
print("pids", os.getpid() in psutil.pids())
)py";

TEST(PsutilTest, ProcessAndSystemCallsAnswerAsNatively) {
  ProcessResult native = NativeScript(kPsutilScript);
  ASSERT_EQ(native.exit_code, 0) << Describe(native);
  ProcessResult r = SandboxScript(kPsutilScript, {"--timeout", "30"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, native.out) << r.err;
  EXPECT_NE(r.out.find("open_files [(True, 3, 'r+')]\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("connections [('LISTEN', '127.0.0.1')]\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("status running\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stopped stopped\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "");
}

// joblib's default backend (loky) starts workers that read /proc/self/statm
// at once (psutil's memory_info), so n_jobs > 1 failed in every worker.
TEST(PsutilTest, JoblibWithLokyWorkers) {
  ProcessResult r = SandboxScript(R"py(from joblib import Parallel, delayed
print(Parallel(n_jobs=2)(delayed(abs)(-i) for i in range(4)))
)py",
                                  {"--timeout", "60"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "[0, 1, 2, 3]\n") << r.err;
}

// procps: vmstat failed ("Unable to create vmstat structure"); each now
// prints its table, and ps and top list the sandbox's processes by their
// sandbox pids.
TEST(PsutilTest, ProcpsToolsRun) {
  ProcessResult r = SandboxScript(R"py(import subprocess
for cmd in (["vmstat"], ["free"], ["ps", "-eo", "pid,stat,comm"], ["top", "-bn1"]):
    p = subprocess.run(cmd, capture_output=True, text=True)
    print(cmd[0], p.returncode, repr(p.stderr))
    if cmd[0] == "ps":
        # (comm: natively "python3", the name exec was given; under sentry
        # the file the link leads to, "python3.11")
        print(sorted(l.split()[2][:7] for l in p.stdout.splitlines()[1:]))
    if cmd[0] == "vmstat":
        print(p.stdout.splitlines()[1].split()[:4])
)py",
                                  {"--timeout", "30"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out,
            "vmstat 0 ''\n['r', 'b', 'swpd', 'free']\nfree 0 ''\nps 0 ''\n"
            "['ps', 'python3']\ntop 0 ''\n")
      << r.err;
}

}  // namespace
}  // namespace sentry::testing
