// The rootless attacks: a guest of sentry run by an ordinary user goes for
// what that user owns outside the sandbox (its secrets, its processes, the
// sentry, its sockets, its files beside a :rw mount, its process budget),
// with namespaces and without. Each is checked from the host side too.
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "tests/rootless/rootless_util.h"
#include "tests/util/json_read.h"

namespace sentry::testing {
namespace {

struct Mode {
  Caller caller;
  bool namespaces;
};

class RootlessAttack : public ::testing::TestWithParam<Mode> {
 protected:
  std::vector<std::string> Flags(std::vector<std::string> more = {}) const {
    if (!GetParam().namespaces) more.insert(more.begin(), "--no-namespaces");
    // (A caller with a range is in subordinate-range mode: the default.)
    return more;
  }
  const Caller& c() const { return GetParam().caller; }
  // The same, as words for a shell line.
  std::string Mode() const {
    std::string out;
    for (const std::string& f : Flags()) out += f + " ";
    return out;
  }
};

std::string Name(const ::testing::TestParamInfo<Mode>& info) {
  std::string who = info.param.caller.name.empty()                ? "self"
                    : info.param.caller.name == "sentry-rl-subid" ? "with_subid_range"
                                                                  : "single_id";
  return who + (info.param.namespaces ? "" : "_no_namespaces");
}

std::vector<Mode> Modes() {
  std::vector<Mode> out;
  for (const Caller& c : RootlessCallers()) {
    out.push_back({c, true});
    out.push_back({c, false});
  }
  return out;
}

TEST_P(RootlessAttack, CallersOwnSecretStaysOutOfReach) {
  CallerDir dir(c());
  std::string secret = dir.Write("secret.txt", "TOP-SECRET-ROOTLESS\n", 0600);
  dir.Write("project/readme", "ok\n");
  // By its path, and through a -v of a sibling directory (.., symlinks).
  std::string code = absl::StrCat(
      "import os\n"
      "for p in ['",
      secret,
      "', '/work/../secret.txt', '/work/link/secret.txt']:\n"
      "  try:\n"
      "    print('READ', open(p).read())\n"
      "  except OSError as e:\n"
      "    print('no', e.errno)\n"
      "try:\n"
      "  os.symlink('",
      dir.path(),
      "', '/work/link')\n"
      "  print('READ', open('/work/link/secret.txt').read())\n"
      "except OSError as e:\n"
      "  print('no', e.errno)\n");
  ProcessResult r = SentryAs(c(), Flags({"-v", dir.path() + "/project:/work:rw"}),
                             {"/usr/bin/python3", "-c", code});
  EXPECT_EQ(r.out.find("TOP-SECRET"), std::string::npos) << Describe(r);
  EXPECT_EQ(r.out.find("READ"), std::string::npos) << Describe(r);
}

TEST_P(RootlessAttack, CallersProcessesAndTheSentryCannotBeReached) {
  // A process of the caller's, outside the sandbox; the sentry's own pid is
  // written by the shell that becomes it (exec keeps the pid).
  CallerDir dir(c());
  std::string pids = dir.path() + "/pids";
  mkdir(pids.c_str(), 0755);
  chown(pids.c_str(), c().uid, c().gid);
  ProcessResult started = RunAsCaller(
      c(), {"/bin/sh", "-c",
            absl::StrCat("setsid sleep 120 >/dev/null 2>&1 & echo $! > ", pids, "/victim")});
  ASSERT_EQ(started.exit_code, 0) << Describe(started);
  pid_t victim = std::stoi(ReadFileOr(pids + "/victim"));
  ASSERT_EQ(kill(victim, 0), 0);
  // The guest ptraces and reads the memory of the victim, the sentry, its
  // parents and every low pid; then signals all of them, and -1.
  std::string guest =
      "import ctypes, os, signal, sys\n"
      "libc = ctypes.CDLL(None, use_errno=True)\n"
      "me = os.getpid()\n"
      "named = [int(open('/pids/' + n).read()) for n in ('victim', 'sentry')]\n"
      "targets = named + [os.getppid(), 1] + list(range(2, 5000))\n"
      "class iov(ctypes.Structure): _fields_ = [('b', ctypes.c_void_p), ('n', ctypes.c_size_t)]\n"
      "buf = ctypes.create_string_buffer(8)\n"
      "hit = []\n"
      "for pid in targets:\n"
      "  if pid == me: continue\n"
      "  if libc.ptrace(16, pid, 0, 0) == 0: hit.append(('ptrace', pid))\n"
      "  l = iov(ctypes.addressof(buf), 8); rm = iov(0x400000, 8)\n"
      "  if libc.process_vm_readv(pid, ctypes.byref(l), 1, ctypes.byref(rm), 1, 0) > 0:\n"
      "    hit.append(('vm_readv', pid))\n"
      "print('hits', hit, named, flush=True)\n"
      "for pid in named:\n"
      "  try:\n"
      "    os.kill(pid, signal.SIGKILL); print('KILLED', pid, flush=True)\n"
      "  except OSError as e:\n"
      "    print('no', e.errno, flush=True)\n"
      "for pid in [os.getppid()] + list(range(2, 5000)):\n"
      "  if pid != me:\n"
      "    try: os.kill(pid, signal.SIGKILL)\n"
      "    except OSError: pass\n"
      "try: os.kill(-1, signal.SIGKILL)\n"
      "except OSError: pass\n";
  std::string script = absl::StrCat("echo $$ > ", pids, "/sentry; exec ", SentryBinary(),
                                    " run --json --timeout 60 ", Mode(), "-v ", pids,
                                    ":/pids:ro -- /usr/bin/python3 -c \"$G\"");
  ProcessResult r = RunAsCaller(c(), {"/bin/sh", "-c", script}, {"G=" + guest}, "", 120);
  // The victim lives, and the sentry lived to write its result (the guest
  // may have killed itself: a guest pid is among those it signalled).
  EXPECT_EQ(kill(victim, 0), 0) << "the caller's process was killed\n" << Describe(r);
  auto j = ParseJson(r.out);
  ASSERT_TRUE(j.has_value()) << Describe(r);
  std::string out = Str(At(*j, "stdout"));
  EXPECT_NE(out.find("hits []"), std::string::npos) << out;
  EXPECT_EQ(out.find("KILLED"), std::string::npos) << out;
  kill(victim, SIGKILL);
}

TEST_P(RootlessAttack, CallersUnixSocketsCannotBeReached) {
  CallerDir dir(c());
  std::string path = dir.path() + "/agent.sock";
  std::string abstract = absl::StrCat("sentry-rl-", getpid(), "-", GetParam().namespaces);
  // A listener of the caller's, on a path and on an abstract name: it
  // counts what connects.
  std::string listener = absl::StrCat(
      "import socket, sys, os, select\n"
      "a = socket.socket(socket.AF_UNIX); a.bind(sys.argv[1]); a.listen(8)\n"
      "b = socket.socket(socket.AF_UNIX); b.bind('\\0' + sys.argv[2]); b.listen(8)\n"
      "open(sys.argv[1] + '.ready', 'w').close()\n"
      "n = 0\n"
      "while True:\n"
      "  r, _, _ = select.select([a, b], [], [], 30)\n"
      "  if not r: break\n"
      "  for s in r:\n"
      "    c, _ = s.accept(); n += 1\n"
      "    open(sys.argv[1] + '.count', 'w').write(str(n))\n");
  std::string script =
      absl::StrCat("/usr/bin/python3 -c \"$L\" ", path, " ", abstract, " & lp=$!; ",
                   "for i in $(seq 100); do [ -e ", path, ".ready ] && break; sleep 0.1; done; ",
                   SentryBinary(), " run ", Mode(), "-- /usr/bin/python3 -c \"$G\"; kill $lp");
  std::string guest = absl::StrCat(
      "import socket\n"
      "for addr in ['",
      path, "', '\\0", abstract,
      "']:\n"
      "  s = socket.socket(socket.AF_UNIX)\n"
      "  try:\n"
      "    s.connect(addr); print('CONNECTED', repr(addr))\n"
      "  except OSError as e:\n"
      "    print('no', e.errno)\n");
  ProcessResult r =
      RunAsCaller(c(), {"/bin/sh", "-c", script}, {"L=" + listener, "G=" + guest}, "", 120);
  EXPECT_EQ(r.out.find("CONNECTED"), std::string::npos) << Describe(r);
  struct stat st;
  EXPECT_NE(stat((path + ".count").c_str(), &st), 0) << "the caller's listener accepted";
}

TEST_P(RootlessAttack, NoWriteOutsideTheReadWriteMount) {
  CallerDir dir(c());
  dir.Write("work/in.txt", "in\n");
  std::string code = absl::StrCat(
      "import os\n"
      "for p in ['/work/../outside1', '",
      dir.path(),
      "/outside2', '/work/up/outside3']:\n"
      "  try:\n"
      "    open(p, 'w').write('x'); print('WROTE', p)\n"
      "  except OSError as e:\n"
      "    print('no', e.errno)\n"
      "try:\n"
      "  os.symlink('",
      dir.path(),
      "', '/work/up')\n"
      "  open('/work/up/outside4', 'w').write('x'); print('WROTE 4')\n"
      "except OSError as e:\n"
      "  print('no', e.errno)\n"
      "try:\n"
      "  os.rename('/work/in.txt', '/tmp/moved'); print('moved out')\n"
      "except OSError as e:\n"
      "  print('no', e.errno)\n");
  ProcessResult r =
      SentryAs(c(), Flags({"-v", dir.path() + "/work:/work:rw"}), {"/usr/bin/python3", "-c", code});
  for (const char* name : {"outside1", "outside2", "outside3", "outside4"}) {
    struct stat st;
    EXPECT_NE(stat((dir.path() + "/" + name).c_str(), &st), 0) << name << "\n" << Describe(r);
  }
}

TEST_P(RootlessAttack, ProcessBudgetOfTheCallerSurvives) {
  // The caller's RLIMIT_NPROC: what it runs now plus a margin. The guest,
  // with the default pids cap (128, above the margin), forks all it can
  // while the caller forks beside it; the guest gets half of what was left
  // (nproc_budget.h), so the caller's fork succeeds, during and after.
  ProcessResult count =
      RunAsCaller(c(), {"/bin/sh", "-c", "ps -u $(id -u) -L --no-headers | wc -l"});
  long budget = std::stol(count.out) + 64;
  const char* bomb =
      "import os, time\n"
      "n = 0\n"
      "while n < 5000:\n"
      "  try:\n"
      "    if os.fork() == 0:\n"
      "      time.sleep(5); os._exit(0)\n"
      "    n += 1\n"
      "  except OSError:\n"
      "    break\n"
      "print('forked', n)\n";
  // The caller's own program forks once the guest holds all it got.
  std::string script = absl::StrCat(
      SentryBinary(), " run --timeout=20 ", Mode(),
      "-- /usr/bin/python3 -c \"$B\" & sleep 3; /bin/true & wait $!; echo during=$?; wait");
  ProcessResult r =
      RunAsCaller(c(), {"/bin/sh", "-c", script}, {std::string("B=") + bomb}, "", 60, budget);
  EXPECT_NE(r.out.find("during=0"), std::string::npos) << Describe(r);
  long forked = -1;
  if (size_t at = r.out.find("forked "); at != std::string::npos) {
    forked = std::stol(r.out.substr(at + 7));
  }
  EXPECT_GE(forked, 8) << "the guest itself should get its share\n" << Describe(r);
  EXPECT_LE(forked, 40) << Describe(r);
  EXPECT_NE(r.err.find("half of what uid"), std::string::npos) << Describe(r);
  ProcessResult after =
      RunAsCaller(c(), {"/bin/sh", "-c", "/bin/true & wait; echo forked-ok"}, {}, "", 30, budget);
  EXPECT_EQ(after.out, "forked-ok\n") << Describe(after);
}

TEST_P(RootlessAttack, ChangesNameOnlyTheGuestsOwnProcessWithoutNamespaces) {
  // Without namespaces the guest is the caller's uid: a pid it checked
  // could be reused by another of the caller's processes before the kernel
  // ran the call, so a change may name the calling process alone (sys_pid.cc).
  // With namespaces the child is the sandbox's, and the change runs.
  const char* code =
      "import os, resource, time\n"
      "pid = os.fork()\n"
      "if pid == 0:\n"
      "  time.sleep(5); os._exit(0)\n"
      "def t(name, f):\n"
      "  try:\n"
      "    f(); print(name, 'ok')\n"
      "  except OSError as e:\n"
      "    print(name, e.errno)\n"
      "t('self-nice', lambda: os.setpriority(os.PRIO_PROCESS, 0, 1))\n"
      "t('self-prlimit', lambda: resource.prlimit(os.getpid(), resource.RLIMIT_NOFILE, (256, "
      "256)))\n"
      "t('self-affinity', lambda: os.sched_setaffinity(0, os.sched_getaffinity(0)))\n"
      "t('child-nice', lambda: os.setpriority(os.PRIO_PROCESS, pid, 2))\n"
      "t('child-prlimit', lambda: resource.prlimit(pid, resource.RLIMIT_NOFILE, (128, 128)))\n"
      "t('child-prlimit-get', lambda: resource.prlimit(pid, resource.RLIMIT_NOFILE))\n"
      "t('child-sched', lambda: os.sched_setscheduler(pid, os.SCHED_OTHER, os.sched_param(0)))\n"
      "os.kill(pid, 9); os.wait()\n";
  ProcessResult r = SentryAs(c(), Flags(), {"/usr/bin/python3", "-c", code});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  for (const char* self :
       {"self-nice ok", "self-prlimit ok", "self-affinity ok", "child-prlimit-get ok"}) {
    EXPECT_NE(r.out.find(self), std::string::npos) << self << "\n" << Describe(r);
  }
  for (const char* name : {"child-nice", "child-prlimit ", "child-sched"}) {
    std::string want = absl::StrCat(name, GetParam().namespaces ? " ok" : " 1");  // EPERM
    absl::StrReplaceAll({{"  ", " "}}, &want);
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << Describe(r);
  }
}

INSTANTIATE_TEST_SUITE_P(Callers, RootlessAttack, ::testing::ValuesIn(Modes()), Name);

}  // namespace
}  // namespace sentry::testing
