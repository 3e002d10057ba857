// A sandbox on the seccomp wall alone: what a run does where the kernel gives
// no namespaces (tests/e2e/without_namespaces makes such a host), or with
// --no-namespaces. The guest must still compute freely and reach nothing: no
// host file changed, no network, no host process signalled, no host IPC, no
// host file executed from outside the lower layer, nothing left running.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "tests/e2e/e2e_util.h"
#include "tests/util/json_read.h"

namespace sentry::testing {
namespace {

const std::vector<std::string> kSeccompOnly = {"--no-namespaces"};

constexpr long kFirstSeccompOnlyId = 2000000000L + 0x10000;  // spawn.h's kHostIdBase + 0x10000

bool Running(long pid) { return pid > 0 && kill(static_cast<pid_t>(pid), 0) == 0; }

// Host processes whose real uid is one a seccomp-only run gives its guest
// (kFirstSeccompOnlyId + the sentry's pid), zombies aside, left by a sentry
// that has exited. A live sentry's guests are not counted: ctest runs other
// suites with seccomp-only sandboxes at the same time.
std::vector<std::string> SeccompOnlyProcesses() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream status(e.path() / "status");
    std::string line, state;
    long uid = -1;
    while (std::getline(status, line)) {
      if (line.rfind("State:", 0) == 0) state = line;
      if (line.rfind("Uid:", 0) == 0) uid = std::stol(line.substr(4));
    }
    if (uid >= kFirstSeccompOnlyId && state.find("zombie") == std::string::npos &&
        !Running(uid - kFirstSeccompOnlyId)) {
      out.push_back(name + " " + state);
    }
  }
  return out;
}

// The backing stores on the host ("sentry-store-PID-XXXXXX") of sentries that
// have exited, or of the one with the given pid (alive or not).
std::vector<std::string> HostStores(long of_pid = 0) {
  std::vector<std::string> out;
  for (const char* dir : {"/dev/shm", "/tmp"}) {
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      std::string name = e.path().filename();
      if (name.rfind("sentry-store-", 0) != 0) continue;
      long pid = std::atol(name.c_str() + std::strlen("sentry-store-"));
      if (of_pid ? pid == of_pid : !Running(pid)) out.push_back(e.path());
    }
  }
  return out;
}

// Where the kernel refuses namespaces, a run falls back to the seccomp wall
// alone and says so; --require-namespaces refuses instead.
TEST(SeccompOnlyTest, RunsWhereTheKernelRefusesNamespacesAndSaysSo) {
  ProcessResult r = RunProcess({WITHOUT_NAMESPACES, SentryBinary(), "run", "--json", "--",
                                "/usr/bin/python3", "-c", "print(48271*6933)"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::optional<nlohmann::json> v = ParseJson(r.out);
  ASSERT_TRUE(v.has_value()) << r.out;
  EXPECT_EQ(Str(At(*v, "stdout")), "334662843\n");
  std::vector<std::string> walls;
  for (const nlohmann::json& w : At(*v, "walls")) walls.push_back(Str(w));
  EXPECT_EQ(walls.at(0), "seccomp");
  EXPECT_EQ(std::count(walls.begin(), walls.end(), "namespaces"), 0) << r.out;
  EXPECT_NE(r.err.find("sentry: notice: no namespaces (the kernel refused"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("seccomp wall alone"), std::string::npos) << r.err;

  ProcessResult strict = RunProcess(
      {WITHOUT_NAMESPACES, SentryBinary(), "run", "--require-namespaces", "--", "/bin/true"});
  EXPECT_EQ(strict.exit_code, 125) << Describe(strict);
  EXPECT_NE(strict.err.find("--require-namespaces forbids"), std::string::npos) << strict.err;

  // With namespaces to be had, a run has both walls and prints no notice.
  ProcessResult both = RunSentry({"--json"}, {"/bin/true"});
  ASSERT_EQ(both.exit_code, 0) << Describe(both);
  EXPECT_NE(both.out.find(R"("walls":["seccomp","namespaces")"), std::string::npos) << both.out;
  EXPECT_EQ(both.err.find("notice"), std::string::npos) << both.err;
}

// `sentry syscalls --no-namespaces` shows the table such a run installs.
TEST(SeccompOnlyTest, SyscallsShowsTheTableWithoutNamespaces) {
  ProcessResult ns = Sentry({"syscalls"});
  ProcessResult alone = Sentry({"syscalls", "--no-namespaces"});
  ASSERT_EQ(alone.exit_code, 0) << Describe(alone);
  auto row = [](const std::string& text, const std::string& name) {
    size_t at = text.find(" " + name + " ");
    return at == std::string::npos ? "" : text.substr(at, text.find('\n', at) - at);
  };
  EXPECT_NE(row(ns.out, "uname").find("native"), std::string::npos) << row(ns.out, "uname");
  EXPECT_NE(row(alone.out, "uname").find("trap"), std::string::npos) << row(alone.out, "uname");
  EXPECT_NE(row(alone.out, "shmget").find("errno ENOSYS"), std::string::npos);
  EXPECT_NE(row(alone.out, "socket").find("; else EACCES"), std::string::npos);
  EXPECT_EQ(row(alone.out, "openat"), row(ns.out, "openat"));
  EXPECT_EQ(Sentry({"syscalls", "--bogus"}).exit_code, 125);
}

TEST(SeccompOnlyTest, GuestSeesTheSandboxsIdsAndName) {
  ProcessResult r = RunPython(
      "import os\n"
      "print(os.getuid(), os.geteuid(), os.getgid(), os.getegid())\n"
      "print(os.getresuid(), os.getresgid(), os.getgroups())\n"
      "print(os.uname().nodename)\n"
      "os.setuid(1000); os.setresgid(-1, 1000, -1)\n"
      "for f in (lambda: os.setuid(0), lambda: os.setgid(0), lambda: os.setgroups([0])):\n"
      "    try:\n"
      "        f(); print('changed')\n"
      "    except PermissionError:\n"
      "        print('EPERM')\n"
      "print(open('/proc/self/status').read().count('1000\\t1000\\t1000\\t1000'))\n",
      kSeccompOnly);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out,
            "1000 1000 1000 1000\n(1000, 1000, 1000) (1000, 1000, 1000) []\nsandbox\n"
            "EPERM\nEPERM\nEPERM\n2\n");
}

// A unix socket the test listens on under an abstract name in the host's
// network namespace, which the guest must not reach.
class HostAbstractListener {
 public:
  HostAbstractListener() : name_("sentry-test-" + std::to_string(getpid())) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path + 1, name_.data(), name_.size());
    socklen_t len = offsetof(sockaddr_un, sun_path) + 1 + name_.size();
    if (bind(fd_, reinterpret_cast<sockaddr*>(&a), len) < 0 || listen(fd_, 8) < 0) fd_ = -1;
  }
  ~HostAbstractListener() { close(fd_); }
  bool ok() const { return fd_ >= 0; }
  const std::string& name() const { return name_; }
  bool Accepted() const { return accept(fd_, nullptr, nullptr) >= 0; }

 private:
  std::string name_;
  int fd_ = -1;
};

