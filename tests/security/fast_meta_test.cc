// The fast-metadata region (sentry/kernel/fast_meta.h, fastmeta/preload.c):
// the guest can never write it, it holds only what a trap would answer (the
// /etc rule, -v mounts, one region per sandbox), a write that changes an
// answer is seen by the very next call, and a guest that maps over the
// region only gets the trapped path.
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/security/security_util.h"
#include "tests/util/subprocess.h"

namespace sentry::security {
namespace {

// Python helpers for the guest: the region's valid entries, and a stat that
// traps whatever the preload library does (the raw syscall).
constexpr char kRegionPy[] = R"PY(
import ctypes, fcntl, mmap, struct
libc = ctypes.CDLL(None, use_errno=True)
RP = "/etc/sentry/fastmeta"
def slots():
    fd = os.open(RP, os.O_RDONLY)
    size = os.lseek(fd, 0, 2)
    m = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ)
    os.close(fd)
    magic, ver, ssz, n, off, gen, ioff = struct.unpack_from("<IIIIQQQ", m, 0)
    for i in range(n):
        b = off + i * ssz
        seq, flags, g, acc, pl, tl = struct.unpack_from("<IIQIHH", m, b)
        if g != gen or seq & 1 or pl == 0:
            continue
        data = m[b + 168:b + 168 + pl + tl]
        yield data[:pl].decode(), flags, m[b + 24:b + 168], data[pl:].decode()
# Path entries: (path, 1) answers stat and lstat, (path, 0) lstat only
# (not tokens, 8, nor listings, 16: fast_listing_test.cc).
def entries():
    return {(k, f & 1): (f, st, tg) for k, f, st, tg in slots() if not f & 24}
# Directory tokens: key -> the path published for it.
def tokens():
    return {k: tg for k, f, st, tg in slots() if f & 8}
def raw_stat_at(fd, p, flags):
    buf = ctypes.create_string_buffer(144)
    r = libc.syscall(262, fd, p.encode(), buf, flags)
    return buf.raw if r == 0 else ctypes.get_errno()
def raw_stat(p, follow):
    return raw_stat_at(-100, p, 0 if follow else 0x100)
def raw_readlink(p):
    buf = ctypes.create_string_buffer(4096)
    r = libc.syscall(89, p.encode(), buf, 4096)
    return buf.raw[:r].decode() if r >= 0 else ctypes.get_errno()
# Through the preload library (what a program calls).
def lib_stat_at(fd, p, flags=0x100):
    buf = ctypes.create_string_buffer(144)
    r = libc.fstatat(fd, p.encode(), buf, flags)
    return buf.raw if r == 0 else ctypes.get_errno()
def lib_fstat(fd):
    buf = ctypes.create_string_buffer(144)
    r = libc.fstat(fd, buf)
    return buf.raw if r == 0 else ctypes.get_errno()
# The library's answers are the kernel's (the trap's) for these calls.
def agree(fd, names):
    bad = []
    for n in names:
        for fl in (0, 0x100):
            a, b = lib_stat_at(fd, n, fl), raw_stat_at(fd, n, fl)
            if a != b: bad.append((n, fl, a if isinstance(a, int) else "st", b if isinstance(b, int) else "st"))
    a, b = lib_fstat(fd), raw_stat_at(fd, "", 0x1000)
    if a != b: bad.append(("fstat", a if isinstance(a, int) else "st", b if isinstance(b, int) else "st"))
    return bad
)PY";

// Fast metadata is off by default: each run here turns it on.
ProcessResult RunRegionPy(const std::string& body, std::vector<std::string> flags = {}) {
  flags.insert(flags.begin(), "--fast-metadata");
  return RunPy(std::string(kRegionPy) + body, flags);
}

TEST(FastMeta, GuestCannotWriteTheRegion) {
  ProcessResult r = RunRegionPy(R"PY(
fd = os.open(RP, os.O_RDONLY)
size = os.lseek(fd, 0, 2)
t("size", lambda: size)
t("map_read", lambda: len(mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ)))
t("map_write", lambda: len(mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)))
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
def mprot():
    a = libc.mmap(None, size, 1, 1, fd, 0)
    if a is None or a == ctypes.c_void_p(-1).value:
        raise OSError(ctypes.get_errno(), "mmap")
    if libc.mprotect(ctypes.c_void_p(a), ctypes.c_size_t(size), 3) != 0:
        raise OSError(ctypes.get_errno(), "mprotect")
    return "writable"
