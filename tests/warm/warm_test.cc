// Warm interpreters (`sentry pool --python`, `sentry run --pool`): a script
// run in a warm interpreter has the result of a cold run, no interpreter
// serves two runs, nothing of an earlier run is seen by a later one, and a
// run the pool cannot serve, or that finds no pool, runs cold.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/e2e_util.h"

namespace sentry::testing {
namespace {

using nlohmann::json;

// A `sentry pool --python` for one test, stopped (SIGTERM) at its end.
class WarmPool final {
 public:
  explicit WarmPool(int size = 2, const std::string& preload = "")
      : socket_(dir_.path() + "/pool.sock"), log_(dir_.path() + "/log") {
    std::vector<std::string> args = {SentryBinary(), "pool",   "--python",          "--socket",
                                     socket_,        "--size", std::to_string(size)};
    if (!preload.empty()) args.insert(args.end(), {"--preload", preload});
    pid_ = fork();
    if (pid_ == 0) {
      // A test that dies leaves no pool behind (holding ctest's pipes).
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 2);
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    // A run that comes before an interpreter is warm waits for one: the
    // socket is enough.
    for (int i = 0; i < 500 && !Exists(socket_); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ~WarmPool() {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
  std::vector<std::string> Flags(std::vector<std::string> more = {}) const {
    more.insert(more.begin(), {"--pool", socket_});
    return more;
  }
  std::string log() const { return ReadHostFile(log_); }

 private:
  static bool Exists(const std::string& p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0;
  }
  TempDir dir_;
  std::string socket_, log_;
  pid_t pid_ = -1;
};

struct Case {
  std::string name;
  std::string script;  // written as job.py
  std::vector<std::string> args;
  std::string stdin_text;
  std::vector<std::string> flags;
};

// The script, run as `python3 job.py ARGS` with --json, cold or in the pool.
ProcessResult RunCase(const Case& c, const std::vector<std::string>& pool_flags) {
  TempDir dir;
  dir.Write("job.py", c.script);
  dir.Write("in.txt", c.stdin_text);
  std::vector<std::string> flags = pool_flags;
  flags.insert(flags.end(), {"--json", "--stdin", "in.txt"});
  flags.insert(flags.end(), c.flags.begin(), c.flags.end());
  std::vector<std::string> cmd = {"python3", "job.py"};
  cmd.insert(cmd.end(), c.args.begin(), c.args.end());
  return SentryIn(dir.path(), flags, cmd);
}

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      {"print", "print(48271 * 6933)\nprint('ünï', end='')\n", {}, "", {}},
      {"exception", "import sys\nprint('before')\ndef f(x):\n    return 1 / x\nf(0)\n", {}, "", {}},
      {"syntax_error", "print('never')\ndef (:\n", {}, "", {}},
      {"exit_code", "import sys\nprint('x', file=sys.stderr)\nsys.exit(7)\n", {}, "", {}},
      {"exit_message", "raise SystemExit('bye')\n", {}, "", {}},
      {"exit_none", "import sys\nsys.exit()\n", {}, "", {}},
      {"stdin",
       "import sys\nprint(input())\nprint(repr(sys.stdin.read()))\n",
       {},
       "first line\nrest\nof it\n",
       {}},
      {"file",
       "open('out.txt', 'w').write('kept')\nprint(open('out.txt').read())\n"
       "import os\nos.makedirs('/tmp/a/b')\nprint(sorted(os.listdir('/tmp')))\n",
       {},
       "",
       {}},
      {"argv",
       "import sys, os\nprint(sys.argv, sys.orig_argv, __file__, sys.path[0], os.getcwd())\n",
       {"one", "two words", "--flag"},
       "",
       {}},
      {"env",
       "import os\nprint(sorted(os.environ.items()))\nimport subprocess\n"
       "print(subprocess.run(['/usr/bin/env'], capture_output=True, text=True).stdout)\n",
       {},
       "",
       {"--env", "FOO=bar", "--env", "EMPTY="}},
      {"main_module",
       "import sys\nprint(list(globals()))\nprint(__name__, __doc__, __package__, __spec__)\n"
       "print(type(__loader__).__name__, __cached__, __annotations__)\n"
       "print(sorted(sys.modules))\nprint(sys.flags)\n"
       "print(sys.stdin.encoding, sys.stdout.encoding, sys.stderr.errors)\n"
       "print(sys.stdout.line_buffering, sys.stderr.line_buffering)\n",
       {},
       "",
       {}},
      {"workdir",
       "import os, sys\nprint(os.getcwd(), sys.path[0], __file__)\n",
       {},
       "",
       {"--workdir", "/tmp/work"}},
      {"excepthook_and_atexit",
       "import atexit, sys\natexit.register(lambda: print('atexit ran'))\n"
       "class E(Exception): pass\nraise E('custom')\n",
       {},
       "",
       {}},
      {"compile_and_ast",
       "import ast, sys\nprint(ast.dump(ast.parse('x = 1')))\n"
       "print(eval(compile('1 + 1', '<s>', 'eval')), '_ast' in sys.modules)\n"
       "print(sorted(sys.modules))\n",
       {},
       "",
       {}},
      {"affinity", "import os\nprint(sorted(os.sched_getaffinity(0)))\n", {}, "", {}},
      // The exit: what a cold run's Py_FinalizeEx does that a script sees
      // (see finish in warm_bootstrap.cc).
      {"exit_runs_threads_atexit_and_finalizers",
       "import atexit, threading, time, weakref\n"
       "class D:\n    def __init__(self, n): self.n = n\n"
       "    def __del__(self): print('del', self.n)\n"
       "first = D('first')\nsecond = D('second')\nitems = [D('in a list')]\n"
       "weakref.finalize(first, print, 'finalize ran')\n"
       "atexit.register(print, 'atexit ran')\n"
       "def work():\n    time.sleep(0.05)\n    print('thread done')\n"
       "threading.Thread(target=work).start()\nprint('end of script')\n",
       {},
       "",
       {}},
      {"exit_restores_the_builtins",
       "import builtins\nnow = set(builtins.__dict__)\nbuiltins.mine = 1\n"
       "class D:\n    def __del__(self):\n"
       "        print(sorted(now - set(builtins.__dict__)), sorted(set(builtins.__dict__) - now))\n"
       "        try:\n            open('x', 'w')\n"
       "        except NameError as e:\n            print(e)\n"
       "d = D()\n",
       {},
       "",
       {}},
      {"keyboard_interrupt_runs_atexit",
       "import atexit, os\natexit.register(print, 'atexit ran')\n"
       "if os.fork() == 0:\n    os._exit(0)\nos.wait()\nraise KeyboardInterrupt\n",
       {},
       "",
       {}},
      {"exit_status_wraps", "import sys\nprint('x', end='')\nsys.exit(300)\n", {}, "", {}},
      {"exit_true", "raise SystemExit(True)\n", {}, "", {}},
      {"exit_negative", "import sys\nsys.exit(-1)\n", {}, "", {}},
      {"exit_with_a_daemon_thread",
       "import atexit, threading, time\natexit.register(print, 'atexit ran')\n"
       "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
       "print('main done')\n",
       {},
       "",
       {}},
      {"exit_flush_fails",
       "import sys\nsys.stdout = open('/dev/full', 'w')\nprint('lost')\n",
       {},
       "",
       {}},
      {"shadowed_builtins",
       "type = isinstance = len = list = 1\nSystemExit = KeyError = None\nimport builtins\n"
       "builtins.type = builtins.isinstance = None\nraise ValueError('shadowed')\n",
       {},
       "",
       {}},
      {"chained",
       "try:\n    {}['k']\nexcept KeyError as e:\n    raise ValueError('v') from e\n",
       {},
       "",
       {}},
  };
  return cases;
}

TEST(WarmTest, SameResultAsCold) {
  WarmPool pool(2);
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    ProcessResult cold = RunCase(c, {});
    ProcessResult warm = RunCase(c, pool.Flags());
    ASSERT_FALSE(cold.out.empty()) << Describe(cold);
    ASSERT_FALSE(warm.out.empty()) << Describe(warm);
    json a = json::parse(cold.out), b = json::parse(warm.out);
    EXPECT_EQ(warm.exit_code, cold.exit_code);
    EXPECT_EQ(b["stdout"], a["stdout"]);
    EXPECT_EQ(b["stderr"], a["stderr"]);
    EXPECT_EQ(b["exitCode"], a["exitCode"]);
    EXPECT_EQ(b["signal"], a["signal"]);
    EXPECT_EQ(b["error"], a["error"]);
    // Served warm: no notice of a cold start.
    EXPECT_EQ(warm.err.find("cold start"), std::string::npos) << warm.err;
  }
}

TEST(WarmTest, AMissingScriptFailsAsCold) {
  WarmPool pool(1);
  TempDir dir;
  ProcessResult cold = SentryIn(dir.path(), {"--json", "--no-copy-script"}, {"python3", "no.py"});
  ProcessResult warm =
      SentryIn(dir.path(), pool.Flags({"--json", "--no-copy-script"}), {"python3", "no.py"});
  EXPECT_EQ(warm.exit_code, 2) << Describe(warm);
  EXPECT_EQ(json::parse(warm.out)["stderr"], json::parse(cold.out)["stderr"]);
}

// python3 -u (a streamed serve run's form): the streams are as -u makes
// them, warm or cold.
TEST(WarmTest, UnbufferedRunsAsCold) {
  WarmPool pool(1);
  const std::string code =
      "import sys\n"
      "for s in (sys.stdout, sys.stderr):\n"
      "    print(type(s.buffer).__name__, s.buffer.name, s.mode, s.encoding, s.errors,\n"
      "          s.line_buffering, s.write_through, s is sys.__stdout__ or s is sys.__stderr__)\n"
      "print(sys.argv, sys.orig_argv)\nsys.stdout.write('no newline')\n"
      "print('err', file=sys.stderr)\n";
  std::vector<std::string> cmd = {"/usr/bin/python3", "-u", "-c", code, "arg"};
  TempDir dir;
  ProcessResult cold = SentryIn(dir.path(), {"--json"}, cmd);
  ProcessResult warm = SentryIn(dir.path(), pool.Flags({"--json"}), cmd);
  json a = json::parse(cold.out), b = json::parse(warm.out);
  EXPECT_EQ(b["stdout"], a["stdout"]);
  EXPECT_EQ(b["stderr"], a["stderr"]);
  EXPECT_EQ(b["exitCode"], 0);
  EXPECT_EQ(warm.err.find("cold start"), std::string::npos) << warm.err;
  // And a script, with -u: warm (its module preloaded), the same output.
  WarmPool json_pool(1, "json");
  dir.Write("job.py", "import sys\nprint('json' in sys.modules, sys.stdout.write_through)\n");
  ProcessResult script =
      SentryIn(dir.path(), json_pool.Flags({"--json"}), {"python3", "-u", "job.py"});
  EXPECT_EQ(json::parse(script.out)["stdout"], "True True\n") << script.out << script.err;
}

TEST(WarmTest, DashCRunsAsCold) {
  WarmPool pool(1);
  std::vector<std::string> cmd = {
      "/usr/bin/python3", "-c",
      "import sys\nprint(sys.argv, sys.path[0], repr(__file__) if '__file__' in dir() else '-')\n"
      "print(list(globals()))\n1/0\n",
      "arg"};
  TempDir dir;
  ProcessResult cold = SentryIn(dir.path(), {"--json"}, cmd);
  ProcessResult warm = SentryIn(dir.path(), pool.Flags({"--json"}), cmd);
  json a = json::parse(cold.out), b = json::parse(warm.out);
  EXPECT_EQ(b["stdout"], a["stdout"]);
  EXPECT_EQ(b["stderr"], a["stderr"]);
  EXPECT_EQ(b["exitCode"], 1);
}

// Run A leaves a file, an environment variable, a process, sockets and a
// Python global behind; run B, in the pool of one, sees none of them.
TEST(WarmTest, AnEarlierRunLeavesNothing) {
  WarmPool pool(1);
  const std::string leave =
      "import os, socket, subprocess, builtins, sys\n"
      "open('/tmp/leak', 'w').write('x'); open('/home/sandbox/leak', 'w').write('x')\n"
      "os.environ['LEAK'] = '1'\n"
      "builtins.LEAK = 1; sys.modules['leak'] = sys\n"
      "subprocess.Popen(['/bin/sleep', '30'], start_new_session=True)\n"
      "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
      "s.bind(('127.0.0.1', 47291)); s.listen()\n"
      "u = socket.socket(socket.AF_UNIX); u.bind('\\0sentry-leak'); u.listen()\n"
      "print('left')\n";
  const std::string look =
      "import os, socket, builtins, sys\n"
      "seen = []\n"
      "for p in ('/tmp/leak', '/home/sandbox/leak'):\n"
      "    if os.path.exists(p): seen.append(p)\n"
      "if 'LEAK' in os.environ: seen.append('env')\n"
      "if hasattr(builtins, 'LEAK') or 'leak' in sys.modules: seen.append('global')\n"
      "for pid in os.listdir('/proc'):\n"
      "    if pid.isdigit():\n"
      "        try: cmd = open('/proc/%s/cmdline' % pid).read()\n"
      "        except OSError: continue\n"
      "        if 'sleep' in cmd: seen.append('process')\n"
      "try:\n"
      "    socket.create_connection(('127.0.0.1', 47291), timeout=1); seen.append('tcp')\n"
      "except OSError: pass\n"
      "u = socket.socket(socket.AF_UNIX)\n"
      "try: u.connect('\\0sentry-leak'); seen.append('unix')\n"
      "except OSError: pass\n"
      "print('seen', seen)\n";
  for (int i = 0; i < 3; ++i) {
    ProcessResult a = RunSentry(pool.Flags({"--env", "LEAK2=1"}), {"python3", "-c", leave});
    EXPECT_EQ(a.out, "left\n") << Describe(a);
    ProcessResult b = RunSentry(pool.Flags(), {"python3", "-c", look});
    EXPECT_EQ(b.out, "seen []\n") << Describe(b);
    EXPECT_EQ(b.err, "") << Describe(b);
  }
}

// The channel that brought the request holds the run's own and nothing
// more: stdin after it is the run's stdin, the bootstrap's frame (the one
// thing of it a script can reach) holds only this run's request, and the
// pool's socket is not in the sandbox.
TEST(WarmTest, TheChannelHoldsOnlyTheRunsOwn) {
  WarmPool pool(1);
  const std::string code =
      "import os, sys, socket\n"
      "print(repr(sys.stdin.read()))\n"
      "print(os.read(0, 100))\n"
      "f = sys._getframe(1)\n"
      "print(sorted(k for k in f.f_locals if not k.startswith('__')))\n"
      "print(os.path.exists(sys.argv[1]))\n"
      "s = socket.socket(socket.AF_UNIX)\n"
      "try:\n"
      "    s.connect(sys.argv[1]); print('reached the pool')\n"
      "except OSError as e:\n"
      "    print('no pool', e.errno)\n";
  TempDir dir;
  dir.Write("in.txt", "only this\n");
  ProcessResult r = SentryIn(dir.path(), pool.Flags({"--stdin", "in.txt"}),
                             {"python3", "-c", code, pool.Flags()[1]});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  // The frame's own: the code, its globals, and builtins bound before it ran.
  EXPECT_EQ(r.out,
            "'only this\\n'\nb''\n['BaseException', 'KeyboardInterrupt', 'SystemExit', 'code', "
            "'compile', 'exec', 'g', 'int', 'isinstance', 'sys', 'type']\nFalse\nno pool 2\n")
      << Describe(r);
}

// Each run is a new interpreter: the hash seed (random per process) differs,
// and the interpreter's own start time is after the previous run's end.
TEST(WarmTest, NoInterpreterServesTwice) {
  WarmPool pool(1);
  std::set<std::string> seeds;
  for (int i = 0; i < 4; ++i) {
    ProcessResult r = RunSentry(pool.Flags(), {"python3", "-c", "print(hash('sentry'))"});
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    seeds.insert(r.out);
  }
  EXPECT_EQ(seeds.size(), 4u);
}

TEST(WarmTest, WhatAWarmInterpreterCannotRunRunsCold) {
  WarmPool pool(1);
  ProcessResult echo = RunSentry(pool.Flags(), {"/bin/echo", "hi"});
  EXPECT_EQ(echo.exit_code, 0) << Describe(echo);
  EXPECT_EQ(echo.out, "hi\n");
  EXPECT_NE(echo.err.find("a cold start"), std::string::npos) << echo.err;
  ProcessResult flag = RunSentry(pool.Flags(), {"python3", "-B", "-c", "print(1)"});
  EXPECT_EQ(flag.out, "1\n") << Describe(flag);
  EXPECT_NE(flag.err.find("a cold start"), std::string::npos) << flag.err;
  ProcessResult env =
      RunSentry(pool.Flags({"--env", "PYTHONHASHSEED=0"}), {"python3", "-c", "print(hash('a'))"});
  ProcessResult cold =
      RunSentry({"--env", "PYTHONHASHSEED=0"}, {"python3", "-c", "print(hash('a'))"});
  EXPECT_EQ(env.out, cold.out) << Describe(env);
  // No pool at all: cold, never a failure.
  ProcessResult none =
      RunSentry({"--pool", "/nonexistent/pool.sock"}, {"python3", "-c", "print(2)"});
  EXPECT_EQ(none.out, "2\n") << Describe(none);
}

// A guest that stops reading a long stdin: the relay's write fails with
// EPIPE, which must not end the sentry (SIGPIPE), cold or warm, and the
// relay stops there: the rest of the caller's stdin is left to its writer,
// which gets EPIPE as it does when a native reader exits.
TEST(WarmTest, AGuestThatStopsReadingStdinEndsWell) {
  WarmPool pool(1);
  std::string input(4 << 20, 'y');
  const std::string code = "import sys; print(len(sys.stdin.read(10)))";
  ProcessResult native = RunProcess({"/usr/bin/python3", "-c", code}, input);
  ASSERT_EQ(native.out, "10\n");
  ASSERT_LT(native.input_written, input.size());
  for (const auto& flags : {std::vector<std::string>{}, pool.Flags()}) {
    std::vector<std::string> f = flags;
    f.insert(f.end(), {"--stdin", "-"});
    ProcessResult r = RunSentry(f, {"python3", "-c", code}, input);
    EXPECT_EQ(r.exit_code, 0) << Describe(r);
    EXPECT_EQ(r.out, "10\n");
    EXPECT_LT(r.input_written, input.size()) << Describe(r);
  }
}

// A guest that closes its stdin and runs on: the relay stops at once (before,
// it read the caller's stdin to its end, a CPU's worth for an endless one).
TEST(WarmTest, AGuestThatClosesStdinStopsTheRelay) {
  WarmPool pool(1);
  std::string input(4 << 20, 'y');
  const std::string code = "import os, time; os.close(0); time.sleep(0.3); print('done')";
  for (const auto& flags : {std::vector<std::string>{}, pool.Flags()}) {
    std::vector<std::string> f = flags;
    f.insert(f.end(), {"--stdin", "-"});
    ProcessResult r = RunSentry(f, {"python3", "-c", code}, input);
    EXPECT_EQ(r.exit_code, 0) << Describe(r);
    EXPECT_EQ(r.out, "done\n");
    EXPECT_LT(r.input_written, input.size()) << Describe(r);
  }
}

TEST(WarmTest, MoreRunsThanInterpretersAllRun) {
  WarmPool pool(1);
  std::vector<std::thread> threads;
  std::vector<ProcessResult> results(3);
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      results[i] =
          RunSentry(pool.Flags(), {"python3", "-c", "import time; time.sleep(0.3); print('ok')"});
    });
  }
  for (std::thread& t : threads) t.join();
  for (const ProcessResult& r : results) EXPECT_EQ(r.out, "ok\n") << Describe(r);
}