TEST(SeccompOnlyTest, NoNetworkNoUnixDatagramsNoHostAbstractNames) {
  HostAbstractListener host;
  ASSERT_TRUE(host.ok());
  std::string script =
      "sys_name = b'" + host.name() + "'\n" +
      std::string(
          "import errno, socket, threading\n"
          "def err(f):\n"
          "    try:\n"
          "        f(); return 'ok'\n"
          "    except OSError as e:\n"
          "        return errno.errorcode[e.errno]\n"
          "S = socket.socket\n"
          "print('inet', err(lambda: S(socket.AF_INET, socket.SOCK_STREAM)))\n"
          "print('inet6', err(lambda: S(socket.AF_INET6, socket.SOCK_DGRAM)))\n"
          "print('netlink', err(lambda: S(socket.AF_NETLINK, socket.SOCK_RAW)))\n"
          "print('dgram', err(lambda: S(socket.AF_UNIX, socket.SOCK_DGRAM)))\n"
          "print('pair', err(lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)))\n"
          "c = S(socket.AF_UNIX, socket.SOCK_STREAM)\n"
          "print('abstract connect', err(lambda: c.connect(b'\\0' + sys_name)))\n"
          "print('abstract bind', err(lambda: c.bind(b'\\0mine')))\n"
          "srv = S(socket.AF_UNIX, socket.SOCK_STREAM); srv.bind('/tmp/s'); srv.listen()\n"
          "def serve():\n"
          "    conn, _ = srv.accept(); conn.sendall(conn.recv(10).upper()); conn.close()\n"
          "t = threading.Thread(target=serve); t.start()\n"
          "c2 = S(socket.AF_UNIX, socket.SOCK_STREAM); c2.connect('/tmp/s'); c2.sendall(b'hi')\n"
          "print('path stream', c2.recv(10).decode()); t.join()\n"
          "a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)\n"
          "a.send(b'x'); print('seqpacket pair', b.recv(1).decode())\n");
  ProcessResult r = RunPython(script, kSeccompOnly);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out,
            "inet EACCES\ninet6 EACCES\nnetlink EAFNOSUPPORT\ndgram EACCES\npair EACCES\n"
            "abstract connect EACCES\nabstract bind EACCES\npath stream HI\n"
            "seqpacket pair x\n");
  EXPECT_FALSE(host.Accepted());
}