t("mprotect", mprot)
t("write", lambda: os.write(fd, b"x"))
t("pwrite", lambda: os.pwrite(fd, b"x", 4096))
t("ftruncate", lambda: os.ftruncate(fd, 0))
t("grow", lambda: os.ftruncate(fd, size * 2))
t("seals", lambda: fcntl.fcntl(fd, 1034))
t("add_seal", lambda: fcntl.fcntl(fd, 1033, 8))
def punch():
    if libc.fallocate(fd, 3, ctypes.c_long(0), ctypes.c_long(4096)) != 0:
        raise OSError(ctypes.get_errno(), "fallocate")
    return "punched"
t("punch", punch)
t("open_rdwr", lambda: os.open(RP, os.O_RDWR))
t("open_wronly", lambda: os.open(RP, os.O_WRONLY))
def reopen():
    f2 = os.open(f"/proc/self/fd/{fd}", os.O_RDWR)
    os.write(f2, b"XXXX")
    os.pwrite(f2, b"XXXX", 0)
t("reopen_rdwr", reopen)
t("magic", lambda: mmap.mmap(fd, 4096, mmap.MAP_SHARED, mmap.PROT_READ)[:4])
)PY");
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Code(res, "map_read"), "OK") << r.out;
  for (const char* k : {"map_write", "mprotect", "write", "pwrite", "ftruncate", "grow", "add_seal",
                        "punch", "open_rdwr", "open_wronly"}) {
    EXPECT_NE(Code(res, k), "OK") << k << ": " << r.out;
    EXPECT_NE(Code(res, k), "<missing>") << k << ": " << r.out;
  }
  // /proc/self/fd/N of the region does not reopen it for writing (whatever
  // it opens, the region is unchanged).
  EXPECT_EQ(Value(res, "magic"), "b'SFM1'") << r.out;
  // F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE
  EXPECT_EQ(Value(res, "seals"), "23") << r.out;
}

