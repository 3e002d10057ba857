// Python under sentry: the issue's examples, scripts given on the command line,
// and the standard library, each compared with a native run of the same script.
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "tests/e2e/e2e_util.h"

namespace sentry::testing {
namespace {

TEST(PythonTest, PrintsAProduct) {
  ProcessResult r = RunPython("print(48271*6933)");
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "334662843\n");
  EXPECT_EQ(r.err, "");
}

// --nofile caps each process's open files: the donated fds count too, so the
// guest gets EMFILE (24) from open() once it holds that many.
TEST(PythonTest, NofileCapsOpenFiles) {
  ProcessResult r = RunPython(
      "fs = []\n"
      "try:\n"
      "    for i in range(100): fs.append(open('/usr/lib/os-release'))\n"
      "except OSError as e: print(len(fs), e.errno)\n",
      {"--nofile", "32"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "29 24\n");  // 32 minus stdin, stdout, stderr
}

TEST(PythonTest, ReadsStdin) {
  ProcessResult r = RunSentry(
      {}, {"/usr/bin/python3", "-c", "import sys; print(sys.stdin.read()[::-1])"}, "olleh");
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "hello\n");
}

TEST(PythonTest, LargeOutputArrivesWhole) {
  ProcessResult r = RunPython("import sys; sys.stdout.write('x' * 10_000_000)");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.size(), 10'000'000u);
}

TEST(PythonTest, Multiprocessing) {
  // close() and join(): the pool's workers exit on their own. (`with Pool()`
  // terminates them with SIGTERM instead: see SignalTest.)
  ProcessResult r = RunSentry({"--timeout", "20"}, {"/usr/bin/python3", "-c",
                                                    "import multiprocessing as mp\n"
                                                    "p = mp.Pool(2)\n"
                                                    "print(p.map(abs, [-1, -2, -3]))\n"
                                                    "p.close(); p.join()\n"
                                                    "q = mp.Queue()\n"
                                                    "pr = mp.Process(target=q.put, args=(5,))\n"
                                                    "pr.start(); print(q.get()); pr.join()\n"
                                                    "print(pr.exitcode)\n"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "[1, 2, 3]\n5\n0\n");
}

constexpr const char* kScript = R"py(import os, sys
print("script", sys.argv[0], os.path.isfile(sys.argv[0]), sys.argv[1:])
print(open(sys.argv[0]).read().count("\n"), "lines")
)py";

TEST(PythonTest, ScriptByRelativePath) {
  TempDir dir;
  dir.Write("hello.py", kScript);
  ProcessResult r = SentryIn(dir.path(), {}, {"/usr/bin/python3", "hello.py", "x", "y"});
  ProcessResult native = RunIn(dir.path(), {}, {"/usr/bin/python3", "hello.py", "x", "y"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "script hello.py True ['x', 'y']\n3 lines\n");
  EXPECT_EQ(r.out, native.out);
}

TEST(PythonTest, ScriptInASubdirectoryByRelativePath) {
  TempDir dir;
  dir.Write("sub/dir/hello.py", kScript);
  ProcessResult r = SentryIn(dir.path(), {}, {"/usr/bin/python3", "sub/dir/hello.py"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "script sub/dir/hello.py True []\n3 lines\n");
}

// A script named by an absolute path is not copied by itself (see
// script_copy_test.cc): --copy brings it in, at that path or another.
TEST(PythonTest, ScriptByAbsolutePathWithCopy) {
  TempDir dir;
  std::string path = dir.Write("hello.py", kScript);
  ProcessResult r = SentryIn("/", {"--copy", path + ":" + path}, {"/usr/bin/python3", path});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "script " + path + " True []\n3 lines\n");
}

TEST(PythonTest, ScriptByAbsolutePathUnderADirectoryTheSandboxLacks) {
  // Next to this test binary: a host directory whose top level (e.g. /work)
  // is not in the sandbox and which uid 1000 could not create there.
  TempDir dir(BinaryDir());
  std::string path = dir.Write("hello.py", kScript);
  ProcessResult r = SentryIn("/", {"--copy", path + ":" + path}, {"/usr/bin/python3", path});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, "script " + path + " True []\n3 lines\n");
}

// Each script prints only what a sandbox and a native run must agree on.
struct StdlibCase {
  const char* name;
  const char* script;
};

void PrintTo(const StdlibCase& c, std::ostream* os) { *os << c.name; }

