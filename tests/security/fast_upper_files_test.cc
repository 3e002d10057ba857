// Upper regular files in the fast-metadata region (fastmeta/region.h
// SENTRY_FM_UPPER_FILES): a file of the upper layer that no writable
// description holds is published at a trapped stat or read-only open, and
// the guest's library records its read-only fds (fastmeta/fdrec.c). Each
// answer must be the trap's (the raw newfstatat, which always traps), field
// by field, atime included: while a writer is open (the same process or
// another, or a writable shared mapping whose fd is closed), after native
// writes by another process to a file a reader recorded, after every
// change by path or fd (ftruncate, truncate, chmod, utime, link, rename,
// unlink); a 0700 directory (mkdtemp's) is walked when every guest process
// is its owner; a file a create just made answers that fd's first fstat
// (FRESH) until its first change; --no-fast-upper-files turns it off.
#include <functional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/security/security_util.h"
#include "tests/util/subprocess.h"

namespace sentry::security {
namespace {

// raw(p) / rawfd(fd): the raw newfstatat (trapped); lst(p) / fst(fd): libc's
// (the library's); keys(): the live UPPER slots' paths, and the features.
constexpr char kFilesPy[] = R"PY(
import ctypes, mmap, struct, subprocess, sys, tempfile, time
libc = ctypes.CDLL(None, use_errno=True)
def decode(b):
    ino, nlink, mode, uid = struct.unpack_from("<QQII", b, 8)
    size, = struct.unpack_from("<q", b, 48)
    ts = [struct.unpack_from("<qq", b, o) for o in (72, 88, 104)]
    return (ino, mode, nlink, uid, size) + tuple(s * 10**9 + n for s, n in ts)
def raw(path, fd=-100):
    buf = ctypes.create_string_buffer(256)
    r = libc.syscall(262, fd, path.encode(), buf, 0x1000 if path == "" else 0)
    return decode(buf.raw) if r == 0 else errno.errorcode[ctypes.get_errno()]
def rawfd(fd): return raw("", fd)
def tup(st): return (st.st_ino, st.st_mode, st.st_nlink, st.st_uid, st.st_size,
                     st.st_atime_ns, st.st_mtime_ns, st.st_ctime_ns)
def lst(p):
    try: return tup(os.stat(p))
    except OSError as e: return errno.errorcode[e.errno]
def fst(fd): return tup(os.fstat(fd))
def keys():
    fd = os.open("/etc/sentry/fastmeta", os.O_RDONLY)
    m = mmap.mmap(fd, os.lseek(fd, 0, 2), mmap.MAP_SHARED, mmap.PROT_READ)
    os.close(fd)
    _, _, ssz, n, off, gen, _, feat = struct.unpack_from("<IIIIQQQI", m, 0)
    ugen, = struct.unpack_from("<Q", m, 64)
    out = set()
    for i in range(n):
        b = off + i * ssz
        seq, flags, g, _, pl, _ = struct.unpack_from("<IIQIHH", m, b)
        if not seq & 1 and flags & 64 and g == ugen and not flags & 2:
            out.add(m[b + 168:b + 168 + pl].decode(errors="replace"))
    return out, feat
def write(p, data):
    with open(p, "wb") as f: f.write(data)
def rec(p):
    fd = os.open(p, os.O_RDONLY); os.fstat(fd); return fd
D = tempfile.mkdtemp(dir="/tmp")
)PY";

ProcessResult RunFilesPy(const std::string& body, std::vector<std::string> flags = {}) {
  return RunPy(std::string(kFilesPy) + body, flags);
}

// After write and close, stat and fstat are the trap's, and N of each trap
// nothing (on) or 2N newfstatat (off).
constexpr char kQuietPy[] = R"PY(
P = D + "/f"
write(P, b"x" * 100)
fd = os.open(P, os.O_RDONLY)
t("same", lambda: (lst(P) == raw(P), fst(fd) == rawfd(fd), fst(fd) == lst(P)))
k, feat = keys()
t("published", lambda: (P in k, bool(feat & 128), oct(os.stat(D).st_mode & 0o777)))
os.read(fd, 10)  # a native read (the store is noatime): no answer moves
t("read", lambda: (lst(P) == raw(P), fst(fd) == rawfd(fd)))
for i in range(N): os.stat(P); os.fstat(fd)
)PY";