// Every published answer is the trapped call's, byte for byte, and nothing of
// /tmp, /proc, /dev, the home, a -v mount or the sentry's own /etc files is
// published (the upper layer's answers off: fast_upper_test.cc has them).
TEST(FastMeta, HoldsOnlyWhatATrapAnswers) {
  TempDir ro("/tmp/sec-fm-ro-");
  TempDir ov("/tmp/sec-fm-ov-");
  WriteFileOrDie(ro.path() + "/f", "x");
  WriteFileOrDie(ov.path() + "/f", "y");
  ProcessResult r = RunRegionPy(
      R"PY(
paths = ["/usr/bin/env", "/usr/lib", "/usr/bin/python3", "/etc/passwd", "/etc/shadow",
         "/etc/hostname", "/etc/sentry/fastmeta", "/tmp", "/proc/self/status", "/dev/null",
         "/home/sandbox", "/data", "/data/f", "/data/none", "/usr/share/fmtest/f",
         "/usr/share/fmtest/none", "/usr/lib/fm-none", "/etc/fm-none", "/tmp/none"]
for _ in range(2):
    for p in paths:
        for f in (os.stat, os.lstat):
            try: f(p)
            except OSError: pass
        try: os.readlink(p)
        except OSError: pass
        os.access(p, os.R_OK)
for d in ("/etc", "/etc/ssl", "/usr/lib", "/usr/bin"):
    t("stat_" + d, lambda: os.stat(d).st_nlink)
allowed = ("usr", "bin", "sbin", "lib", "lib64", "lib32", "etc")
def check(e):
    bad = []
    for (p, follow), (flags, st, target) in e.items():
        if p.split("/")[1] not in allowed or p.startswith(("/etc/sentry", "/usr/share/fmtest")):
            bad.append(("outside", p))
        if p in ("/etc/passwd", "/etc/hostname", "/etc/hosts", "/etc/ld.so.preload"):
            bad.append(("sentry's own", p))
        # Each entry answers lstat, and stat too when follow is set.
        for f in ((0, 1) if follow else (0,)):
            want = raw_stat(p, f)
            if flags & 2:
                if want != 2: bad.append(("absent", p, want))
            elif want != st:
                bad.append(("stat", p, f))
        if flags & 4 and raw_readlink(p) != target:
            bad.append(("target", p))
    return bad
e = entries()
t("count", lambda: len(e))
t("bad", lambda: check(e))
t("has_env", lambda: ("/usr/bin/env", 1) in e)
t("has_link", lambda: e[("/usr/bin/python3", 0)][2])
t("has_absent", lambda: e[("/usr/lib/fm-none", 1)][0] & 2)
t("has_shadow", lambda: ("/etc/shadow", 1) in e and e[("/etc/shadow", 1)][0] & 2)
# A listing counts a directory's links anew (the /etc rule hides some): no
# answer given before may stay.
os.listdir("/usr/bin")
# A listing publishes its entries (getdents64's fill): /usr/bin/env anew.
t("filled", lambda: ("/usr/bin/env", 1) in entries())
for d in ("/etc", "/etc/ssl", "/usr/lib", "/usr/bin", "/data", "/usr/share/fmtest", "/tmp",
          "/proc", "/dev"):
    try: os.listdir(d)
    except OSError: pass
for d in ("/etc", "/etc/ssl", "/usr/lib", "/usr/bin"):
    for _ in range(2): os.stat(d)
t("bad_after_listing", lambda: check(entries()))
t("token_paths", lambda: sorted(set(p.split("/")[1] for p in tokens().values())))
)PY",
      {"-v", ro.path() + ":/data:ro", "-v", ov.path() + ":/usr/share/fmtest", "--no-fast-upper"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Value(res, "bad"), "[]") << r.out;
  EXPECT_EQ(Value(res, "bad_after_listing"), "[]") << r.out;
  EXPECT_EQ(Value(res, "has_env"), "True") << r.out;
  EXPECT_EQ(Value(res, "filled"), "True") << r.out;
  // Tokens beneath /usr (and /etc) only: not of /data, /tmp, /proc, /dev
  // or a -v mount beneath /usr.
  std::string tops = Value(res, "token_paths");
  EXPECT_TRUE(tops == "['usr']" || tops == "['etc', 'usr']") << r.out;
  EXPECT_EQ(Value(res, "has_link"), "'python3.11'") << r.out;
  EXPECT_EQ(Value(res, "has_absent"), "2") << r.out;
  // /etc/shadow is hidden by the /etc rule: its answer is ENOENT, if any.
  std::string shadow = Value(res, "has_shadow");
  EXPECT_TRUE(shadow == "False" || shadow == "2") << r.out;
}

