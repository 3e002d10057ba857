// Answers that cross a symlink, and realpath, from the fast-metadata region
// (fastmeta/resolve.c, syscalls/fast_meta_publish.cc PublishResolved). Each
// answer must be the trap's (the raw syscall, which always traps), at once
// after another process replaces a link or moves its target; nothing is
// published below a directory not every caller may search, or under a -v
// mount, whatever link leads there; a loop is the trap's ELOOP, a chain of 40
// links resolves and of 41 does not; and the calls that crossed /bin
// (merged /usr) stop trapping.
#include <sys/stat.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/security/security_util.h"
#include "tests/util/subprocess.h"

namespace sentry::security {
namespace {

// raw(): newfstatat by the raw syscall (always trapped); lib(): os.stat
// (libc's, interposed); rp(): libc's realpath (interposed); keys(): the
// region's live slots' keys.
constexpr char kSymlinkPy[] = R"PY(
import ctypes, mmap, struct
libc = ctypes.CDLL(None, use_errno=True)
libc.realpath.restype = ctypes.c_void_p
def raw(path, follow=True):
    buf = ctypes.create_string_buffer(256)
    r = libc.syscall(262, -100, path.encode(), buf, 0 if follow else 0x100)
    if r < 0: return errno.errorcode[ctypes.get_errno()]
    ino, nlink, mode = struct.unpack_from("<QQI", buf.raw, 8)
    return (ino, mode)
def lib(path, follow=True):
    try:
        st = os.stat(path) if follow else os.lstat(path)
        return (st.st_ino, st.st_mode)
    except OSError as e:
        return errno.errorcode[e.errno]
def rp(path):
    r = libc.realpath(path.encode(), None)
    if not r: return errno.errorcode[ctypes.get_errno()]
    s = ctypes.string_at(r).decode(); libc.free(ctypes.c_void_p(r)); return s
def same(path): return lib(path) == raw(path) and lib(path, False) == raw(path, False)
def bad(paths): return [p for p in paths if not same(p)]
def keys():
    fd = os.open("/etc/sentry/fastmeta", os.O_RDONLY)
    m = mmap.mmap(fd, os.lseek(fd, 0, 2), mmap.MAP_SHARED, mmap.PROT_READ)
    os.close(fd)
    _, ver, ssz, n, off, gen = struct.unpack_from("<IIIIQQ", m, 0)
    ugen, = struct.unpack_from("<Q", m, 64)
    out = set()
    for i in range(n):
        b = off + i * ssz
        seq, flags, g, _, pl, _ = struct.unpack_from("<IIQIHH", m, b)
        if g == (ugen if flags & 64 else gen) and not seq & 1:
            out.add(m[b + 168:b + 168 + pl].decode(errors="replace"))
    return out
)PY";

ProcessResult RunSymlinkPy(const std::string& body, std::vector<std::string> flags = {}) {
  flags.insert(flags.begin(), "--fast-metadata");
  return RunPy(std::string(kSymlinkPy) + body, flags);
}

// /bin, /lib (merged /usr), a relative and an absolute link, "..": the same
// answers as the trap's, published, and asked 200 times with a handful of
// traps (without the region, every stat, lstat and realpath component traps).
constexpr char kMergedPy[] = R"PY(
P = ["/bin/sh", "/bin", "/lib/x86_64-linux-gnu", "/usr/bin/python3", "/usr/bin/../lib",
     "/usr/lib/x86_64-linux-gnu/../../include", "/bin/none", "/bin/sh/x"]
t("same", lambda: bad(P))
t("realpath", lambda: [rp(p) for p in ("/bin/sh", "/usr/bin/../lib", "/bin/none", "/")])
t("published", lambda: sorted(k for k in keys() if k in ("/bin", "/lib", "/usr/bin/python3")))
import time
for i in range(200):
    for p in P: lib(p); lib(p, False)
    rp("/bin/sh"); rp("/lib/x86_64-linux-gnu/libc.so.6"); os.access("/bin/sh", os.X_OK)
t("done", lambda: 1)
)PY";

