// Red team: exec, where the sentry rewrites a path in guest memory and the
// kernel then walks the mount view itself (the program, its PT_INTERP).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/security/redteam_util.h"

namespace sentry::security {
namespace {

// A host-only executable (a copy of /bin/true) that the sandbox must never run.
class HostOnlyBinary {
 public:
  HostOnlyBinary() : dir_("/tmp/rt-host-") {
    path_ = dir_.path() + "/t";
    auto bytes = ReadFile("/bin/true");
    WriteFileOrDie(path_, bytes.value_or(""), 0755);
    chmod(dir_.path().c_str(), 0755);
  }
  const std::string& path() const { return path_; }

 private:
  TempDir dir_;
  std::string path_;
};

// Execs in a child and prints "name=EXECUTED" or "name=ERRNO" (Python).
constexpr const char* kExecHelper = R"PY(
def ex(name, f):
    r, w = os.pipe2(os.O_CLOEXEC)
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            f()
        except OSError as e:
            os.write(w, errno.errorcode[e.errno].encode())
        os._exit(1)
    os.close(w)
    msg = os.read(r, 64).decode()
    _, st = os.waitpid(pid, 0)
    # EXECUTED and the wait status: 9 when the sentry killed it at the exec
    # event (before its first instruction).
    print(f"{name}={msg or 'EXECUTED'} {st}", flush=True)
)PY";

// The guest points the PT_INTERP of an ELF it copied at a path of its choice
// and execs it: the kernel opens the interpreter itself, in the mount
// view, with no trap.
constexpr const char* kInterpHelper = R"PY(
import struct
data = bytearray(open("/usr/bin/true", "rb").read())
def interp(name, p):
    # The path goes at the end of the file; PT_INTERP's offset and size point there.
    d = bytearray(data) + p.encode() + b"\0"
    phoff, = struct.unpack_from("<Q", d, 32)
    phentsize, phnum = struct.unpack_from("<HH", d, 54)
    for i in range(phnum):
        at = phoff + i * phentsize
        if struct.unpack_from("<I", d, at)[0] == 3:
            struct.pack_into("<Q", d, at + 8, len(data))
            struct.pack_into("<Q", d, at + 32, len(p) + 1)
    open("/tmp/pt", "wb").write(d)
    os.chmod("/tmp/pt", 0o755)
    ex(name, lambda: os.execv("/tmp/pt", ["pt"]))
)PY";

TEST(RtExec, PtInterpIsResolvedInTheMountViewOnly) {
  TempDir dir("/tmp/rt-");
  chmod(dir.path().c_str(), 0755);
  std::string host = dir.path() + "/i";
  WriteFileOrDie(host, ReadFile("/lib64/ld-linux-x86-64.so.2").value_or(""), 0755);
  ProcessResult r =
      RunPy(std::string(kExecHelper) + kInterpHelper + "host = " + PyQuote(host) + R"PY(
interp("control", "/lib64/ld-linux-x86-64.so.2")
interp("host only", host)
interp("proc self exe", "/proc/self/exe")
interp("proc 1 root", "/proc/1/root/usr/bin/true")
interp("old root", "/.old/usr/bin/true")
interp("own upper file", "/tmp/pt")
)PY");
  Results res = ParseResults(r.out);
  EXPECT_EQ(res["control"], "EXECUTED 0") << Describe(r);  // the patch itself works
  for (const char* n :
       {"host only", "proc self exe", "proc 1 root", "old root", "own upper file"}) {
    if (SeccompOnly()) {
      // No mount view: the kernel opens PT_INTERP in the host's tree. The
      // sentry's exec-event check (every mapping in the lower layer or the
      // store) must kill a host-only interpreter before its first
      // instruction; /proc/self/exe is still the old image then (python3).
      EXPECT_NE(res[n], "EXECUTED 0") << n << "\n" << Describe(r);
      // Under the guest's Landlock domain the kernel's own open of it fails
      // first (EACCES: no EXECUTE or READ_FILE beneath that host directory).
      if (std::string(n) == "host only") {
        bool landlock = syscall(444, nullptr, 0, 1u) > 0;  // the kernel's Landlock ABI
        EXPECT_EQ(res[n], landlock ? "EACCES 256" : "EXECUTED 9") << Describe(r);
      }
    } else {
      EXPECT_EQ(Code(res, n), "ENOENT") << n << "\n" << Describe(r);
    }
  }
}

