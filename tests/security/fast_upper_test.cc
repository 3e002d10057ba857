// Upper answers in the fast-metadata region (fastmeta/region.h
// SENTRY_FM_UPPER): the in-memory upper layer's directories and symlinks
// (/tmp), their listings and the names absent from them, answered by the
// guest's library without a trap. Each answer must be the trap's (compared
// with the raw syscall, which always traps), at once after any write another
// process makes (every kind of write invalidates before its reply); nothing
// is published for a directory not every caller may search or read, a
// write-through mount, a regular file or /proc; --no-fast-upper turns it off.
#include <sys/stat.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/security/security_util.h"
#include "tests/util/subprocess.h"

namespace sentry::security {
namespace {

// raw(): newfstatat by the raw syscall (always trapped); lib(): os.stat
// (libc's, interposed); names(): the raw getdents64's names; upper(): the
// keys of the region's live UPPER slots.
constexpr char kUpperPy[] = R"PY(
import ctypes, mmap, socket, struct
libc = ctypes.CDLL(None, use_errno=True)
def decode(raw):
    ino, nlink, mode, uid = struct.unpack_from("<QQII", raw, 8)
    size, = struct.unpack_from("<q", raw, 48)
    mt = struct.unpack_from("<qq", raw, 88); ct = struct.unpack_from("<qq", raw, 104)
    return (ino, mode, nlink, uid, size, mt[0] * 10**9 + mt[1], ct[0] * 10**9 + ct[1])
def raw(path, follow=True, fd=-100):
    buf = ctypes.create_string_buffer(256)
    flags = (0 if follow else 0x100) | (0x1000 if path == "" else 0)
    r = libc.syscall(262, fd, path.encode(), buf, flags)
    if r < 0: return errno.errorcode[ctypes.get_errno()]
    return decode(buf.raw)
def lib(path, follow=True, fd=None):
    try:
        if fd is not None:
            st = os.fstat(fd) if path == "" else os.stat(path, dir_fd=fd, follow_symlinks=follow)
        else:
            st = os.stat(path) if follow else os.lstat(path)
        return (st.st_ino, st.st_mode, st.st_nlink, st.st_uid, st.st_size, st.st_mtime_ns,
                st.st_ctime_ns)
    except OSError as e:
        return errno.errorcode[e.errno]
def same(path): return lib(path) == raw(path) and lib(path, False) == raw(path, False)
def names(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    buf, out = ctypes.create_string_buffer(1 << 16), []
    while (n := libc.syscall(217, fd, buf, 1 << 16)) > 0:
        off = 0
        while off < n:
            rl, = struct.unpack_from("<H", buf.raw, off + 16)
            out.append(buf.raw[off + 19:off + rl].split(b"\0", 1)[0].decode())
            off += rl
    os.close(fd)
    return sorted(x for x in out if x not in (".", ".."))
COMPLETE = set()  # the COMPLETE listings among upper()'s keys
def upper():
    fd = os.open("/etc/sentry/fastmeta", os.O_RDONLY)
    m = mmap.mmap(fd, os.lseek(fd, 0, 2), mmap.MAP_SHARED, mmap.PROT_READ)
    os.close(fd)
    _, ver, ssz, n, off, gen, _, feat = struct.unpack_from("<IIIIQQQI", m, 0)
    ugen, = struct.unpack_from("<Q", m, 64)
    out = set()
    for i in range(n):
        b = off + i * ssz
        seq, flags, g, _, pl, _ = struct.unpack_from("<IIQIHH", m, b)
        if flags & 64 and g == ugen and not seq & 1:
            out.add(m[b + 168:b + 168 + pl].decode(errors="replace"))
            if flags & 32: COMPLETE.add(m[b + 168:b + 168 + pl].decode(errors="replace"))
    return out, feat & 16
)PY";

ProcessResult RunUpperPy(const std::string& body, std::vector<std::string> flags = {}) {
  flags.insert(flags.begin(), "--fast-metadata");
  return RunPy(std::string(kUpperPy) + body, flags);
}

// Every kind of write another process makes to a published upper directory
// (or to what is in it) is seen by the very next call: the library's stat,
// lstat, listing and ENOENT equal the trap's. Each step first proves the
// answers it checks were published (else the test would prove nothing).
constexpr char kWritesPy[] = R"PY(
D = "/tmp/fu"
os.makedirs(D + "/sub/deep")
os.symlink("sub", D + "/link")
def warm():
    for d in (D, D + "/sub"):
        try: os.listdir(d)
        except OSError: pass
    for p in (D, D + "/sub", D + "/sub/deep", D + "/link", D + "/absent"): lib(p); lib(p, False)
def check(name):
    # The first calls after the write are compared (the library's first);
    # then what the next write changes is published again, and proven so.
    bad = [p for p in (D, D + "/sub", D + "/sub/deep", D + "/link", D + "/absent", D + "/new",
                       D + "/newdir", D + "/sub2", D + "/sub2/deep", D + "/hard", D + "/sym",
                       D + "/fifo", D + "/sock", D + "/tmpf", D + "/newdir/x") if not same(p)]
    listed = sorted(os.listdir(D)) == names(D)
    warm()
    keys = upper()[0]
    pub = all(k in keys for k in (D, "@" + D, D + "/link"))
    t(name, lambda: (pub, bad, listed))
steps = [
    ("create", lambda: open(D + "/new", "w").close()),
    ("mkdir", lambda: os.mkdir(D + "/newdir")),
    ("rmdir", lambda: os.rmdir(D + "/newdir")),
    ("unlink", lambda: os.unlink(D + "/new")),
    ("rename_dir", lambda: os.rename(D + "/sub", D + "/sub2")),
    ("rename_back", lambda: os.rename(D + "/sub2", D + "/sub")),
    ("link", lambda: (open(D + "/sub/f", "w").close(), os.link(D + "/sub/f", D + "/hard"))),
    ("symlink", lambda: os.symlink("nowhere", D + "/sym")),
    ("symlink_replaced", lambda: (os.unlink(D + "/link"), os.symlink("sub/deep", D + "/link"))),
    ("chmod", lambda: os.chmod(D + "/sub", 0o750)),
    ("chmod_back", lambda: os.chmod(D + "/sub", 0o755)),
    ("chown", lambda: os.chown(D + "/sub", 1234, 1234)),
    ("utime", lambda: os.utime(D + "/sub", (1, 2))),
    ("utime_link", lambda: os.utime(D + "/link", (3, 4), follow_symlinks=False)),
    ("mknod", lambda: os.mkfifo(D + "/fifo")),
    ("bind", lambda: socket.socket(socket.AF_UNIX).bind(D + "/sock")),
    ("tmpfile", lambda: (fd := os.open(D, os.O_TMPFILE | os.O_WRONLY),
                         os.link(f"/proc/self/fd/{fd}", D + "/tmpf"))),
    ("rename_over", lambda: os.rename(D + "/hard", D + "/tmpf")),
]
check("start")
for name, f in steps:
    elsewhere(f)
    check(name)
# A thread's write, seen by the other thread at once.
import threading
th = threading.Thread(target=lambda: os.mkdir(D + "/newdir"))
warm(); th.start(); th.join()
check("thread")
# A directory fd's relative answers follow the directory, moved or not.
fd = os.open(D + "/sub", os.O_RDONLY | os.O_DIRECTORY)
rel = lambda: [lib(n, f, fd) == raw(n, f, fd) for n in ("", "deep", "f", "none") for f in (1, 0)]
t("at_before", lambda: (rel(), lib("deep", True, fd) != "ENOENT"))
elsewhere(lambda: os.rename(D + "/sub", D + "/moved"))
t("at_moved", lambda: (rel(), same(D + "/sub/deep"), same(D + "/moved/deep")))
elsewhere(lambda: os.rename(D + "/moved/deep", D + "/moved/deep2"))
t("at_child_moved", lambda: (rel(), lib("deep", True, fd)))
)PY";

TEST(FastUpper, EveryWriteIsSeenAtOnce) {
  ProcessResult r = RunUpperPy(kWritesPy, {"--root"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  for (const char* step :
       {"start",      "create",      "mkdir",   "rmdir",       "unlink",
        "rename_dir", "rename_back", "link",    "symlink",     "symlink_replaced",
        "chmod",      "chmod_back",  "chown",   "utime",       "utime_link",
        "mknod",      "bind",        "tmpfile", "rename_over", "thread"}) {
    EXPECT_EQ(Value(res, step), "(True, [], True)") << step << "\n" << r.out;
  }
  EXPECT_EQ(Value(res, "at_before"), "([True, True, True, True, True, True, True, True], True)")
      << r.out;
  EXPECT_EQ(Value(res, "at_moved"),
            "([True, True, True, True, True, True, True, True], True, True)")
      << r.out;
  EXPECT_EQ(Value(res, "at_child_moved"),
            "([True, True, True, True, True, True, True, True], 'ENOENT')")
      << r.out;
}

// Only what every caller would get by the trap: nothing below a directory not
// every caller may search, no listing of one not every caller may read, no
// regular file (--no-fast-upper-files here: fast_upper_files_test.cc has
// them, and the 0700 directories its sole uid may walk), nothing of a write-through mount
// (the host changes it) or of /proc and /dev/pts; a merged directory (an
// upper directory made in a lower one) is answered as the trap answers.
TEST(FastUpper, OnlyWhatEveryCallerGets) {
  TempDir rw("/tmp/sec-fu-rw-");
  WriteFileOrDie(rw.path() + "/f", "x");
  ASSERT_EQ(chmod(rw.path().c_str(), 0777), 0);
  ProcessResult r =
      RunUpperPy(R"PY(
D = "/tmp/fu-perm"
for m, n in ((0o700, "private"), (0o711, "search"), (0o744, "read"), (0o755, "public")):
    os.makedirs(f"{D}/{n}/d")
    open(f"{D}/{n}/file", "w").close()
    os.chmod(f"{D}/{n}", m)
for n in ("private", "search", "read", "public"):
    os.listdir(f"{D}/{n}")
    for p in ("d", "file", "none"): lib(f"{D}/{n}/{p}"); lib(f"{D}/{n}/{p}", False)
os.listdir("/tmp/rw"); lib("/tmp/rw/f"); lib("/tmp/rw/none"); lib("/tmp/rw")
os.listdir("/proc/self"); lib("/proc/self/fd"); lib("/dev/pts"); lib("/proc/1")
keys, feat = upper()
t("feature", lambda: feat)
t("public", lambda: sorted(k for k in keys if "public" in k))
t("search", lambda: sorted(k for k in keys if "search" in k))
t("read", lambda: sorted(k for k in keys if "/read" in k))
t("private", lambda: sorted(k for k in keys if "private" in k))
t("complete", lambda: sorted(k for k in COMPLETE if "fu-perm" in k))
# Without namespaces there is no devpts (no /dev/ptmx): /dev/pts is then a
# plain empty directory of the tree, which only the guest's trapped writes change.
plain_pts = not os.path.lexists("/dev/ptmx")
t("outside", lambda: sorted(k for k in keys if not k.lstrip("@").startswith(("/tmp/fu-perm", "/tmp", "/usr", "/etc")) and not k.startswith("#") and not (plain_pts and k.lstrip("@") == "/dev/pts")))
t("rw", lambda: sorted(k for k in keys if "/tmp/rw" in k))
t("same", lambda: [p for n in ("private", "search", "read", "public")
                   for p in (f"{D}/{n}", f"{D}/{n}/d", f"{D}/{n}/none") if not same(p)])
# A merged directory: an upper directory made in a lower one.
J = "/usr/lib/python3.11/json"
os.mkdir(J + "/fu-made")
os.listdir(J); os.listdir(J + "/fu-made"); lib(J + "/fu-made"); lib(J + "/fu-made/none")
t("merged", lambda: (J + "/fu-made" in upper()[0], "@" + J + "/fu-made" in upper()[0],
                     [p for p in (J, J + "/fu-made", J + "/fu-made/none") if not same(p)],
                     sorted(os.listdir(J)) == names(J)))
os.rmdir(J + "/fu-made")
t("merged_gone", lambda: (lib(J + "/fu-made"), sorted(os.listdir(J)) == names(J)))
)PY",
                 {"--root", "-v", rw.path() + ":/tmp/rw:rw", "--no-fast-upper-files"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Value(res, "feature"), "16") << r.out;
  EXPECT_EQ(Value(res, "public"),
            "['/tmp/fu-perm/public', '/tmp/fu-perm/public/d', '@/tmp/fu-perm/public']")
      << r.out;
  // Searchable by all, readable by the owner only: its names are answered
  // (an absent one by a slot of its own), never its listing. Public: an
  // absent name is answered by the COMPLETE listing, with no slot.
  EXPECT_EQ(Value(res, "search"),
            "['/tmp/fu-perm/search', '/tmp/fu-perm/search/d', '/tmp/fu-perm/search/none']")
      << r.out;
  // Readable by all, searchable by the owner only: its listing (what every
  // caller's getdents64 reads), but no name in it, and no ENOENT (the
  // listing is not COMPLETE: the guest's root would find "none" absent).
  EXPECT_EQ(Value(res, "read"), "['/tmp/fu-perm/read', '@/tmp/fu-perm/read']") << r.out;
  EXPECT_EQ(Value(res, "private"), "['/tmp/fu-perm/private']") << r.out;
  EXPECT_EQ(Value(res, "complete"), "['@/tmp/fu-perm/public']") << r.out;
  EXPECT_EQ(Value(res, "outside"), "[]") << r.out;
  EXPECT_EQ(Value(res, "rw"), "[]") << r.out;
  EXPECT_EQ(Value(res, "same"), "[]") << r.out;
  EXPECT_EQ(Value(res, "merged"), "(True, True, [], True)") << r.out;
  EXPECT_EQ(Value(res, "merged_gone"), "('ENOENT', True)") << r.out;
}

// Paths relative to the working directory (region.h SENTRY_FM_CWD): answered
// as the absolute ones under it, and the trap's answer at once after a chdir
// or fchdir by another thread (which shares the working directory), a rename
// of the directory or one above it, and in a thread that unshared its
// working directory (CLONE_FS) and moved; a thread that exited leaves no
// answer to whoever gets its id next.
constexpr char kCwdPy[] = R"PY(
import threading
os.makedirs("/tmp/fc/a/b"); os.makedirs("/tmp/fc2/a/c")
def rel_same():
    return [p for p in ("a", "a/b", "a/c", "a/none", "none") for f in (1, 0)
            if lib(p, f) != raw(p, f)]
def cwd_keys(): return sorted(k for k in upper()[0] if k.startswith("$"))
os.chdir("/tmp/fc")
rel_same()
t("published", lambda: (len(cwd_keys()), rel_same()))
def other(f):
    th = threading.Thread(target=f); th.start(); th.join()
other(lambda: os.chdir("/tmp/fc2"))
t("chdir_by_thread", lambda: (rel_same(), lib("a/c") != "ENOENT"))
fd = os.open("/tmp/fc", os.O_RDONLY)
other(lambda: os.fchdir(fd))
t("fchdir_by_thread", lambda: (rel_same(), lib("a/b") != "ENOENT"))
elsewhere(lambda: os.rename("/tmp/fc", "/tmp/fc-moved"))
t("renamed", lambda: (rel_same(), lib("a/b") != "ENOENT", os.getcwd()))
# Another directory at the old path: the working directory is still the
# moved one.
elsewhere(lambda: os.rename("/tmp/fc2", "/tmp/fc"))
t("replaced", lambda: (rel_same(), lib("a/b") != "ENOENT"))
CLONE_FS = 0x200
res = []
def own():
    lib("a"); libc.unshare(CLONE_FS); os.chdir("/tmp/fc"); res.append(rel_same())
other(own)
t("unshared", lambda: (res, rel_same()))
# Threads come and go; each one's relative answers are its own directory's.
def short(i):
    d = "/tmp/fc" if i % 2 else "/tmp/fc-moved"
    libc.unshare(CLONE_FS); os.chdir(d); res.append((i, rel_same()))
res.clear()
for i in range(20): other(lambda: short(i))
t("threads", lambda: [r for r in res if r[1]])
)PY";

TEST(FastUpper, WorkingDirectory) {
  TempDir census("/tmp/sec-fu-census-");
  std::string on_file = census.path() + "/on.json";
  ProcessResult r = RunUpperPy(kCwdPy, {"--census", on_file});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Value(res, "published"), "(1, [])") << r.out;
  EXPECT_EQ(Value(res, "chdir_by_thread"), "([], True)") << r.out;
  EXPECT_EQ(Value(res, "fchdir_by_thread"), "([], True)") << r.out;
  EXPECT_EQ(Value(res, "renamed"), "([], True, '/tmp/fc-moved')") << r.out;
  EXPECT_EQ(Value(res, "replaced"), "([], True)") << r.out;
  EXPECT_EQ(Value(res, "unshared"), "([[]], [])") << r.out;
  EXPECT_EQ(Value(res, "threads"), "[]") << r.out;
  std::string off_file = census.path() + "/off.json";
  ProcessResult off = RunUpperPy(kCwdPy, {"--no-fast-upper", "--census", off_file});
  ASSERT_EQ(off.exit_code, 0) << Describe(off);
  res = ParseResults(off.out);
  EXPECT_EQ(Value(res, "published"), "(0, [])") << off.out;
  EXPECT_EQ(Value(res, "threads"), "[]") << off.out;
  EXPECT_GT(Trapped(off_file, "newfstatat"), Trapped(on_file, "newfstatat"));
}

// Listings of /tmp's directories read without a getdents64, os.walk's
// lstat of each subdirectory without a newfstatat; --no-fast-upper
// publishes nothing upper (no feature bit, no UPPER slot) and every one traps.
TEST(FastUpper, FlagTurnsItOff) {
  TempDir census("/tmp/sec-fu-census-");
  std::string body = R"PY(
for i in range(50): os.makedirs(f"/tmp/fu-walk/d{i}/e")
walked = 0
for _ in range(4):
    for top, dirs, files in os.walk("/tmp/fu-walk"): walked += 1
t("walked", lambda: walked)
keys, feat = upper()
t("published", lambda: (bool(feat), "@/tmp/fu-walk" in keys))
)PY";
  std::string on_file = census.path() + "/on.json";
  ProcessResult on = RunUpperPy(body, {"--census", on_file});
  ASSERT_EQ(on.exit_code, 0) << Describe(on);
  Results res = ParseResults(on.out);
  EXPECT_EQ(Value(res, "walked"), "404") << on.out;
  EXPECT_EQ(Value(res, "published"), "(True, True)") << on.out;
  std::string off_file = census.path() + "/off.json";
  ProcessResult off = RunUpperPy(body, {"--no-fast-upper", "--census", off_file});
  ASSERT_EQ(off.exit_code, 0) << Describe(off);
  res = ParseResults(off.out);
  EXPECT_EQ(Value(res, "walked"), "404") << off.out;
  EXPECT_EQ(Value(res, "published"), "(False, False)") << off.out;
  // 404 listings and 400 lstats of subdirectories: off, each traps.
  EXPECT_GE(Trapped(off_file, "getdents64"), Trapped(on_file, "getdents64") + 350);
  EXPECT_GE(Trapped(off_file, "newfstatat"), Trapped(on_file, "newfstatat") + 350);
}

}  // namespace
}  // namespace sentry::security