// Runs body after "N = 0", then after "N = 200", each with upper files on
// and off under a census; check sees each run's output (on: enabled). The
// 200 must add at least off_min trapped newfstatat with them off, and
// (with namespaces: a noatime store) at most 5 with them on.
void ExpectTrapsSaved(const std::string& body, int off_min,
                      const std::function<void(const std::string& out, bool enabled)>& check) {
  TempDir census("/tmp/sec-uf-census-");
  std::vector<int> on, off;
  for (int n : {0, 200}) {
    for (bool enabled : {true, false}) {
      std::string file = census.path() + "/" + std::to_string(n) + (enabled ? "on" : "off");
      std::vector<std::string> flags = {"--census", file};
      if (!enabled) flags.push_back("--no-fast-upper-files");
      ProcessResult r = RunFilesPy("N = " + std::to_string(n) + "\n" + body, flags);
      EXPECT_EQ(r.exit_code, 0) << Describe(r);
      check(r.out, enabled);
      (enabled ? on : off).push_back(Trapped(file, "newfstatat"));
    }
  }
  EXPECT_GE(off[1] - off[0], off_min);
  if (!SeccompOnly()) {
    EXPECT_LE(on[1] - on[0], 5);
  }
}

TEST(FastUpperFiles, AFileNoWriterHoldsIsAnsweredWithoutATrap) {
  ExpectTrapsSaved(kQuietPy, 400, [](const std::string& out, bool enabled) {
    Results res = ParseResults(out);
    EXPECT_EQ(Value(res, "same"), "(True, True, True)") << out;
    EXPECT_EQ(Value(res, "read"), "(True, True)") << out;
    if (!enabled) {
      EXPECT_EQ(Value(res, "published"), "(False, False, '0o700')") << out;
    } else if (!SeccompOnly()) {
      EXPECT_EQ(Value(res, "published"), "(True, True, '0o700')") << out;
    }
  });
}

