// Red team: what the kernel reaches by itself through native calls (fds the
// sentry donated, names of the ipc namespace, devpts, directory tokens), and
// buffers a racing thread rewrites while a trapped call reads them.
#include <fcntl.h>
#include <mqueue.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/security/redteam_util.h"

namespace sentry::security {
namespace {

TEST(RtKernelPaths, NativeDataPathCallsCannotWriteALowerFile) {
  std::string before = FileState("/usr/bin/env") + FileState("/etc/hostname");
  ProcessResult r = RunPy(R"PY(
import ctypes, fcntl, mmap, struct
libc = ctypes.CDLL(None, use_errno=True)
def sc(*a):
    v = libc.syscall(*[ctypes.c_long(x) for x in a])
    if v < 0: raise OSError(ctypes.get_errno(), "")
    return v
fd = os.open("/usr/bin/env", os.O_RDONLY)
src = os.open("/etc/hostname", os.O_RDONLY)
t("pwrite", lambda: os.pwrite(fd, b"x", 0))
t("pwritev", lambda: os.pwritev(fd, [b"x"], 0))
t("write", lambda: os.write(fd, b"x"))
t("ftruncate", lambda: os.ftruncate(fd, 0))
t("fallocate", lambda: os.posix_fallocate(fd, 0, 1 << 20))
t("mmap shared write", lambda: mmap.mmap(fd, 4096, mmap.MAP_SHARED, mmap.PROT_WRITE))
t("copy_file_range", lambda: os.copy_file_range(src, fd, 4))
r, w = os.pipe(); os.write(w, b"abc")
t("splice", lambda: os.splice(r, fd, 3))
t("sendfile", lambda: os.sendfile(fd, src, 0, 4))
t("F_SETLEASE read", lambda: fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK))
t("F_SETLEASE write", lambda: fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK))
t("F_SETFL O_RDWR", lambda: (fcntl.fcntl(fd, fcntl.F_SETFL, os.O_RDWR | os.O_APPEND),
                             fcntl.fcntl(fd, fcntl.F_GETFL) & 3)[1])
t("F_ADD_SEALS", lambda: fcntl.fcntl(fd, 1033, 1))
t("after SETFL write", lambda: os.write(fd, b"x"))
# io_submit(IOCB_CMD_PWRITE) on the read-only fd: AIO is native.
ctx = ctypes.c_ulong(0)
t("io_setup", lambda: sc(206, 4, ctypes.addressof(ctx)))
buf = ctypes.create_string_buffer(b"PWNED", 5)
iocb = struct.pack("=QIIHhIQQqQII", 0, 0, 0, 1, 0, fd, ctypes.addressof(buf), 5, 0, 0, 0, 0)
cb = ctypes.create_string_buffer(iocb, len(iocb))
arr = (ctypes.c_void_p * 1)(ctypes.addressof(cb))
t("io_submit pwrite", lambda: sc(209, ctx.value, 1, ctypes.addressof(arr)))
print("done=OK")
)PY");
  Results res = ParseResults(r.out);
  ASSERT_EQ(Code(res, "done"), "OK") << Describe(r);
  for (const char* n : {"pwrite", "pwritev", "write", "fallocate", "copy_file_range", "splice",
                        "sendfile", "after SETFL write", "io_submit pwrite"}) {
    EXPECT_EQ(Code(res, n), "EBADF") << n << "\n" << Describe(r);
  }
  EXPECT_EQ(Code(res, "ftruncate"), "EINVAL") << Describe(r);
  EXPECT_EQ(Code(res, "mmap shared write"), "EACCES") << Describe(r);
  // A lease would hold off the host's own opens of the file for
  // lease-break-time: the sandbox's host uid does not own it.
  EXPECT_EQ(Code(res, "F_SETLEASE read"), "EACCES") << Describe(r);
  EXPECT_EQ(Code(res, "F_SETLEASE write"), "EACCES") << Describe(r);
  EXPECT_NE(Code(res, "F_ADD_SEALS"), "OK") << Describe(r);
  EXPECT_EQ(Code(res, "io_setup"), "OK") << Describe(r);  // the AIO path was reached
  EXPECT_EQ(FileState("/usr/bin/env") + FileState("/etc/hostname"), before);
}