// A change to a lower path (copy-up, create, unlink, rename, chmod, utimes,
// mkdir, a symlink replaced) is seen by the next call, answered through the
// preload library's stat/lstat/access/readlink.
TEST(FastMeta, WriteIsSeenAtOnce) {
  ProcessResult r = RunRegionPy(R"PY(
def twice(f):
    f(); return f()
n = "/usr/lib/fm-new"
t("env_before", lambda: oct(twice(lambda: os.stat("/usr/bin/env")).st_mode))
t("env_published", lambda: ("/usr/bin/env", 1) in entries())
os.chmod("/usr/bin/env", 0o700)
t("env_after", lambda: oct(os.stat("/usr/bin/env").st_mode))
t("env_access", lambda: os.access("/usr/bin/env", os.R_OK))
os.utime("/usr/bin/env", (1, 2))
t("env_mtime", lambda: os.lstat("/usr/bin/env").st_mtime)
t("new_before", lambda: twice(lambda: os.stat(n)))
t("new_published", lambda: entries()[(n, 1)][0] & 2)
open(n, "w").close()
t("new_after", lambda: os.stat(n).st_size)
os.rename(n, n + "2")
t("new_renamed_from", lambda: os.stat(n))
t("new_renamed_to", lambda: os.lstat(n + "2").st_size)
os.unlink(n + "2")
t("new_unlinked", lambda: os.stat(n + "2"))
nl = twice(lambda: os.stat("/usr/lib").st_nlink)
os.mkdir("/usr/lib/fm-dir")
t("nlink_grew", lambda: os.stat("/usr/lib").st_nlink - nl)
t("link_before", lambda: twice(lambda: os.readlink("/usr/bin/python3")))
os.unlink("/usr/bin/python3")
os.symlink("elsewhere", "/usr/bin/python3")
t("link_after", lambda: os.readlink("/usr/bin/python3"))
t("efault", lambda: libc.stat(b"/usr/bin/env", ctypes.c_void_p(8)) or "no error")
t("efault_errno", lambda: ctypes.get_errno())
)PY",
                                {"--root"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Value(res, "env_published"), "True") << r.out;
  EXPECT_EQ(Value(res, "env_after"), "'0o100700'") << r.out;
  EXPECT_EQ(Value(res, "env_access"), "True") << r.out;  // root reads anything
  EXPECT_EQ(Value(res, "env_mtime"), "2.0") << r.out;
  EXPECT_EQ(Code(res, "new_before"), "ENOENT") << r.out;
  EXPECT_EQ(Value(res, "new_published"), "2") << r.out;
  EXPECT_EQ(Value(res, "new_after"), "0") << r.out;
  EXPECT_EQ(Code(res, "new_renamed_from"), "ENOENT") << r.out;
  EXPECT_EQ(Value(res, "new_renamed_to"), "0") << r.out;
  EXPECT_EQ(Code(res, "new_unlinked"), "ENOENT") << r.out;
  EXPECT_EQ(Value(res, "nlink_grew"), "1") << r.out;
  EXPECT_EQ(Value(res, "link_before"), "'python3.11'") << r.out;
  EXPECT_EQ(Value(res, "link_after"), "'elsewhere'") << r.out;
  EXPECT_EQ(Value(res, "efault"), "-1") << r.out;
  EXPECT_EQ(Value(res, "efault_errno"), "14") << r.out;
}

// One region per sandbox: what one run published, the next does not hold.
// (Without negatives: with them /usr/lib's listing, taken at Python's
// start-up, answers the name's ENOENT and no slot of its own is published.)
TEST(FastMeta, OneRegionPerSandbox) {
  std::string name = "/usr/lib/fm-" + RandomToken(12);
  std::string body = "n = " + PyQuote(name) + R"PY(
for _ in range(2):
    try: os.stat(n)
    except OSError: pass
t("mine", lambda: (n, 1) in entries())
)PY";
  ProcessResult first = RunRegionPy(body, {"--no-fast-negatives"});
  ASSERT_EQ(first.exit_code, 0) << Describe(first);
  EXPECT_EQ(Value(ParseResults(first.out), "mine"), "True") << first.out;
  ProcessResult second = RunRegionPy("n = " + PyQuote(name) + R"PY(
t("theirs", lambda: (n, 1) in entries())
)PY",
                                     {"--no-fast-negatives"});
  ASSERT_EQ(second.exit_code, 0) << Describe(second);
  EXPECT_EQ(Value(ParseResults(second.out), "theirs"), "False") << second.out;
}