const StdlibCase kStdlibCases[] = {
    {"Files", R"py(import os, sys, pathlib, shutil, tempfile, glob
base = sys.argv[1]
d = tempfile.mkdtemp(dir=base)
p = pathlib.Path(d) / "a.txt"
p.write_text("alpha\nbeta\n")
with open(p) as f: print("open", f.read().splitlines())
with open(p, "a") as f: f.write("gamma\n")
with open(p, "rb") as f: f.seek(6); print("seek", f.read(4))
print("append", p.read_text().count("\n"), p.stat().st_size)
os.makedirs(os.path.join(d, "x/y/z"))
shutil.copy(p, os.path.join(d, "x/y/z/b.txt"))
shutil.copytree(os.path.join(d, "x"), os.path.join(d, "x2"))
print("glob", sorted(os.path.relpath(g, d) for g in glob.glob(d + "/**/*.txt", recursive=True)))
os.rename(os.path.join(d, "x2"), os.path.join(d, "x3"))
shutil.move(os.path.join(d, "x3"), os.path.join(d, "x4"))
os.symlink("a.txt", os.path.join(d, "ln"))
print("readlink", os.readlink(os.path.join(d, "ln")), os.path.realpath(os.path.join(d, "ln")) == os.path.realpath(p))
os.link(p, os.path.join(d, "hard"))
print("nlink", os.stat(p).st_nlink, os.path.samefile(p, os.path.join(d, "hard")))
os.chmod(p, 0o600); print("mode", oct(os.stat(p).st_mode & 0o777))
print("listdir", sorted(os.listdir(d)))
print("walk", sorted((os.path.relpath(r, d), sorted(ds), sorted(fs)) for r, ds, fs in os.walk(d)))
shutil.rmtree(os.path.join(d, "x4"))
os.unlink(os.path.join(d, "hard"))
try: os.rmdir(d)
except OSError as e: print("rmdir", type(e).__name__)
with tempfile.NamedTemporaryFile("w+", dir=base) as t:
    t.write("tmp"); t.flush(); t.seek(0); print("named", t.read(), os.path.exists(t.name))
with tempfile.TemporaryDirectory() as td: print("tempdir", os.path.isdir(td), os.listdir(td))
shutil.rmtree(d)
print("cleaned", os.path.exists(d))
print("cwd", sorted(os.listdir(".")))
try: open(os.path.join(base, "missing"))
except FileNotFoundError as e: print("missing", e.errno)
)py"},
    {"Formats", R"py(import sys, os, json, csv, io, sqlite3
base = sys.argv[1]
print("json", json.dumps(json.loads('{"b":[1,2,{"c":null}],"a":1.5,"u":"\u00e9"}'), sort_keys=True))
with open(os.path.join(base, "d.json"), "w") as f: json.dump({"k": list(range(5))}, f)
with open(os.path.join(base, "d.json")) as f: print("json file", json.load(f))
with open(os.path.join(base, "t.csv"), "w", newline="") as f:
    w = csv.writer(f); w.writerows([["x", "y"], [1, "a,b"], [2, 'q"uote']])
with open(os.path.join(base, "t.csv"), newline="") as f: print("csv", list(csv.DictReader(f)))
db_path = os.path.join(base, "t.db")
db = sqlite3.connect(db_path)
db.execute("create table t(a int primary key, b text)")
db.executemany("insert into t values(?,?)", [(i, str(i * i)) for i in range(1000)])
db.commit()
print("sqlite", db.execute("select count(*), sum(a), max(b) from t").fetchone())
db.execute("create index ib on t(b)"); db.execute("delete from t where a % 2"); db.commit()
db.close()
db = sqlite3.connect(db_path)
print("sqlite reopen", db.execute("select count(*), b from t where a = 42").fetchone())
db.execute("pragma journal_mode=wal"); db.execute("insert into t values(1, 'one')"); db.commit()
print("sqlite wal", db.execute("select b from t where a = 1").fetchone()); db.close()
print("sqlite memory", sqlite3.connect(":memory:").execute("select 1 + 1").fetchone())
)py"},
    {"Archives", R"py(import sys, os, zipfile, tarfile, gzip, bz2, lzma, shutil
base = sys.argv[1]
src = os.path.join(base, "src"); os.makedirs(os.path.join(src, "sub"))
for name, body in [("one.txt", "1" * 1000), ("sub/two.txt", "two\n")]:
    with open(os.path.join(src, name), "w") as f: f.write(body)
z = os.path.join(base, "z.zip")
with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as zf:
    zf.write(os.path.join(src, "one.txt"), "one.txt"); zf.writestr("inline.txt", "inline")
with zipfile.ZipFile(z) as zf:
    print("zip", zf.namelist(), len(zf.read("one.txt")), zf.testzip())
    zf.extractall(os.path.join(base, "unzipped"))
print("unzipped", sorted(os.listdir(os.path.join(base, "unzipped"))))
t = os.path.join(base, "t.tar.gz")
with tarfile.open(t, "w:gz") as tf: tf.add(src, arcname="src")
with tarfile.open(t) as tf:
    print("tar", sorted((m.name, m.size if m.isfile() else -1) for m in tf.getmembers()))
    tf.extractall(os.path.join(base, "untarred"))
print("untarred", open(os.path.join(base, "untarred/src/sub/two.txt")).read().strip())
g = os.path.join(base, "g.gz")
with gzip.open(g, "wt") as f: f.write("gz data\n" * 100)
with gzip.open(g, "rt") as f: print("gzip", len(f.read()))
print("bz2", len(bz2.decompress(bz2.compress(b"x" * 10000))), "lzma", lzma.decompress(lzma.compress(b"lz")))
print("make_archive", os.path.basename(shutil.make_archive(os.path.join(base, "arch"), "zip", src)))
)py"},
    {"Compute",
     R"py(import hashlib, random, datetime, decimal, fractions, math, statistics, re, struct, base64, itertools, collections, threading, concurrent.futures
print("sha256", hashlib.sha256(b"sentry").hexdigest())
print("md5", hashlib.md5(b"x").hexdigest(), "blake2", hashlib.blake2b(b"y", digest_size=8).hexdigest())
random.seed(42); print("random", [random.randint(0, 1000) for _ in range(5)], random.random())
r = random.Random(7); print("shuffle", r.sample(range(100), 5))
print("datetime", datetime.date(2024, 2, 29) + datetime.timedelta(days=366), datetime.datetime(2020, 1, 1, 12, 0).isoformat())
print("strptime", datetime.datetime.strptime("2021-03-04 05:06", "%Y-%m-%d %H:%M").strftime("%A %d %B"))
print("utc", datetime.datetime.fromtimestamp(1700000000, datetime.timezone.utc).isoformat())
decimal.getcontext().prec = 30; print("decimal", decimal.Decimal(1) / decimal.Decimal(7))
print("fraction", fractions.Fraction(3, 4) + fractions.Fraction(1, 6), math.factorial(30), math.isqrt(10**20))
print("stats", statistics.mean([1, 2, 3, 4]), statistics.median([5, 1, 3]), round(statistics.stdev([1, 2, 3, 4]), 6))
print("re", re.findall(r"\d+", "a1b22c333"), struct.pack("<IH", 1, 2).hex(), base64.b64encode(b"sentry").decode())
print("itertools", list(itertools.permutations("abc", 2))[:4], collections.Counter("mississippi").most_common(2))
out = []; ts = [threading.Thread(target=out.append, args=(i,)) for i in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]; print("threads", sorted(out))
with concurrent.futures.ThreadPoolExecutor(4) as ex: print("pool", list(ex.map(lambda x: x * x, range(6))))
)py"},
    {"Processes", R"py(import os, sys, subprocess
print("echo", subprocess.run(["/bin/echo", "hi"], capture_output=True, text=True).stdout.strip())
print("rc", subprocess.run(["/bin/sh", "-c", "exit 5"]).returncode)
print("shell", subprocess.check_output("echo a b c | wc -w", shell=True).decode().strip())
print("input", subprocess.run(["/usr/bin/tr", "a-z", "A-Z"], input="upper", capture_output=True, text=True).stdout)
print("env", subprocess.run(["/bin/sh", "-c", "echo $X"], env={"X": "passed"}, capture_output=True, text=True).stdout.strip())
print("cwd", subprocess.run(["/bin/pwd"], cwd=sys.argv[1], capture_output=True, text=True).stdout.strip() == os.path.realpath(sys.argv[1]))
print("python child", subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True).stdout.strip())
try: subprocess.run(["/nonexistent/prog"])
except FileNotFoundError as e: print("notfound", e.errno)
pid = os.fork()
if pid == 0: os._exit(7)
print("fork", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
p = subprocess.Popen(["/bin/cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
print("pipe", p.communicate(b"through cat")[0].decode(), p.returncode)
sys.stdout.flush()
print("system", os.system("ls | wc -l"))
sys.stdout.flush()
print("system rc", os.waitstatus_to_exitcode(os.system("exit 3")))
)py"},
};

class StdlibTest : public ::testing::TestWithParam<StdlibCase> {};

TEST_P(StdlibTest, SameOutputAsNative) {
  ProcessResult native = NativeScript(GetParam().script);
  ASSERT_EQ(native.exit_code, 0) << "native run failed\n" << Describe(native);
  ProcessResult r = SandboxScript(GetParam().script);
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, native.out) << "stderr under sentry:\n" << r.err;
  EXPECT_EQ(r.err, "");
}

INSTANTIATE_TEST_SUITE_P(Python, StdlibTest, ::testing::ValuesIn(kStdlibCases),
                         [](const ::testing::TestParamInfo<StdlibCase>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace sentry::testing