// A writer open (this process's, another process's, a writable shared
// mapping whose fd is closed): every stat and fstat traps and follows the
// native writes; once the last writer is gone, the file is published again.
TEST(FastUpperFiles, AWriterKeepsEveryAnswerTrapped) {
  ProcessResult r = RunFilesPy(R"PY(
P = D + "/w"
w = open(P, "wb", buffering=0)
w.write(b"a")
r = os.open(P, os.O_RDONLY)
out = []
for i in range(5):
    w.write(b"b" * 10)
    out.append((lst(P)[4], raw(P)[4], fst(r)[4], rawfd(r)[4]))
t("own", lambda: (out, P in keys()[0]))
w.close()
t("closed", lambda: (lst(P)[4], lst(P) == raw(P), fst(r) == rawfd(r), P in keys()[0]))
# Another process appends and holds its fd while this one stats.
child = subprocess.Popen([sys.executable, "-c",
    "import os,sys\nf=open(sys.argv[1],'ab',buffering=0)\nfor i in range(3):\n"
    " f.write(b'c'*7); print(i, flush=True); sys.stdin.readline()\n", P],
    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
seen = []
for i in range(3):
    child.stdout.readline()
    seen.append((lst(P)[4], lst(P) == raw(P), fst(r) == rawfd(r), P in keys()[0]))
    child.stdin.write("\n"); child.stdin.flush()
child.wait()
t("other", lambda: seen)
t("other_gone", lambda: (lst(P)[4], lst(P) == raw(P), P in keys()[0]))
# A writable shared mapping keeps its file open for writing after close(fd).
M = D + "/m"
write(M, b"\0" * 4096)
m_r = rec(M)
w = os.open(M, os.O_RDWR)
m = mmap.mmap(w, 4096, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
os.close(w)
m[0:5] = b"hello"
m2 = rec(M)
time.sleep(0.02)
m[100:105] = b"world"
t("mapped", lambda: (lst(M) == raw(M), fst(m_r) == rawfd(m_r), fst(m2) == rawfd(m2),
                     M in keys()[0]))
m.close()
m3 = rec(M)
t("unmapped", lambda: (lst(M) == raw(M), fst(m3) == rawfd(m3), M in keys()[0]))
)PY");
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Value(res, "own"),
            "([(11, 11, 11, 11), (21, 21, 21, 21), (31, 31, 31, 31), (41, 41, 41, 41), "
            "(51, 51, 51, 51)], False)")
      << r.out;
  bool seccomp = SeccompOnly();  // (maybe no noatime store: nothing published)
  if (!seccomp) {
    EXPECT_EQ(Value(res, "closed"), "(51, True, True, True)") << r.out;
  }
  EXPECT_EQ(Value(res, "other"),
            "[(58, True, True, False), (65, True, True, False), (72, True, True, False)]")
      << r.out;
  if (!seccomp) {
    EXPECT_EQ(Value(res, "other_gone"), "(72, True, True)") << r.out;
  }
  EXPECT_EQ(Value(res, "mapped"), "(True, True, True, False)") << r.out;
  if (!seccomp) {
    EXPECT_EQ(Value(res, "unmapped"), "(True, True, True)") << r.out;
  }
}

// Every change by path or by fd to a published file whose fd a reader
// recorded: that fstat, a fresh fd's and the path's stat are the trap's.
TEST(FastUpperFiles, EveryChangeIsSeenAtOnce) {
  ProcessResult r = RunFilesPy(R"PY(
P = D + "/c"
write(P, b"0123456789")
def ftrunc():
    w = os.open(P, os.O_WRONLY); os.ftruncate(w, 7); os.close(w)
def append_other():
    subprocess.run([sys.executable, "-c", f"open({P!r}, 'ab').write(b'more')"], check=True)
def fallocate():
    w = os.open(P, os.O_RDWR); os.posix_fallocate(w, 0, 8192); os.close(w)
ops = [("truncate", lambda: os.truncate(P, 3)), ("ftruncate", ftrunc),
       ("append_other", append_other), ("fallocate", fallocate),
       ("chmod", lambda: os.chmod(P, 0o640)), ("utime", lambda: os.utime(P, (1, 2))),
       ("utime_now", lambda: os.utime(P)), ("link", lambda: os.link(P, D + "/c2")),
       ("rename", lambda: os.rename(D + "/c2", D + "/c3")),
       ("unlink", lambda: os.unlink(D + "/c3")),
       ("rename_over", lambda: (write(D + "/c4", b"4"), os.rename(D + "/c4", P))),
       ("unlink_last", lambda: os.unlink(P))]
out = []
for name, op in ops:
    fd = rec(P); lst(P)
    before = P in keys()[0]
    op()
    fresh = os.open(P, os.O_RDONLY) if os.path.exists(P) else None
    out.append((name, before, lst(P) == raw(P), fst(fd) == rawfd(fd),
                fresh is None or fst(fresh) == rawfd(fresh)))
    os.close(fd)
    if fresh is not None: os.close(fresh)
t("answers", lambda: [x for x in out if not all(x[2:])])
t("unpublished", lambda: [x[0] for x in out if not x[1]])
)PY");
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Value(res, "answers"), "[]") << r.out;
  // (Without namespaces the store may not be a noatime tmpfs: then nothing
  // is published, and only the answers are checked.)
  if (!SeccompOnly()) {
    EXPECT_EQ(Value(res, "unpublished"), "[]") << r.out;
  }
}

// ATTACK: a stale answer while another process opens, appends and closes
// as fast as it can (each open bumps the upper generation before its
// description is donated; between them the file is published again): every
// answer of the library, taken between two raw traps, lies between them.
TEST(FastUpperFiles, ARacingWriterNeverYieldsAStaleAnswer) {
  ProcessResult r = RunFilesPy(R"PY(
P = D + "/race"
write(P, b"")
fd = rec(P)
child = subprocess.Popen([sys.executable, "-c",
    "import os,sys\nfor i in range(3000):\n f=os.open(sys.argv[1],os.O_WRONLY|os.O_APPEND)\n"
    " os.write(f,b'x'); os.close(f)\n", P])
bad, n, hits = [], 0, 0
while child.poll() is None:
    fresh = os.open(P, os.O_RDONLY)
    a = raw(P)[4]; l = lst(P)[4]; f = fst(fd)[4]; g = fst(fresh)[4]; b = raw(P)[4]
    if not (a <= l <= b and a <= f <= b and a <= g <= b): bad.append((a, l, f, g, b))
    os.close(fresh)
    n += 1
t("race", lambda: (bad[:5], n > 20, lst(P)[4], lst(P) == raw(P)))
)PY");
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Value(res, "race"), "([], True, 3000, True)") << r.out;
}