// A guest that maps over its region, or unmaps it, keeps getting the trapped
// answers; so does one whose sentry publishes nothing.
TEST(FastMeta, ReplacedRegionOnlyTraps) {
  std::string body = R"PY(
for _ in range(2): os.stat("/usr/bin/env")
want = raw_stat("/usr/bin/env", 1)
lines = [l for l in open("/proc/self/maps") if "memfd:sentry-fastmeta (" in l]
t("mapped", lambda: len(lines))
if lines:
    lo, hi = (int(x, 16) for x in lines[0].split()[0].split("-"))
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    a = libc.mmap(ctypes.c_void_p(lo), hi - lo, 3, 0x32, -1, 0)  # MAP_PRIVATE|MAP_ANONYMOUS|MAP_FIXED
    t("replaced", lambda: a == lo)
    buf = ctypes.create_string_buffer(144)
    t("same", lambda: libc.stat(b"/usr/bin/env", buf) == 0 and buf.raw == want)
    libc.munmap(ctypes.c_void_p(lo), ctypes.c_size_t(hi - lo))
t("after_unmap", lambda: os.stat("/usr/bin/env").st_ino == struct.unpack_from("<Q", want, 8)[0])
t("absent", lambda: os.stat("/usr/lib/fm-none"))
)PY";
  ProcessResult r = RunRegionPy(body);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Value(res, "mapped"), "1") << r.out;
  EXPECT_EQ(Value(res, "replaced"), "True") << r.out;
  EXPECT_EQ(Value(res, "same"), "True") << r.out;
  EXPECT_EQ(Value(res, "after_unmap"), "True") << r.out;
  EXPECT_EQ(Code(res, "absent"), "ENOENT") << r.out;

  ProcessResult off = RunPy(R"PY(
t("preload", lambda: open("/etc/ld.so.preload").read())
t("maps", lambda: sum("sentry-fastmeta" in l for l in open("/proc/self/maps")))
t("stat", lambda: os.stat("/usr/bin/env").st_size > 0)
)PY",
                            {"--no-fast-metadata"});
  ASSERT_EQ(off.exit_code, 0) << Describe(off);
  Results o = ParseResults(off.out);
  EXPECT_EQ(Code(o, "preload"), "ENOENT") << off.out;
  EXPECT_EQ(Value(o, "maps"), "0") << off.out;
  EXPECT_EQ(Value(o, "stat"), "True") << off.out;

  ProcessResult on = RunPy(R"PY(
t("maps", lambda: sum("memfd:sentry-fastmeta (" in l for l in open("/proc/self/maps")))
)PY",
                           {});  // the default: on
  ASSERT_EQ(on.exit_code, 0) << Describe(on);
  EXPECT_EQ(Value(ParseResults(on.out), "maps"), "1") << on.out;
}

// A directory fd's fstat and its relative lookups (fstatat(fd, name), as
// find and fts make them) are answered from the region after a listing,
// without a trap: counted by the census, whose trapped newfstatat stay far
// below the calls made. Every answer is the kernel's.
TEST(FastMeta, DirectoryFdAnswersWithoutATrap) {
  TempDir census("/tmp/sec-fm-census-");
  std::string file = census.path() + "/census.json";
  ProcessResult r = RunRegionPy(R"PY(
fd = os.open("/usr/lib/python3.11", os.O_RDONLY | os.O_DIRECTORY)
names = os.listdir(fd)
t("agree", lambda: agree(fd, ["json", "os.py", "none", "json/decoder.py", "json/none"]))
for _ in range(300):
    lib_stat_at(fd, "json")
    lib_fstat(fd)
t("token", lambda: "/usr/lib/python3.11" in tokens().values())
)PY",
                                {"--census", file});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Value(res, "agree"), "[]") << r.out;
  EXPECT_EQ(Value(res, "token"), "True") << r.out;
  ProcessResult count = testing::RunProcess(
      {"/usr/bin/python3", "-c",
       "import json,sys; d=json.load(open(sys.argv[1])); "
       "print(sum(x['trapped'] for x in d['syscalls'] if x['name']=='newfstatat'))",
       file});
  ASSERT_EQ(count.exit_code, 0) << Describe(count);
  // 600 calls made; Python's own start-up traps about a hundred.
  EXPECT_LT(std::stoi(count.out), 300) << count.out;
}