TEST(RtKernelPaths, MessageQueuesStayInTheRunThatMadeThem) {
  std::string name = "/rt-" + RandomToken(10);
  ProcessResult first = RunPy("name = " + PyQuote(name) + R"PY(
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def mq(n, flags):
    fd = libc.mq_open(n.encode(), flags, 0o666, None)
    if fd < 0: raise OSError(ctypes.get_errno(), "")
    return fd
t("create", lambda: mq(name, os.O_CREAT | os.O_RDWR))
t("send", lambda: libc.mq_send(mq(name, os.O_RDWR), b"left-over", 9, 0))
t("dotdot", lambda: mq("/../../dev/shm/x", os.O_CREAT | os.O_RDWR))
t("no slash", lambda: mq("dev/shm/x", os.O_CREAT | os.O_RDWR))
t("long", lambda: mq("/" + "a" * 300, os.O_CREAT | os.O_RDWR))
)PY");
  Results r1 = ParseResults(first.out);
  std::string created = Code(r1, "create");
  ASSERT_TRUE(created == "OK" || created == "ENOSYS") << Describe(first);
  EXPECT_NE(Code(r1, "dotdot"), "OK") << Describe(first);
  EXPECT_NE(Code(r1, "no slash"), "OK") << Describe(first);
  EXPECT_NE(Code(r1, "long"), "OK") << Describe(first);
  ProcessResult second = RunPy("name = " + PyQuote(name) + R"PY(
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.mq_open(name.encode(), os.O_RDONLY, 0, None)
print("open=" + ("OK" if fd >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")))
)PY");
  std::string again = Code(ParseResults(second.out), "open");
  EXPECT_TRUE(again == "ENOENT" || again == "ENOSYS") << Describe(second);
  mqd_t host = mq_open(name.c_str(), O_RDONLY);
  EXPECT_EQ(host, (mqd_t)-1) << "the queue reached the host's ipc namespace";
  if (host != (mqd_t)-1) {
    mq_close(host);
    mq_unlink(name.c_str());
  }
}

TEST(RtKernelPaths, TheCallersPtyIsNotReachableThroughDevPts) {
  int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  ASSERT_GE(master, 0);
  ASSERT_EQ(grantpt(master), 0);
  ASSERT_EQ(unlockpt(master), 0);
  std::string slave = ptsname(master);
  ProcessResult r = RunPy("host = " + PyQuote(slave) + R"PY(
def inject(p):
    fd = os.open(p, os.O_RDWR | os.O_NOCTTY)
    os.write(fd, b"INJECTED\n")
    return os.ttyname(fd)
t("host slave", lambda: inject(host))
for i in range(8):
    t("pts " + str(i), lambda: inject("/dev/pts/" + str(i)))
t("own ptmx", lambda: os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY))
t("own listing", lambda: sorted(os.listdir("/dev/pts")))
)PY");
  Results res = ParseResults(r.out);
  ASSERT_NE(Code(res, "own ptmx"), "<missing>") << Describe(r);
  EXPECT_NE(Code(res, "host slave"), "OK") << Describe(r);
  // Whatever /dev/pts/N the guest opens is a pty of its own devpts.
  std::string got;
  char buf[256];
  int fl = fcntl(master, F_GETFL);
  fcntl(master, F_SETFL, fl | O_NONBLOCK);
  ssize_t n = read(master, buf, sizeof(buf));
  if (n > 0) got.assign(buf, static_cast<size_t>(n));
  close(master);
  EXPECT_EQ(got.find("INJECTED"), std::string::npos) << "the guest wrote to the caller's pty";
}

TEST(RtKernelPaths, ProcFilesOfTheKernelAreAbsentOrInert) {
  std::string core_pattern = ReadFile("/proc/sys/kernel/core_pattern").value_or("");
  ProcessResult r = RunPy(R"PY(
paths = ["/proc/self/mem", "/proc/1/mem", "/proc/self/map_files", "/proc/self/pagemap",
         "/proc/self/attr/current", "/proc/self/attr/exec", "/proc/self/oom_score_adj",
         "/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe", "/proc/self/uid_map",
         "/proc/self/setgroups", "/proc/self/coredump_filter", "/proc/self/timens_offsets",
         "/proc/self/ns/mnt", "/proc/self/ns/user", "/proc/self/auxv", "/proc/self/syscall",
         "/proc/self/stack", "/proc/kallsyms",
         "/proc/self/fdinfo/0", "/proc/self/clear_refs", "/proc/self/sched", "/proc/1/timerslack_ns",
         "/proc/self/loginuid", "/proc/sys/vm/drop_caches", "/proc/sys/fs/binfmt_misc/register",
         "/proc/self/fd/../../1/mem"]
for p in paths:
    t("read " + p, lambda: len(open(p, "rb").read()))
    t("write " + p, lambda: open(p, "wb").write(b"0\n"))
print("done=OK")
)PY");
  Results res = ParseResults(r.out);
  ASSERT_EQ(Code(res, "done"), "OK") << Describe(r);
  // A process's own auxv and oom_score_adj are numbers about itself (psutil
  // reads them): shown as the host has them, read-only. Its fdinfo and sched
  // are generated from the sandbox's view (ProcNet.OwnFilesNameNoHostPidOrPath
  // checks that they name no host pid, inode or clock).
  const std::set<std::string> own_readable = {"read /proc/self/auxv",
                                              "read /proc/self/oom_score_adj",
                                              "read /proc/self/fdinfo/0", "read /proc/self/sched"};
  for (const auto& [name, value] : res) {
    if (name == "done" || own_readable.count(name)) continue;
    EXPECT_NE(Code(res, name), "OK") << name << "=" << value;
  }
  EXPECT_EQ(ReadFile("/proc/sys/kernel/core_pattern").value_or(""), core_pattern);
}

TEST(RtKernelPaths, DeviceNodesBeyondTheMinimalSetAreAbsent) {
  ProcessResult r = RunPy(R"PY(
for p in ["/dev/tty", "/dev/console", "/dev/mem", "/dev/kmem", "/dev/port", "/dev/kmsg",
          "/dev/loop-control", "/dev/loop0", "/dev/fuse", "/dev/net/tun", "/dev/kvm",
          "/dev/vda", "/dev/sda", "/dev/nvme0n1", "/dev/hpet", "/dev/tty0", "/dev/tty1",
          "/dev/vcs", "/dev/vcsa", "/dev/autofs", "/dev/userfaultfd", "/dev/vhost-net",
          "/dev/cpu/0/msr", "/dev/mapper/control", "/dev/btrfs-control", "/dev/rtc0",
          "/dev/snd", "/dev/dri/card0", "/dev/input/event0", "/dev/watchdog", "/dev/sg0",
          "/dev/.sentry-pts", "/.sentry-pts/ptmx", "/dev/fd/../../.sentry-pts/ptmx"]:
    t("open " + p, lambda: os.open(p, os.O_RDWR | os.O_NOCTTY))
t("listing", lambda: sorted(os.listdir("/dev")))
t("ptmx", lambda: os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY) >= 0)
)PY");
  Results res = ParseResults(r.out);
  ASSERT_NE(Code(res, "listing"), "<missing>") << Describe(r);
  for (const auto& [name, value] : res) {
    if (name.rfind("open ", 0) != 0) continue;
    std::string c = Code(res, name);
    // /dev/tty is the caller's controlling terminal, a pty of the sandbox's
    // own: this guest has none (and without namespaces no /dev/tty at all).
    if (name == "open /dev/tty") {
      EXPECT_TRUE(c == "ENXIO" || c == "ENOENT") << name << "=" << value;
      continue;
    }
    EXPECT_TRUE(c == "ENOENT" || c == "EACCES" || c == "ENOTDIR") << name << "=" << value;
  }
  for (const char* dev : {"'null'", "'zero'", "'urandom'"}) {
    EXPECT_NE(Value(res, "listing").find(dev), std::string::npos) << Value(res, "listing");
  }
  for (const char* dev : {"'console'", "'mem'", "'kmsg'", "'vda'", "'sda'", "'kvm'"}) {
    EXPECT_EQ(Value(res, "listing").find(dev), std::string::npos) << Value(res, "listing");
  }
}

