// fd records (fastmeta/fdrec.c): the guest's library remembers the stat of a
// lower regular file it opened read-only and answers that fd's fstat without
// a trap. Each answer must be the trap's (the raw newfstatat, which always
// traps): after every way a number is closed or replaced (through libc, and
// behind its back where the F_GETFL guard must catch it), under a thread
// that closes and reopens while another fstats, after a copy-up of the path;
// nothing is recorded for an upper file (with --no-fast-upper-files:
// fast_upper_files_test.cc has them), a -v mount, /proc or /dev; the
// region's slot the open published is the trapped fstat, field by field;
// --no-fast-fd-records turns it off.
#include <sys/stat.h>

#include <cstdio>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/security/security_util.h"
#include "tests/util/subprocess.h"

namespace sentry::security {
namespace {

// raw(fd): newfstatat(fd, "", AT_EMPTY_PATH) by the raw syscall (trapped);
// lib(fd): libc's fstat, at(fd): libc's fstatat(fd, "", AT_EMPTY_PATH) (the
// library's); glibc: libc itself, whose syscall() the library never sees;
// slot(path): the st bytes of path's live slot in the region.
constexpr char kRecordsPy[] = R"PY(
import ctypes, mmap, stat, struct, threading
libc = ctypes.CDLL(None, use_errno=True)
glibc = ctypes.CDLL("libc.so.6", use_errno=True)
libc.fdopen.restype = libc.fopen.restype = ctypes.c_void_p
libc.fdopen.argtypes = [ctypes.c_int, ctypes.c_char_p]
libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
libc.fclose.argtypes = libc.fileno.argtypes = [ctypes.c_void_p]
def raw(fd):
    buf = ctypes.create_string_buffer(144)
    r = libc.syscall(262, fd, b"", buf, 0x1000)
    return buf.raw if r == 0 else errno.errorcode[ctypes.get_errno()]
def lib(fd):
    buf = ctypes.create_string_buffer(144)
    r = libc.fstat(fd, buf)
    return buf.raw if r == 0 else errno.errorcode[ctypes.get_errno()]
def at(fd):
    buf = ctypes.create_string_buffer(144)
    r = libc.fstatat(fd, b"", buf, 0x1000)
    return buf.raw if r == 0 else errno.errorcode[ctypes.get_errno()]
def kind(b): return "err" if isinstance(b, str) else stat.S_IFMT(struct.unpack_from("<I", b, 24)[0])
def ino(b): return struct.unpack_from("<Q", b, 8)[0]
def keys():
    fd = os.open("/etc/sentry/fastmeta", os.O_RDONLY)
    m = mmap.mmap(fd, os.lseek(fd, 0, 2), mmap.MAP_SHARED, mmap.PROT_READ)
    os.close(fd)
    _, ver, ssz, n, off, gen, _, feat = struct.unpack_from("<IIIIQQQI", m, 0)
    ugen, = struct.unpack_from("<Q", m, 64)
    out = {}
    for i in range(n):
        b = off + i * ssz
        seq, flags, g, _, pl, _ = struct.unpack_from("<IIQIHH", m, b)
        if not seq & 1 and g == (ugen if flags & 64 else gen):
            out[m[b + 168:b + 168 + pl].decode(errors="replace")] = (flags, m[b + 24:b + 168])
    return out, feat
def fresh(p): return os.open(p, os.O_RDONLY | os.O_CLOEXEC)
def rec(p):
    fd = fresh(p); lib(fd); return fd
A = "/usr/lib/python3.11/json/decoder.py"
B = "/usr/lib/python3.11/json/encoder.py"
def fopen(p):
    f = libc.fopen(p.encode(), b"r"); return f, libc.fileno(f)
)PY";

ProcessResult RunRecordsPy(const std::string& body, std::vector<std::string> flags = {}) {
  return RunPy(std::string(kRecordsPy) + body, flags);
}

// Every answer is the trap's, whole (all 144 bytes); a file opened without a
// stat first gets its slot published by the open, equal to the trapped fstat
// field by field; with the records on, 200 open+fstat of a system file trap
// no newfstatat, nor 100 relative to a directory fd; --no-fast-fd-records
// turns the feature bit and that off.
constexpr char kAnswersPy[] = R"PY(
files = [A, B, "/usr/lib/python3.11/os.py", "/usr/bin/python3", "/etc/os-release",
         "/usr/lib/python3.11/__pycache__/os.cpython-311.pyc", "/usr/lib/python3.11"]
def each():
    out = []
    for p in files:
        fd = fresh(p)
        out.append((lib(fd) == raw(fd), at(fd) == raw(fd)))
        os.close(fd)
    return out
t("same", each)
C = "/usr/lib/python3.11/json/scanner.py"
fd = fresh(C)
k, feat = keys()
t("published", lambda: (k[C][0] & (2 | 64), k[C][1] == raw(fd), lib(fd) == raw(fd)))
t("feature", lambda: bool(feat & 64))
os.close(fd)
# Relative to a directory fd (grep -r, fts): the open publishes where it led.
D = "/usr/lib/python3.11/email"
dfd = os.open(D, os.O_RDONLY | os.O_DIRECTORY)
fd = os.open("charset.py", os.O_RDONLY, dir_fd=dfd)
k = keys()[0]
t("relative", lambda: (k.get(D + "/charset.py", (0, b""))[1] == raw(fd), lib(fd) == raw(fd), at(fd) == raw(fd)))
os.close(fd)
for i in range(200):
    fd = fresh(A); os.fstat(fd); os.close(fd)
for i in range(100):
    fd = os.open("charset.py", os.O_RDONLY, dir_fd=dfd); os.fstat(fd); os.close(fd)
)PY";