// An fd number that names another object than the token it named (closed
// and reopened, dup2 over it, a pipe in its place, in a forked child) is
// answered for what it names now, never from the old directory's entries.
TEST(FastMeta, FdReuseNeverAnswersForTheOldDirectory) {
  ProcessResult r = RunRegionPy(R"PY(
import time
A, B = "/usr/lib/python3.11/json", "/usr/lib/python3.11/email"
fd = os.open(A, os.O_RDONLY | os.O_DIRECTORY)
os.listdir(fd)
t("a_hit", lambda: (lib_stat_at(fd, "decoder.py") == raw_stat_at(fd, "decoder.py", 0x100),
                    A in tokens().values()))
# Closed, then another directory opened under the same number.
os.close(fd)
fd2 = os.open(B, os.O_RDONLY | os.O_DIRECTORY)
t("same_number", lambda: fd2 == fd)
os.listdir(fd2)
t("reopened", lambda: (lib_stat_at(fd2, "decoder.py"), agree(fd2, ["decoder.py", "parser.py"])))
# dup2 of a directory, then of a regular file, then a pipe, over it.
a = os.open(A, os.O_RDONLY | os.O_DIRECTORY)
os.listdir(a)
os.dup2(a, fd2)
t("dup2_dir", lambda: (lib_stat_at(fd2, "parser.py"), agree(fd2, ["decoder.py", "parser.py"])))
f = os.open(A + "/decoder.py", os.O_RDONLY)
os.dup2(f, fd2)
t("dup2_file", lambda: (lib_stat_at(fd2, "decoder.py"), agree(fd2, ["decoder.py"])))
os.close(fd2)
rp, wp = os.pipe()
os.dup2(rp, fd2)
t("pipe", lambda: (lib_stat_at(fd2, "decoder.py"), agree(fd2, ["decoder.py"])))
# Raw close and a raw dup3: the library sees nothing of them.
libc.syscall(3, fd2)
libc.syscall(292, a, fd2, 0)
t("raw_dup3", lambda: agree(fd2, ["decoder.py", "parser.py"]))
libc.syscall(3, fd2)
t("raw_closed", lambda: (lib_stat_at(fd2, "decoder.py"), lib_fstat(fd2)))
# A forked child sees the parent's token; its own dup2 is its own.
pid = os.fork()
if pid == 0:
    ok = agree(a, ["decoder.py", "parser.py"]) == [] and lib_stat_at(a, "decoder.py") != 2
    e = os.open(B, os.O_RDONLY | os.O_DIRECTORY)
    os.dup2(e, a)
    ok = ok and lib_stat_at(a, "decoder.py") == 2 and agree(a, ["decoder.py", "parser.py"]) == []
    os._exit(0 if ok else 1)
t("child", lambda: os.waitpid(pid, 0)[1])
t("parent_after", lambda: (lib_stat_at(a, "decoder.py") != 2, agree(a, ["decoder.py"])))
# A forged token: another guest process locks the byte of A's token id on a
# file of its own; the lock reads as that process's, not the sentry's.
tid = int([k for k, p in tokens().items() if p == A][0][1:], 16)
forged = os.open("/tmp/fm-forged", os.O_RDWR | os.O_CREAT)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    fcntl.fcntl(forged, fcntl.F_SETLK, struct.pack("hhqqi4x", fcntl.F_RDLCK, 0, tid, 1, 0))
    os.write(w, b"x")
    time.sleep(30)
    os._exit(0)
os.read(r, 1)
seen = struct.unpack("hhqqi4x", fcntl.fcntl(forged, fcntl.F_GETLK,
                                            struct.pack("hhqqi4x", fcntl.F_WRLCK, 0, 0, 0, 0)))
t("forged_lock", lambda: (seen[2] == tid, seen[4] > 0))
t("forged", lambda: (lib_stat_at(forged, "decoder.py"), agree(forged, ["decoder.py"])))
os.kill(pid, 9)
os.waitpid(pid, 0)
)PY");
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Value(res, "a_hit"), "(True, True)") << r.out;
  EXPECT_EQ(Value(res, "same_number"), "True") << r.out;
  EXPECT_EQ(Value(res, "reopened"), "(2, [])") << r.out;    // ENOENT: email has none
  EXPECT_EQ(Value(res, "dup2_dir"), "(2, [])") << r.out;    // json has no parser.py
  EXPECT_EQ(Value(res, "dup2_file"), "(20, [])") << r.out;  // ENOTDIR
  EXPECT_EQ(Value(res, "pipe"), "(20, [])") << r.out;
  EXPECT_EQ(Value(res, "raw_dup3"), "[]") << r.out;
  EXPECT_EQ(Value(res, "raw_closed"), "(9, 9)") << r.out;  // EBADF
  EXPECT_EQ(Value(res, "child"), "0") << r.out;
  EXPECT_EQ(Value(res, "parent_after"), "(True, [])") << r.out;
  // The forger's lock is there, at the token's byte, with its own pid.
  EXPECT_EQ(Value(res, "forged_lock"), "(True, True)") << r.out;
  EXPECT_EQ(Value(res, "forged"), "(20, [])") << r.out;  // ENOTDIR: a file
}