TEST(RtKernelPaths, GetdentsWhileRenamesRaceListsOnlySandboxNames) {
  ProcessResult r = RunPy(R"PY(
import threading
os.makedirs("/tmp/d/sub")
stable = {"s%02d" % i for i in range(40)}
for n in stable: open("/tmp/d/" + n, "w").close()
for i in range(20): open("/tmp/d/m%02d" % i, "w").close()
moving = {"m%02d" % i for i in range(20)} | {"n%02d" % i for i in range(20)} | {"sub", "sub2"}
stop = False
renames = 0
def churn():
    global renames
    while not stop:
        for i in range(20):
            os.rename("/tmp/d/m%02d" % i, "/tmp/d/n%02d" % i)
        os.rename("/tmp/d/sub", "/tmp/d/sub2")
        for i in range(20):
            os.rename("/tmp/d/n%02d" % i, "/tmp/d/m%02d" % i)
        os.rename("/tmp/d/sub2", "/tmp/d/sub")
        renames += 42
th = threading.Thread(target=churn); th.start()
fd = os.open("/tmp/d", os.O_RDONLY | os.O_DIRECTORY)
strange, missing, lists = set(), set(), 0
for _ in range(600):
    names = set(os.listdir(fd))
    strange |= names - stable - moving
    missing |= stable - names
    lists += 1
stop = True; th.join()
print("lists=OK", lists)
print("renames=OK", renames)
print("strange=OK", sorted(strange))
print("missing=OK", sorted(missing))
)PY");
  Results res = ParseResults(r.out);
  ASSERT_EQ(Code(res, "lists"), "OK") << Describe(r);
  EXPECT_GT(std::atol(Value(res, "renames").c_str()), 0) << Describe(r);  // the race ran
  EXPECT_EQ(Value(res, "strange"), "[]") << Describe(r);
  EXPECT_EQ(Value(res, "missing"), "[]") << "entries that never moved went missing";
}