TEST(FastSymlink, MergedUsrIsAnsweredWithoutTraps) {
  TempDir census("/tmp/sec-fs-census-");
  std::string on_file = census.path() + "/on.json";
  ProcessResult r = RunSymlinkPy(kMergedPy, {"--census", on_file});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Value(res, "same"), "[]") << r.out;
  EXPECT_EQ(Value(res, "realpath"), "['/usr/bin/dash', '/usr/lib', 'ENOENT', '/']") << r.out;
  EXPECT_EQ(Value(res, "published"), "['/bin', '/lib', '/usr/bin/python3']") << r.out;
  EXPECT_EQ(Value(res, "done"), "1") << r.out;
  // 200 rounds of 16 stats, 2 realpaths (9 components) and an access: a
  // handful of traps (the first round's, and python's own).
  EXPECT_LT(Trapped(on_file, "newfstatat"), 150);
  EXPECT_LT(Trapped(on_file, "readlink"), 20);
  EXPECT_LT(Trapped(on_file, "access"), 10);
  std::string off_file = census.path() + "/off.json";
  ProcessResult off = RunSymlinkPy(kMergedPy, {"--no-fast-metadata", "--census", off_file});
  ASSERT_EQ(off.exit_code, 0) << Describe(off);
  EXPECT_EQ(Value(ParseResults(off.out), "realpath"), Value(res, "realpath")) << off.out;
  EXPECT_GT(Trapped(off_file, "readlink"), 1800);
  EXPECT_GT(Trapped(off_file, "newfstatat"), 3200);
}

// Links in /tmp (upper answers): every kind, and every change another
// process makes to a link or to what it leads to is seen at once.
constexpr char kUpperPy[] = R"PY(
D = "/tmp/fs"
os.makedirs(D + "/a/sub"); os.makedirs(D + "/b/sub")
open(D + "/a/f", "w").close(); open(D + "/b/f", "w").close()
os.symlink("a", D + "/link"); os.symlink(D + "/a/sub", D + "/abs")
os.symlink("link", D + "/chain"); os.symlink("l2", D + "/l1"); os.symlink("l1", D + "/l2")
os.symlink("nowhere", D + "/dangling"); os.symlink("../../../../..", D + "/a/sub/root")
os.symlink("/proc/self/root/tmp/fs/a", D + "/viaproc")
for i in range(41): os.symlink(f"c{i + 1}" if i < 40 else "a", f"{D}/c{i}")
P = [D + p for p in ("/link/f", "/link/sub/..", "/abs/../f", "/chain/f", "/l1", "/l1/x",
                     "/dangling", "/dangling/x", "/a/sub/root/tmp/fs/a/f", "/viaproc/f", "/c0",
                     "/c1", "/c1/f", "/link/", "/link/f/")]
def check(name):
    for _ in range(2): b = bad(P)  # the first asks the trap, the second the region
    t(name, lambda: (b, rp(D + "/chain/f"), rp(D + "/c1/f"), rp(D + "/c0/f"), rp(D + "/l1")))
check("start")
t("published", lambda: sorted(k[len(D):] for k in keys() if k.startswith(D + "/link")))
elsewhere(lambda: (os.unlink(D + "/link"), os.symlink("b", D + "/link")))
check("replaced")
elsewhere(lambda: os.rename(D + "/b", D + "/b2"))
check("target_moved")
elsewhere(lambda: os.rename(D + "/b2", D + "/b"))
elsewhere(lambda: os.rename(D + "/a", D + "/link2"))
check("renamed_over")
)PY";

TEST(FastSymlink, UpperLinksAreSeenAtOnce) {
  ProcessResult r = RunSymlinkPy(kUpperPy);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Value(res, "start"), "([], '/tmp/fs/a/f', '/tmp/fs/a/f', 'ELOOP', 'ELOOP')") << r.out;
  // The link's own answer; what lies below it, at its own paths.
  EXPECT_EQ(Value(res, "published"), "['/link']") << r.out;
  EXPECT_EQ(Value(res, "replaced"), "([], '/tmp/fs/b/f', '/tmp/fs/a/f', 'ELOOP', 'ELOOP')")
      << r.out;
  EXPECT_EQ(Value(res, "target_moved"), "([], 'ENOENT', '/tmp/fs/a/f', 'ELOOP', 'ELOOP')") << r.out;
  EXPECT_EQ(Value(res, "renamed_over"), "([], '/tmp/fs/b/f', 'ENOENT', 'ELOOP', 'ELOOP')") << r.out;
}