// A listed directory the guest renames, empties or removes: its fd's
// answers follow at once (every lower change invalidates the region before
// its trap is answered), and its token names its new path or none.
TEST(FastMeta, RenamedOrRemovedDirectory) {
  ProcessResult r = RunRegionPy(R"PY(
import shutil
A = "/usr/lib/python3.11/json"
fd = os.open(A, os.O_RDONLY | os.O_DIRECTORY)
os.listdir(fd)
t("before", lambda: (lib_stat_at(fd, "decoder.py") != 2, agree(fd, ["decoder.py"])))
os.rename(A, A + "-moved")
os.mkdir(A)
open(A + "/decoder.py", "w").close()
t("renamed", lambda: agree(fd, ["decoder.py", "tool.py", "none"]))
os.listdir(fd)
t("renamed_token", lambda: sorted(p for p in tokens().values() if p.startswith(A)))
t("renamed_size", lambda: lib_stat_at(fd, "decoder.py") != raw_stat_at(-100, A + "/decoder.py", 0))
os.unlink(A + "-moved/tool.py")
t("unlinked", lambda: (lib_stat_at(fd, "tool.py"), agree(fd, ["tool.py", "decoder.py"])))
shutil.rmtree(A + "-moved")
t("removed", lambda: (lib_stat_at(fd, "decoder.py"), agree(fd, ["decoder.py"])))
t("removed_token", lambda: sorted(p for p in tokens().values() if p.startswith(A)))
)PY",
                                {"--root"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Value(res, "before"), "(True, [])") << r.out;
  EXPECT_EQ(Value(res, "renamed"), "[]") << r.out;
  std::string renamed = Value(res, "renamed_token");
  EXPECT_TRUE(renamed == "['/usr/lib/python3.11/json-moved']" || renamed == "[]") << r.out;
  EXPECT_EQ(Value(res, "renamed_size"), "True") << r.out;
  EXPECT_EQ(Value(res, "unlinked"), "(2, [])") << r.out;
  EXPECT_EQ(Value(res, "removed"), "(2, [])") << r.out;
  EXPECT_EQ(Value(res, "removed_token"), "[]") << r.out;
}

// A :rw mount's directory is never published: its fd's answers are the
// host's as they change under the guest.
TEST(FastMeta, RwMountSeesHostChanges) {
  TempDir rw("/tmp/sec-fm-rw-");
  ASSERT_EQ(chmod(rw.path().c_str(), 0777), 0);  // the guest's uid writes it
  ASSERT_EQ(mkdir((rw.path() + "/d").c_str(), 0755), 0);
  WriteFileOrDie(rw.path() + "/d/f", "1");
  std::string ready = rw.path() + "/ready";
  std::thread host([&] {
    for (int i = 0; i < 1000 && access(ready.c_str(), F_OK) != 0; ++i) usleep(10000);
    WriteFileOrDie(rw.path() + "/d/f", "12345");
  });
  ProcessResult r = RunRegionPy(R"PY(
import time
fd = os.open("/data/d", os.O_RDONLY | os.O_DIRECTORY)
os.listdir(fd)
for _ in range(3): lib_stat_at(fd, "f"); lib_fstat(fd)
t("agree", lambda: agree(fd, ["f", "none"]))
def under_data(p): return p == "/data" or p.startswith("/data/")
t("published", lambda: [k for k in [p for p, _ in entries()] + list(tokens().values())
                        if under_data(k)])
open("/data/ready", "w").close()
size = None
for _ in range(500):
    b = lib_stat_at(fd, "f")
    size = struct.unpack_from("<q", b, 48)[0] if not isinstance(b, int) else b
    if size == 5: break
    time.sleep(0.01)
t("size", lambda: size)
)PY",
                                {"-v", rw.path() + ":/data:rw"});
  host.join();
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Value(res, "agree"), "[]") << r.out;
  EXPECT_EQ(Value(res, "published"), "[]") << r.out;
  EXPECT_EQ(Value(res, "size"), "5") << r.out;
}

}  // namespace
}  // namespace sentry::security