TEST(FastFdRecords, AnswersAreTheTraps) {
  TempDir census("/tmp/sec-fr-census-");
  std::string on_file = census.path() + "/on.json";
  ProcessResult on = RunRecordsPy(kAnswersPy, {"--census", on_file});
  ASSERT_EQ(on.exit_code, 0) << Describe(on);
  Results res = ParseResults(on.out);
  std::string all_same = "[";
  for (int i = 0; i < 7; ++i) all_same += std::string(i ? ", " : "") + "(True, True)";
  all_same += "]";
  EXPECT_EQ(Value(res, "same"), all_same) << on.out;
  EXPECT_EQ(Value(res, "published"), "(0, True, True)") << on.out;
  EXPECT_EQ(Value(res, "feature"), "True") << on.out;
  EXPECT_EQ(Value(res, "relative"), "(True, True, True)") << on.out;
  std::string off_file = census.path() + "/off.json";
  ProcessResult off = RunRecordsPy(kAnswersPy, {"--no-fast-fd-records", "--census", off_file});
  ASSERT_EQ(off.exit_code, 0) << Describe(off);
  res = ParseResults(off.out);
  EXPECT_EQ(Value(res, "same"), all_same) << off.out;
  EXPECT_EQ(Value(res, "feature"), "False") << off.out;
  // Off, the open publishes nothing: the fstat is the trap's.
  EXPECT_EQ(Value(res, "relative"), "(False, True, True)") << off.out;
  EXPECT_GE(Trapped(off_file, "newfstatat"), Trapped(on_file, "newfstatat") + 300);
}