// Random paths over a tree of directories, files and links of every kind
// ("..", ".", empty names, loops, links to /bin and to "/"): the library's
// stat, lstat and realpath equal the trap's (realpath's: the sentry's own
// walk, an open and its /proc/self/fd link; an O_PATH fd of a regular file
// reads /dev/null there), asked twice each (the
// second time from what the first published).
constexpr char kRandomPy[] = R"PY(
import random
D = "/tmp/fr"
os.makedirs(D + "/a/b/c"); open(D + "/a/f", "w").write("x"); open(D + "/a/b/g", "w").write("x")
for name, target in (("l1", "a"), ("l2", "a/b"), ("abs", D + "/a/b"), ("up", ".."), ("dot", "."),
                     ("loop", "loop"), ("bin", "/bin"), ("root", "/"), ("fl", "a/f"),
                     ("chain", "l2/../b"), ("dang", "none/x"), ("usr", "/usr/bin/../lib")):
    os.symlink(target, f"{D}/{name}")
os.symlink("../../l1", D + "/a/b/back")
names = ["a", "b", "c", "f", "g", "l1", "l2", "abs", "up", "dot", "loop", "bin", "root", "fl",
         "chain", "dang", "usr", "back", "..", ".", "", "none", "sh", "lib"]
def ref(p):
    try:
        try: fd = os.open(p, os.O_RDONLY)
        except PermissionError: fd = os.open(p, os.O_PATH)  # a directory: no /dev/null
    except OSError as e:
        return errno.errorcode[e.errno]
    r = os.readlink(f"/proc/self/fd/{fd}"); os.close(fd); return r
random.seed(29)
bad_stat, bad_rp, answered = [], [], 0
for i in range(1500):
    p = D + "/" + "/".join(random.choice(names) for _ in range(random.randint(1, 6)))
    if random.random() < 0.1: p += "/"
    for _ in range(2):
        if not same(p): bad_stat.append(p)
        want, got = ref(p), rp(p)
        if got != want and not (want == "ENOTDIR" and got == "ENOENT"): bad_rp.append((p, got, want))
t("stat", lambda: bad_stat[:5])
t("realpath", lambda: bad_rp[:5])
)PY";

TEST(FastSymlink, RandomWalksMatchTheTrap) {
  ProcessResult r = RunSymlinkPy(kRandomPy);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Value(res, "stat"), "[]") << r.out;
  EXPECT_EQ(Value(res, "realpath"), "[]") << r.out;
}

// Nothing below a directory not every caller may search, whatever link
// leads there; nothing of a -v mount, through a link or not; /proc never.
// (--no-fast-upper-files: with it, a directory its owner alone may search
// is walked while every guest process is that owner, fast_meta_publish.cc.)
TEST(FastSymlink, OnlyWhatEveryCallerGets) {
  TempDir rw("/tmp/sec-fs-rw-");
  WriteFileOrDie(rw.path() + "/f", "x");
  ASSERT_EQ(chmod(rw.path().c_str(), 0755), 0);
  ProcessResult r = RunSymlinkPy(R"PY(
D = "/tmp/fs-perm"
os.makedirs(D + "/closed/d"); open(D + "/closed/f", "w").close(); os.chmod(D + "/closed", 0o700)
os.symlink("closed/f", D + "/in"); os.symlink("closed", D + "/cl")
os.symlink("/tmp/ro", D + "/ro"); os.symlink("/proc/self", D + "/self")
P = [D + p for p in ("/in", "/cl/d", "/cl/d/..", "/cl/none", "/ro/f", "/ro/none", "/ro/.",
                     "/self/fd", "/self/..")]
for _ in range(2): b = bad(P)
t("same", lambda: b)
t("realpath", lambda: [rp(p) for p in P[:2] + P[4:5]])
t("keys", lambda: sorted(k for k in keys() if k.lstrip("@").startswith(("/tmp", "/proc"))
                         and not k.lstrip("@").startswith("/tmp/fs-perm/") and k.lstrip("@") != "/tmp"))
t("below", lambda: sorted(k for k in keys() if k.lstrip("@").startswith(D + "/")))
)PY",
                                 {"-v", rw.path() + ":/tmp/ro", "--no-fast-upper-files"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Value(res, "same"), "[]") << r.out;
  EXPECT_EQ(Value(res, "realpath"),
            "['/tmp/fs-perm/closed/f', '/tmp/fs-perm/closed/d', '/tmp/ro/f']")
      << r.out;
  EXPECT_EQ(Value(res, "keys"), "['/tmp/fs-perm']") << r.out;
  // The links themselves, and the closed directory's own answer; nothing in
  // it, nothing of the mount, nothing of /proc.
  EXPECT_EQ(Value(res, "below"),
            "['/tmp/fs-perm/cl', '/tmp/fs-perm/closed', '/tmp/fs-perm/in', '/tmp/fs-perm/ro', "
            "'/tmp/fs-perm/self']")
      << r.out;
}

}  // namespace
}  // namespace sentry::security