TEST(SeccompOnlyTest, NoHostIpc) {
  ProcessResult r = RunPython(
      "import ctypes, ctypes.util, errno\n"
      "libc = ctypes.CDLL(None, use_errno=True)\n"
      "for name, args in (('shmget', (0, 4096, 0o1666)), ('semget', (0, 1, 0o1666)),\n"
      "                   ('msgget', (0, 0o1666)), ('mq_open', (b'/q', 0o100 | 2, 0o600, None))):\n"
      "    rc = getattr(libc, name)(*args)\n"
      "    print(name, rc, errno.errorcode.get(ctypes.get_errno()))\n",
      kSeccompOnly);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "shmget -1 ENOSYS\nsemget -1 ENOSYS\nmsgget -1 ENOSYS\nmq_open -1 ENOSYS\n");
}

// The kernel would write a core file in the host's tree (core_pattern): the
// cap is a hard 0. --disk still caps what the guest stores: a tmpfs of the
// store's own where the host lets the sentry mount one (ENOSPC), else a cap
// on each file (EFBIG).
TEST(SeccompOnlyTest, NoCoreFilesAndDiskStillCapsTheStore) {
  ProcessResult r = RunPython(
      "import errno, resource\n"
      "print(resource.getrlimit(resource.RLIMIT_CORE))\n"
      "try:\n"
      "    resource.setrlimit(resource.RLIMIT_CORE, (1 << 20, 1 << 20)); print('raised')\n"
      "except ValueError:\n"
      "    print('cannot raise')\n"
      "written = 0\n"
      "try:\n"
      "    with open('/tmp/fill', 'wb') as f:\n"
      "        while written < 64 << 20:\n"
      "            f.write(b'x' * (1 << 20)); f.flush(); written += 1 << 20\n"
      "except OSError as e:\n"
      "    print(errno.errorcode[e.errno], written <= 16 << 20)\n",
      {"--no-namespaces", "--disk", "16m"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_TRUE(r.out == "(0, 0)\ncannot raise\nENOSPC True\n" ||
              r.out == "(0, 0)\ncannot raise\nEFBIG True\n")
      << r.out;
}

TEST(SeccompOnlyTest, FilesStayInTheSandboxAndInMemoryFilesRun) {
  struct stat before {};
  ASSERT_EQ(stat("/usr/bin/true", &before), 0);
  std::string hostname = ReadHostFile("/etc/hostname");
  ProcessResult r = RunSentry(
      {"--no-namespaces", "--root"},
      {"/bin/sh", "-c",
       "echo pwned > /etc/hostname; cat /etc/hostname; rm -f /usr/bin/true; "
       "[ -e /usr/bin/true ] || echo removed; chmod 777 /bin/sh; "
       "cp /bin/echo /tmp/e && /tmp/e ran from memory; "
       "printf '#!/bin/sh\\necho script $0\\n' > /tmp/s.sh && chmod +x /tmp/s.sh && /tmp/s.sh"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "pwned\nremoved\nran from memory\nscript /tmp/s.sh\n");
  struct stat after {};
  ASSERT_EQ(stat("/usr/bin/true", &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_EQ(after.st_mode, before.st_mode);
  EXPECT_EQ(ReadHostFile("/etc/hostname"), hostname);
  struct stat sh {};
  ASSERT_EQ(stat("/bin/sh", &sh), 0);
  EXPECT_NE(sh.st_mode & 07777, 0777u);
  EXPECT_EQ(HostStores(), std::vector<std::string>{});  // the run's backing store is gone
}

TEST(SeccompOnlyTest, GuestCannotSignalHostProcessesAndLeavesNoneBehind) {
  pid_t host = fork();
  ASSERT_GE(host, 0);
  if (host == 0) {
    execl("/bin/sleep", "sleep", "30", nullptr);
    _exit(127);
  }
  ProcessResult r = RunSentry(
      kSeccompOnly, {"/usr/bin/python3", "-c",
                     "import os, subprocess, sys\n"
                     "subprocess.Popen(['/bin/sleep', '100'], start_new_session=True)\n"
                     "subprocess.Popen(['/bin/sh', '-c', '(sleep 200 &); sleep 300'])\n"
                     "for pid, sig in ((int(sys.argv[1]), 9), (1, 9), (int(sys.argv[1]), 18)):\n"
                     "    try:\n"
                     "        os.kill(pid, sig); print('signalled', pid, sig)\n"
                     "    except ProcessLookupError:\n"
                     "        print('ESRCH')\n",
                     std::to_string(host)});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  // The sentry answers for a process that is not the sandbox's as a pid
  // namespace would (SIGCONT too, which the kernel would let reach the
  // sender's session).
  EXPECT_EQ(r.out, "ESRCH\nESRCH\nESRCH\n");
  EXPECT_EQ(waitpid(host, nullptr, WNOHANG), 0);  // the host's process lives on
  kill(host, SIGKILL);
  waitpid(host, nullptr, 0);
  EXPECT_EQ(SeccompOnlyProcesses(), std::vector<std::string>{});
  // The same at the timeout, with a process that keeps forking.
  ProcessResult t = RunSentry({"--no-namespaces", "--timeout", "1"},
                              {"/bin/sh", "-c", "while :; do sleep 5 & sleep 0.05; done"});
  EXPECT_EQ(t.exit_code, 124) << Describe(t);
  EXPECT_EQ(SeccompOnlyProcesses(), std::vector<std::string>{});
}

// A sentry killed outright cannot remove its store (a host directory, with
// its tmpfs): the next run without namespaces sweeps it. The guest dies with
// its tracer.
TEST(SeccompOnlyTest, TheStoreOfAKilledSentryIsSweptByTheNextRun) {
  pid_t sentry = fork();
  ASSERT_GE(sentry, 0);
  if (sentry == 0) {
    int devnull = open("/dev/null", O_WRONLY);  // its notice is not this test's output
    dup2(devnull, 2);
    std::vector<std::string> argv = SentryRunArgv({"--no-namespaces"}, {"/bin/sleep", "60"});
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  std::vector<std::string> its_store;
  for (int i = 0; i < 200 && its_store.empty(); ++i) {
    usleep(10000);
    its_store = HostStores(sentry);
  }
  ASSERT_EQ(its_store.size(), 1u);
  usleep(100000);
  kill(sentry, SIGKILL);
  waitpid(sentry, nullptr, 0);
  EXPECT_EQ(HostStores(sentry), its_store);  // left behind
  ProcessResult r = RunSentry(kSeccompOnly, {"/bin/true"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(HostStores(sentry), std::vector<std::string>{});
  EXPECT_EQ(HostStores(), std::vector<std::string>{});
  std::ifstream mounts("/proc/self/mountinfo");
  std::string text((std::istreambuf_iterator<char>(mounts)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.find(its_store[0]), std::string::npos) << text;
  EXPECT_EQ(SeccompOnlyProcesses(), std::vector<std::string>{});
}

// Without a mount view the kernel finds an exec's interpreter (PT_INTERP) in
// the host's tree. An in-memory program naming a host file outside the lower
// layer as its interpreter is killed before it runs; under namespaces the
// same name does not exist for the kernel either.
TEST(SeccompOnlyTest, ExecMappingAHostFileOutsideTheLowerLayerIsKilled) {
  char dir[] = "/tmp/sxXXXXXX";  // short: the name must fit where ld.so's was
  ASSERT_NE(mkdtemp(dir), nullptr);
  chmod(dir, 0755);
  std::string interp = std::string(dir) + "/ld.so";
  std::filesystem::copy_file("/lib64/ld-linux-x86-64.so.2", interp);
  chmod(interp.c_str(), 0755);
  ASSERT_LT(interp.size(), std::strlen("/lib64/ld-linux-x86-64.so.2"));
  std::string script =
      "import os, subprocess, sys\n"
      "d = open('/bin/true', 'rb').read()\n"
      "old, new = b'/lib64/ld-linux-x86-64.so.2', sys.argv[1].encode()\n"
      "assert d.count(old) == 1\n"
      "open('/tmp/p', 'wb').write(d.replace(old, new + b'\\0' * (len(old) - len(new))))\n"
      "os.chmod('/tmp/p', 0o755)\n"
      "try:\n"
      "    print('ran', subprocess.run(['/tmp/p']).returncode)\n"
      "except OSError as e:\n"
      "    print('exec failed', e.errno)\n";
  // The sentry's check, the wall where the kernel has no Landlock...
  ProcessResult r =
      RunSentry({"--no-namespaces", "--no-landlock"}, {"/usr/bin/python3", "-c", script, interp});
  EXPECT_EQ(r.exit_code, 125) << Describe(r);
  EXPECT_NE(r.err.find("exec mapped a host file outside the sandbox's lower layer"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out.find("ran 0"), std::string::npos) << r.out;
  // ...and where it has: the kernel's open of the interpreter fails first
  // (EACCES: the guest's domain allows exec only beneath the lower roots and
  // the store; tests/security/landlock_test.cc).
  if (syscall(444, nullptr, 0, 1u) > 0) {
    ProcessResult landlock = RunSentry(kSeccompOnly, {"/usr/bin/python3", "-c", script, interp});
    EXPECT_EQ(landlock.exit_code, 0) << Describe(landlock);
    EXPECT_EQ(landlock.out, "exec failed 13\n");
  }
  ProcessResult ns = RunSentry({}, {"/usr/bin/python3", "-c", script, interp});
  EXPECT_EQ(ns.exit_code, 0) << Describe(ns);
  EXPECT_EQ(ns.out, "exec failed 2\n");  // ENOENT: the mount view has no such file
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sentry::testing