// Was a weakness (no host data): the store is bound into the mount view at
// /.sentry-store and its files are named f1, f2... (/proc/self/maps shows the
// name of any mapped upper file). As a PT_INTERP the kernel runs a store file
// whatever mode the VFS gives it: chmod 000 in the sandbox does not stop it.
// Reproduction: copy ld.so to /tmp/ld, mmap it, read its /.sentry-store/fN
// name from /proc/self/maps, chmod 0 /tmp/ld, patch an ELF's PT_INTERP to
// /.sentry-store/fN and exec it: it ran. Now the store file's host mode
// has execute bits only while the node has one (vfs/store.cc).
TEST(RtExec, PtInterpCannotRunStoreFilesTheVfsForbids) {
  ProcessResult r = RunPy(std::string(kExecHelper) + kInterpHelper + R"PY(
import mmap, shutil
shutil.copy("/lib64/ld-linux-x86-64.so.2", "/tmp/ld")
f = open("/tmp/ld", "rb")
def mapped(): return {l.split()[-1] for l in open("/proc/self/maps") if len(l.split()) > 5}
before = mapped()
m = mmap.mmap(f.fileno(), 4096, prot=mmap.PROT_READ)
store = sorted(mapped() - before)
print("maps=" + ",".join(store))
if store:
    interp("store mode 755", store[0])
    os.chmod("/tmp/ld", 0)
    interp("store mode 000", store[0])
    os.unlink("/tmp/ld")
    interp("store unlinked", store[0])
interp("pts", "/.sentry-pts/ptmx")
)PY");
  Results res = ParseResults(r.out);
  ASSERT_NE(Code(res, "pts"), "<missing>") << Describe(r);
  EXPECT_NE(Code(res, "pts"), "EXECUTED");
  if (res["maps"].empty() || res["maps"] == "/tmp/ld") {
    // The store's names are not shown: nothing to aim at.
    SUCCEED() << "maps show no store path: " << res["maps"];
    return;
  }
  EXPECT_EQ(res["store mode 755"], "EXECUTED 0") << Describe(r);  // the aim was right
  EXPECT_NE(res["store unlinked"], "EXECUTED 0") << Describe(r);
  // The store file's host mode follows the node's execute bits (vfs/store.cc).
  EXPECT_NE(res["store mode 000"], "EXECUTED 0") << Describe(r);
}

TEST(RtExec, GuestsOwnTraceFilterCannotSteerTheExecRewrite) {
  HostOnlyBinary host;
  ProcessResult r = RunRtProbe({"seccomp-trace", host.path()});
  Results res = ParseResults(r.out);
  ASSERT_EQ(Code(res, "install"), "OK") << Describe(r);
  // The guest's RET_TRACE on native getpid and on trapped openat: both still
  // answered (the tracer ignores stops that are not execs; USER_NOTIF wins).
  EXPECT_EQ(Code(res, "getpid"), "OK") << Describe(r);
  EXPECT_EQ(Code(res, "openat"), "OK") << Describe(r);
  EXPECT_EQ(Code(res, "exec sandbox"), "OK") << Describe(r);
  EXPECT_EQ(Code(res, "exec host"), "ENOENT") << Describe(r);
  EXPECT_EQ(Code(res, "exec store"), "ENOENT") << Describe(r);
}

TEST(RtExec, HostileStackPointerDuringExecFailsCleanly) {
  ProcessResult r = RunRtProbe({"exec-stack"});
  Results res = ParseResults(r.out);
  EXPECT_EQ(Code(res, "rsp own"), "OK") << Describe(r);  // the asm path execs
  for (const char* n :
       {"rsp 0", "rsp 200", "rsp read-only", "rsp PROT_NONE", "rsp kernel", "rsp top"}) {
    std::string c = Code(res, n);
    EXPECT_TRUE(c == "ENOMEM" || c == "EFAULT") << n << "=" << c << "\n" << Describe(r);
  }
  EXPECT_EQ(Code(res, "alive"), "OK") << Describe(r);
}