// A file a write-only create just made (region.h SENTRY_FM_FRESH): the
// fstat that follows (Python's open for writing makes one) is answered by
// the library, field by field the trap's, for an absolute name and one
// relative to the working directory; the path itself is never published
// while its writer is open; N creates trap no fstat (on) or N (off).
TEST(FastUpperFiles, AFileJustMadeIsAnsweredWithoutATrap) {
  ExpectTrapsSaved(R"PY(
fd = os.open(D + "/a", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640)
t("abs", lambda: (fst(fd) == rawfd(fd), fst(fd)[4], D + "/a" in keys()[0]))
os.chdir(D); os.stat(".")
rel = os.open("r", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
t("rel", lambda: (fst(rel) == rawfd(rel), oct(fst(rel)[1] & 0o777)))
os.write(rel, b"x")
t("written", lambda: (fst(rel) == rawfd(rel), fst(rel)[4]))
for i in range(N):
    with open(D + "/f%d" % i, "wb") as f: f.write(b"y")
)PY",
                   200, [](const std::string& out, bool) {
                     Results res = ParseResults(out);
                     EXPECT_EQ(Value(res, "abs"), "(True, 0, False)") << out;
                     EXPECT_EQ(Value(res, "rel"), "(True, '0o600')") << out;
                     EXPECT_EQ(Value(res, "written"), "(True, 1)") << out;
                   });
}

// ATTACK: a stale answer for a file just made while another thread of the
// same process writes to it through the same fd, while a forked child
// writes and then truncates it back to empty, and while another thread
// removes its name and makes it again: every answer of the library, taken
// between two raw traps, lies between them (size, mtime, inode, links).
TEST(FastUpperFiles, AWriterRacingAFreshAnswerNeverMakesItStale) {
  ProcessResult r = RunFilesPy(R"PY(
import threading
bad, n = [], 0
for i in range(300):
    fd = os.open(D + "/r%d" % i, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    go = threading.Event()
    def writer():
        go.wait(); os.write(fd, b"w")
    th = threading.Thread(target=writer); th.start(); go.set()
    a = rawfd(fd); f = fst(fd); b = rawfd(fd)
    th.join()
    if not (a[4] <= f[4] <= b[4] and a[6] <= f[6] <= b[6]): bad.append((a, f, b))
    n += 1
    os.close(fd)
for i in range(50):
    fd = os.open(D + "/k%d" % i, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    first = fst(fd)
    time.sleep(0.002)
    pid = os.fork()
    if pid == 0:
        os.write(fd, b"zz"); os.ftruncate(fd, 0); os._exit(0)
    os.waitpid(pid, 0)
    if fst(fd) != rawfd(fd): bad.append(("child", first, fst(fd), rawfd(fd)))
    os.close(fd)
# Another thread removes the name and makes it again as fast as it can:
# each create's fd answers for its own file (inode, links), never the next.
P = D + "/again"
stop = threading.Event()
def remake():
    while not stop.is_set():
        try: os.unlink(P)
        except FileNotFoundError: pass
        os.close(os.open(P, os.O_WRONLY | os.O_CREAT, 0o644))
th = threading.Thread(target=remake); th.start()
for i in range(1000):
    fd = os.open(P, os.O_WRONLY | os.O_CREAT, 0o644)
    a = rawfd(fd); f = fst(fd); b = rawfd(fd)
    if not (a[0] == f[0] == b[0] and a[2] >= f[2] >= b[2]): bad.append(("again", a, f, b))
    os.close(fd)
stop.set(); th.join()
t("race", lambda: (bad[:3], n))
)PY");
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Value(res, "race"), "([], 300)") << r.out;
}

}  // namespace
}  // namespace sentry::security