TEST(WarmTest, PreloadedModulesAreImported) {
  WarmPool pool(1, "json,decimal");
  const std::string code = "import sys; print('json' in sys.modules, 'decimal' in sys.modules)";
  ProcessResult warm = RunSentry(pool.Flags(), {"python3", "-c", code});
  EXPECT_EQ(warm.out, "True True\n") << Describe(warm) << pool.log();
  ProcessResult cold = RunSentry({}, {"python3", "-c", code});
  EXPECT_EQ(cold.out, "False False\n") << Describe(cold);
}

// --trace on a warm run shows the run's own trapped calls (from its request
// on: the interpreter's start was the pool's) and the exit, on stderr.
TEST(WarmTest, TraceShowsTheRunsCalls) {
  WarmPool pool(1, "json");
  // A file just made: its first stat traps (fast metadata answers the next).
  const std::string code =
      "import os, sys; open('/tmp/w', 'w').close(); os.stat('/tmp/w'); "
      "print('json' in sys.modules)";
  ProcessResult warm = RunSentry(pool.Flags({"--trace"}), {"python3", "-c", code});
  EXPECT_EQ(warm.out, "True\n") << Describe(warm) << pool.log();  // warm indeed
  EXPECT_NE(warm.err.find("newfstatat(AT_FDCWD, \"/tmp/w\""), std::string::npos) << warm.err;
  EXPECT_NE(warm.err.find("+++ exited with 0 +++"), std::string::npos) << warm.err;
  EXPECT_EQ(warm.err.find("python3.11"), std::string::npos) << "the start is not this run's";
}

TEST(WarmTest, ABadPreloadStopsThePool) {
  ProcessResult r = Sentry(
      {"pool", "--python", "--socket", "/tmp/sentry-warm-bad.sock", "--preload", "no_such_mod"});
  EXPECT_EQ(r.exit_code, 125) << Describe(r);
  EXPECT_NE(r.err.find("failed to import"), std::string::npos) << r.err;
  ProcessResult bad = Sentry({"pool", "--python", "--socket", "/tmp/x.sock", "--preload", "os;x"});
  EXPECT_EQ(bad.exit_code, 125);
}

TEST(WarmTest, LimitsAreTheRequests) {
  WarmPool pool(1);
  ProcessResult r = RunSentry(pool.Flags({"--timeout", "1", "--json"}),
                              {"python3", "-c", "import time; time.sleep(5)"});
  EXPECT_EQ(r.exit_code, 124) << Describe(r);
  ProcessResult nofile = RunSentry(
      pool.Flags({"--nofile", "64"}),
      {"python3", "-c", "import resource; print(resource.getrlimit(resource.RLIMIT_NOFILE))"});
  EXPECT_EQ(nofile.out, "(64, 64)\n") << Describe(nofile);
}

}  // namespace
}  // namespace sentry::testing