TEST(RtKernelPaths, AbstractSocketsOfOneSandboxAreNotSeenByAnother) {
  std::string name = "rt-" + RandomToken(12);
  Background a(SentryArgv({}, {"/usr/bin/python3", "-c", "name = " + PyQuote(name) + R"PY(
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.bind("\0" + name); s.listen(8)
except OSError as e:
    print("bind=" + str(e.errno), flush=True); sys.exit(0)
print("bind=OK", flush=True)
s.settimeout(2)
try:
    c, _ = s.accept(); print("accepted=YES", flush=True)
except socket.timeout:
    print("accepted=NO", flush=True)
)PY"}));
  usleep(600 * 1000);  // the first sandbox is up and listening
  ProcessResult b = RunPy("name = " + PyQuote(name) + R"PY(
import socket
def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect("\0" + name)
t("connect", conn)
)PY");
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  int host = connect(s, reinterpret_cast<sockaddr*>(&addr),
                     static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size()));
  close(s);
  ProcessResult ra = a.Wait(20);
  Results resa = ParseResults(ra.out);
  EXPECT_NE(Code(ParseResults(b.out), "connect"), "OK") << Describe(b);
  EXPECT_NE(host, 0) << "the host reached the sandbox's abstract socket";
  if (Code(resa, "bind") == "OK") {
    EXPECT_EQ(Code(resa, "accepted"), "NO") << Describe(ra);
  }
}

// A host socket inside the lower layer (the mount view shows it): a thread
// flips the connect address between a sandbox socket and it.
TEST(RtKernelPaths, ConnectAddressRaceNeverReachesAHostSocketInTheLowerLayer) {
  std::string dir = "/usr/local/share";
  std::string path = dir + "/rt-" + RandomToken(8) + ".sock";
  int l = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(bind(l, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << path;
  chmod(path.c_str(), 0777);
  ASSERT_EQ(listen(l, 512), 0);
  std::atomic<bool> stop{false};
  std::atomic<int> accepted{0};
  std::thread acceptor([&] {
    while (!stop) {
      pollfd p{l, POLLIN, 0};
      if (poll(&p, 1, 50) > 0) {
        int c = accept(l, nullptr, nullptr);
        if (c >= 0) {
          ++accepted;
          close(c);
        }
      }
    }
  });
  ProcessResult r = RunRtProbe({"connect-race", "3000", "/tmp/ok.sock", path});
  stop = true;
  acceptor.join();
  close(l);
  unlink(path.c_str());
  Results res = ParseResults(r.out);
  ASSERT_NE(Code(res, "connected"), "<missing>") << Describe(r);
  EXPECT_EQ(accepted.load(), 0) << "a guest connect reached the host socket " << path;
  if (SeccompOnly()) return;  // no unix sockets to race with there
  EXPECT_GT(std::atoi(res["connected"].c_str()), 0) << Describe(r);
  EXPECT_GT(std::atoi(res["refused"].c_str()), 0) << Describe(r);
}

// A thread flips the new name of rename/link/symlink/mkdir between /tmp and
// a name in /etc (not writable by uid 1000): a sentry that checked one read
// of the path and acted on another would leave the /etc name behind.
TEST(RtKernelPaths, NewNamesAreReadOnceUnderARacingThread) {
  std::string bad = "/etc/rt-race-" + RandomToken(8);
  ProcessResult r = RunRtProbe({"name-race", "1000", bad});
  Results res = ParseResults(r.out);
  for (const char* op : {"rename", "link", "symlink", "mkdir"}) {
    std::string v = res[op];
    ASSERT_FALSE(v.empty()) << op << "\n" << Describe(r);
    EXPECT_NE(v.find("leaked:0"), std::string::npos) << op << ": " << v;
    EXPECT_EQ(v.find("ok:0 "), std::string::npos) << op << ": the /tmp side never won: " << v;
    EXPECT_EQ(v.find("denied:0 "), std::string::npos) << op << ": the /etc side never won: " << v;
  }
  EXPECT_FALSE(ReadFile(bad).has_value()) << bad << " appeared on the host";
}

}  // namespace
}  // namespace sentry::security