// A recorded number closed or replaced, through libc or behind its back
// (glibc's own syscall(): the F_GETFL guard), then reused: the next fstat is
// the new object's (the trap's), never the old record.
TEST(FastFdRecords, ANumberClosedOrReplacedIsNeverAnsweredForTheOldFile) {
  ProcessResult r = RunRecordsPy(R"PY(
def reuse(close, reopen):
    fd = rec(A)
    before = lib(fd) == raw(fd)
    close(fd)
    got = reopen()
    if got is None: got = fd
    n, keep = got if isinstance(got, tuple) else (got, None)
    return (before, n == fd, kind(lib(n)) == kind(raw(n)), lib(n) == raw(n)), n, keep
def check(name, close, reopen):
    res, n, keep = reuse(close, reopen)
    t(name, lambda: res)
    if keep: libc.fclose(keep)
    else: os.close(n)
def fopened(): f, n = fopen(B); return n, f
pipes = []
def piped():
    r, w = os.pipe(); pipes.append(w); return r
check("syscall_close", lambda fd: libc.syscall(3, fd), fopened)
check("raw_close_open", lambda fd: glibc.syscall(3, fd), lambda: fresh(B))
check("raw_close_pipe", lambda fd: glibc.syscall(3, fd), piped)
check("close_range", lambda fd: os.closerange(fd, fd + 1), fopened)
check("syscall_close_range", lambda fd: libc.syscall(436, fd, fd, 0), fopened)
check("close_fopen", os.close, fopened)
r, w = os.pipe()
check("dup2_pipe", lambda fd: os.dup2(r, fd), lambda: None)
check("raw_dup2_pipe", lambda fd: glibc.syscall(33, r, fd), lambda: None)
check("dup3_pipe", lambda fd: libc.dup3(r, fd, 0), lambda: None)
check("syscall_dup3_pipe", lambda fd: libc.syscall(292, r, fd, 0), lambda: None)
check("fdopen_fclose", lambda fd: libc.fclose(libc.fdopen(fd, b"r")), fopened)
# The pipe's kind, to prove the dup2 checks compared a FIFO.
fd = rec(A); os.dup2(r, fd)
t("fifo", lambda: (kind(lib(fd)) == stat.S_IFIFO, kind(raw(fd)) == stat.S_IFIFO))
# stdin's number reopened inside libc (freopen closes and opens it there).
os.close(0); fd0 = rec(A)
libc.freopen.restype = ctypes.c_void_p
libc.freopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p]
libc.freopen(B.encode(), b"r", ctypes.c_void_p.in_dll(libc, "stdin"))
t("freopen_stdin", lambda: (fd0, lib(0) == raw(0)))
)PY");
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  for (const char* name : {"syscall_close", "raw_close_open", "raw_close_pipe", "close_range",
                           "syscall_close_range", "close_fopen", "dup2_pipe", "raw_dup2_pipe",
                           "dup3_pipe", "syscall_dup3_pipe", "fdopen_fclose"}) {
    EXPECT_EQ(Value(res, name), "(True, True, True, True)") << name << "\n" << r.out;
  }
  EXPECT_EQ(Value(res, "fifo"), "(True, True)") << r.out;
  EXPECT_EQ(Value(res, "freopen_stdin"), "(0, True)") << r.out;
}

// One thread closes and reopens one number (two files in turn), another
// fstats it: every answer is one of the two files' whole stat, or EBADF.
TEST(FastFdRecords, ACloseInAnotherThreadNeverYieldsGarbage) {
  ProcessResult r = RunRecordsPy(R"PY(
fd = fresh(A); sa = raw(fd); os.close(fd)
fd = fresh(B); sb = raw(fd)
stop = False
bad, seen = [], set()
def churn():
    global stop
    i = 0
    # 3,000 turns, more (up to 30,000) until the watcher saw both files: a
    # loaded machine may give it few turns of the GIL.
    while i < 3000 or (not {"A", "B"} <= seen and i < 30000):
        os.close(fd)
        if fresh(A if i % 2 else B) != fd: bad.append("number")
        i += 1
    stop = True
def watch():
    while not stop:
        a = lib(fd)
        if a == sa: seen.add("A")
        elif a == sb: seen.add("B")
        elif a == "EBADF": seen.add("EBADF")
        else: bad.append(a if isinstance(a, str) else ino(a))
th = [threading.Thread(target=churn), threading.Thread(target=watch)]
for x in th: x.start()
for x in th: x.join()
t("threads", lambda: (bad[:5], "A" in seen and "B" in seen))
)PY");
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(Value(ParseResults(r.out), "threads"), "([], True)") << r.out;
}

// The same in C, where the threads truly run at once (fdrec_probe.c): one
// closes and reopens a number 3,000 times, holding each file 200 us, two
// fstat it meanwhile; every answer is one of the two files' whole stat or
// EBADF, and some came from a record (in under 3 us: no trap is that fast).
TEST(FastFdRecords, ThreadsCloseAndFstatAtOnce) {
  ProcessResult r =
      sentry::testing::RunSentry({"--copy", std::string(FDREC_PROBE_PATH) + ":/tmp/fdrec_probe"},
                                 {"/tmp/fdrec_probe", "/usr/lib/python3.11/json/decoder.py",
                                  "/usr/lib/python3.11/json/encoder.py", "3000"},
                                 "", 120);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  long a = -1, b = -1, ebadf = -1, garbage = -1, number = -1, fast = -1;
  ASSERT_EQ(sscanf(r.out.c_str(), "a=%ld b=%ld ebadf=%ld garbage=%ld number=%ld fast=%ld", &a, &b,
                   &ebadf, &garbage, &number, &fast),
            6)
      << r.out;
  EXPECT_EQ(garbage, 0) << r.out;
  EXPECT_EQ(number, 0) << r.out;
  EXPECT_GT(a, 0) << r.out;
  EXPECT_GT(b, 0) << r.out;
  EXPECT_GT(fast, 100) << r.out;
}