TEST(RtExec, FaultingAndHugeArgvFailCleanly) {
  ProcessResult r = RunRtProbe({"exec-argv"});
  Results res = ParseResults(r.out);
  EXPECT_EQ(Code(res, "argv unterminated"), "EFAULT") << Describe(r);
  EXPECT_EQ(Code(res, "argv bad pointer"), "EFAULT") << Describe(r);
  EXPECT_EQ(Code(res, "envp kernel pointer"), "EFAULT") << Describe(r);
  EXPECT_EQ(Code(res, "argv 3Mi empty"), "E2BIG") << Describe(r);
  std::string c = Code(res, "path at page end");
  EXPECT_TRUE(c == "ENAMETOOLONG" || c == "EFAULT") << c;
  EXPECT_EQ(Code(res, "alive"), "OK") << Describe(r);
}

TEST(RtExec, VforkAndCloneVmChildrenExecOnlySandboxFiles) {
  HostOnlyBinary host;
  ProcessResult r = RunRtProbe({"vfork-exec", host.path()});
  Results res = ParseResults(r.out);
  EXPECT_EQ(Code(res, "vfork sandbox"), "OK") << Describe(r);
  EXPECT_EQ(Code(res, "clone_vm sandbox"), "OK") << Describe(r);
  for (const char* n : {"vfork host", "clone_vm host", "clone_vm_files host"}) {
    EXPECT_EQ(Code(res, n), "ENOENT") << n << "\n" << Describe(r);
  }
  EXPECT_EQ(Code(res, "alive"), "OK") << Describe(r);
}

// execve kills a process's other threads (de_thread) while they sit in
// trapped calls: their notifications die unanswered under the sentry.
TEST(RtExec, ExecWhileSiblingThreadsAreInTrappedCalls) {
  ProcessResult r = RunPy(R"PY(
import threading
ok = 0
for i in range(30):
    pid = os.fork()
    if pid == 0:
        def spin():
            while True:
                try: os.stat("/usr/nonexistent")
                except OSError: pass
        for _ in range(6): threading.Thread(target=spin, daemon=True).start()
        import time; time.sleep(0.01)
        os.execv("/usr/bin/true", ["true"])
    _, st = os.waitpid(pid, 0)
    ok += st == 0
print("execs=OK", ok)
t("after", lambda: os.stat("/usr").st_mode != 0)
)PY",
                          {}, 60);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Value(res, "execs"), "30") << Describe(r);
  EXPECT_EQ(Code(res, "after"), "OK") << Describe(r);
}

TEST(RtExec, AHostExecutableOnStdinCannotBeExecuted) {
  HostOnlyBinary host;
  std::string echo = host.path() + "-echo";
  WriteFileOrDie(echo, ReadFile("/bin/echo").value_or(""), 0755);
  int fd = open(echo.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  std::string body = std::string("import os, sys, errno\n") + kExecHelper + R"PY(
ex("fexecve 0", lambda: os.execve(0, ["e", "HOST" "RAN"], {}))
ex("proc fd 0", lambda: os.execv("/proc/self/fd/0", ["e", "HOST" "RAN"]))
ex("dev stdin", lambda: os.execv("/dev/stdin", ["e", "HOST" "RAN"]))
ex("dev fd 0", lambda: os.execv("/dev/fd/0", ["e", "HOST" "RAN"]))
print("done=OK")
)PY";
  ProcessResult r = RunSentryWithStdin({}, {"/usr/bin/python3", "-c", body}, fd);
  close(fd);
  Results res = ParseResults(r.out);
  ASSERT_EQ(Code(res, "done"), "OK") << Describe(r);
  for (const char* n : {"fexecve 0", "proc fd 0", "dev stdin", "dev fd 0"}) {
    EXPECT_NE(Code(res, n), "EXECUTED") << n << "\n" << Describe(r);
  }
  EXPECT_EQ(r.out.find("HOSTRAN"), std::string::npos) << Describe(r);
}

}  // namespace
}  // namespace sentry::security