// A file opened read-only, then its path written (a copy-up): the fd's
// fstat is still the trap's, with the records on and off.
constexpr char kCopyUpPy[] = R"PY(
fd = rec(A)
before = raw(fd)
with open(A, "a") as f: f.write("# more\n")
t("copy_up", lambda: (lib(fd) == raw(fd), at(fd) == raw(fd), os.stat(A).st_size != os.fstat(fd).st_size))
fd2 = rec(A)
t("upper", lambda: (lib(fd2) == raw(fd2), A in keys()[0]))
)PY";

TEST(FastFdRecords, CopyUpKeepsTheTrapsAnswer) {
  for (const char* flag : {"--fast-metadata", "--no-fast-fd-records"}) {
    ProcessResult r = RunRecordsPy(kCopyUpPy, {"--root", flag});
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    Results res = ParseResults(r.out);
    EXPECT_EQ(Value(res, "copy_up"), "(True, True, True)") << flag << "\n" << r.out;
    // The upper file (a regular file no writer holds) is published by the
    // trapped stat in copy_up (fast_upper_files_test.cc); maybe not without
    // namespaces, whose store may not be a noatime tmpfs.
    EXPECT_EQ(Value(res, "upper").substr(0, 5), "(True") << flag << "\n" << r.out;
    if (!SeccompOnly()) {
      EXPECT_EQ(Value(res, "upper"), "(True, True)") << flag << "\n" << r.out;
    }
  }
}

// Nothing is recorded for an upper file (--no-fast-upper-files), a -v mount
// (either mode), /proc or /dev: each of their fstats traps (counted), and
// none has a slot.
TEST(FastFdRecords, NeverAnUpperFileNorAMount) {
  TempDir rw("/tmp/sec-fr-rw-");
  TempDir ro("/tmp/sec-fr-ro-");
  WriteFileOrDie(rw.path() + "/f", "x");
  WriteFileOrDie(ro.path() + "/f", "y");
  ASSERT_EQ(chmod(rw.path().c_str(), 0755), 0);
  ASSERT_EQ(chmod(ro.path().c_str(), 0755), 0);
  TempDir census("/tmp/sec-fr-census-");
  std::string body = R"PY(
with open("/tmp/up", "w") as f: f.write("z")
paths = ["/tmp/up", "/mnt/rw/f", "/mnt/ro/f", "/proc/self/status", "/dev/null"]
same = []
for i in range(N):
    for p in paths:
        fd = fresh(p); same.append(lib(fd) == raw(fd)); os.close(fd)
k = keys()[0]
t("same", lambda: all(same))
t("keys", lambda: sorted(x for x in k if x.lstrip("@").startswith(("/tmp", "/mnt", "/proc", "/dev"))))
)PY";
  std::vector<std::string> flags = {
      "-v",      rw.path() + ":/mnt/rw:rw", "-v", ro.path() + ":/mnt/ro", "--no-fast-upper-files",
      "--census"};
  std::vector<int> counts;
  for (int n : {0, 50}) {
    std::string file = census.path() + "/" + std::to_string(n) + ".json";
    std::vector<std::string> f = flags;
    f.push_back(file);
    ProcessResult r = RunRecordsPy("N = " + std::to_string(n) + "\n" + body, f);
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    Results res = ParseResults(r.out);
    EXPECT_EQ(Value(res, "same"), "True") << r.out;
    EXPECT_EQ(Value(res, "keys"), "[]") << r.out;
    counts.push_back(Trapped(file, "newfstatat"));
  }
  // Every fstat of those 5 files, 50 times, trapped (a lib() and a raw() each).
  EXPECT_GE(counts[1] - counts[0], 50 * 5 * 2);
}

}  // namespace
}  // namespace sentry::security
