// Directory listings in the fast-metadata region (fastmeta/region.h,
// fastmeta/dir.c): the guest's opendir/readdir read what a trapped
// getdents64 returns, byte for byte, without the trap; nothing a trap would
// not show is published (the /etc rule, -v mounts, directories not every
// caller may read); a write that changes a listing is seen by the next
// opendir; a guest without the region, or with listings off, just traps.
#include <sched.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/security/security_util.h"
#include "tests/util/subprocess.h"

namespace sentry::security {
namespace {

// Python helpers for the guest: the published listings, the trapped
// getdents64's records (the raw syscall), and libc's streams (through the
// preload library, as a program calls them).
constexpr char kListingPy[] = R"PY(
import ctypes, mmap, struct
libc = ctypes.CDLL(None, use_errno=True)
def region():
    fd = os.open("/etc/sentry/fastmeta", os.O_RDONLY)
    m = mmap.mmap(fd, os.lseek(fd, 0, 2), mmap.MAP_SHARED, mmap.PROT_READ)
    os.close(fd)
    return m
# path -> the records published for it (current generation), and the features.
def listings():
    m = region()
    _, _, ssz, n, off, gen, _, feat, _, loff, lbytes = struct.unpack_from("<IIIIQQQIiQQ", m, 0)
    out = {}
    for i in range(n):
        b = off + i * ssz
        seq, flags, g, _, pl, _ = struct.unpack_from("<IIQIHH", m, b)
        if g != gen or seq & 1 or pl == 0 or not flags & 16: continue
        key = m[b + 168:b + 168 + pl].decode()
        lo, nb, _ = struct.unpack_from("<QQQ", m, b + 24)
        out[key[1:]] = bytes(m[loff + lo:loff + lo + nb])
    return out, feat
def records(buf):
    out, off = [], 0
    while off < len(buf):
        ino, doff, rl, ty = struct.unpack_from("<QqHB", buf, off)
        out.append((buf[off + 19:off + rl].split(b"\0", 1)[0].decode(), ino, doff, ty))
        off += rl
    return out
def raw_bytes(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    buf, out = ctypes.create_string_buffer(1 << 16), b""
    while (n := libc.syscall(217, fd, buf, 1 << 16)) > 0: out += buf.raw[:n]
    os.close(fd)
    return out
def raw(path): return records(raw_bytes(path))
class Dirent(ctypes.Structure):
    _fields_ = [("ino", ctypes.c_uint64), ("off", ctypes.c_int64), ("reclen", ctypes.c_uint16),
                ("type", ctypes.c_uint8), ("name", ctypes.c_char * 256)]
V = ctypes.c_void_p
libc.opendir.restype = V; libc.opendir.argtypes = [ctypes.c_char_p]
libc.fdopendir.restype = V; libc.fdopendir.argtypes = [ctypes.c_int]
libc.readdir.restype = ctypes.POINTER(Dirent); libc.readdir.argtypes = [V]
libc.closedir.argtypes = [V]; libc.rewinddir.argtypes = [V]; libc.dirfd.argtypes = [V]
def read_dir(d):
    out = []
    while (e := libc.readdir(d)):
        e = e.contents
        out.append((e.name.decode(), e.ino, e.off, e.type))
    return out
# The library's own stream (fastmeta/dir.c) starts with a negative tag
# where glibc's has its fd; ours() serves a published copy, trap_stream()
# reads by getdents64 (struct fm_dir's trapped, at byte 16).
def lib_stream(d): return ctypes.c_int32.from_address(d).value < 0
def ours(d): return lib_stream(d) and ctypes.c_int32.from_address(d + 16).value == 0
def trap_stream(d): return lib_stream(d) and ctypes.c_int32.from_address(d + 16).value == 1
# (libc's listing, whether the library's stream served it) or the errno.
def lib(path):
    d = libc.opendir(path.encode())
    if not d: return ctypes.get_errno()
    out = (read_dir(d), ours(d))
    libc.closedir(d)
    return out
def names(path): return [n for n, *_ in lib(path)[0]]
# Whether libc's listing, and the one published if any, are the trap's.
def same(path):
    want = raw_bytes(path)
    L, _ = listings()
    return lib(path)[0] == records(want) and L.get(path, want) == want
)PY";

ProcessResult RunListingPy(const std::string& body, std::vector<std::string> flags = {},
                           double timeout_sec = 60) {
  flags.insert(flags.begin(), "--fast-metadata");
  return RunPy(std::string(kListingPy) + body, flags, timeout_sec);
}

// libc's streams over system directories read the published listing, which
// is the trapped getdents64's, record for record; 200 listings make no
// getdents64 trap and no fstat (glibc's opendir makes one).
TEST(FastListing, ListingIsTheTrapsWithoutATrap) {
  TempDir census("/tmp/sec-fl-census-");
  std::string file = census.path() + "/census.json";
  ProcessResult r = RunListingPy(R"PY(
dirs = ["/usr/lib/python3.11", "/usr/lib/python3.11/json", "/usr/bin", "/usr/include",
        "/usr/lib", "/etc"]
bad = []
for p in dirs:
    got, fast = lib(p)
    if not fast: bad.append(("trapped", p))
    # Published at its open (a later first listing of another directory may
    # invalidate it: /etc's, whose view hides some, changes its st_nlink).
    if p not in listings()[0]: bad.append(("unpublished", p))
    if got != raw(p): bad.append(("differs", p))
    if not same(p): bad.append(("published", p))
t("bad", lambda: bad)
t("features", lambda: listings()[1] & 2)
t("listdir", lambda: sorted(os.listdir("/usr/lib/python3.11/json")) ==
                     sorted(n for n, *_ in raw("/usr/lib/python3.11/json")[2:]))
for _ in range(200):
    d = libc.opendir(b"/usr/lib/python3.11/json")
    read_dir(d)
    libc.closedir(d)
)PY",
                                 {"--census", file});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Value(res, "bad"), "[]") << r.out;
  EXPECT_EQ(Value(res, "features"), "2") << r.out;
  EXPECT_EQ(Value(res, "listdir"), "True") << r.out;
  // 200 listings by the trap would be 400 getdents64 and 200 fstats; what
  // is left is the raw listings above and Python's start-up.
  EXPECT_LT(Trapped(file, "getdents64"), 100);
  EXPECT_LT(Trapped(file, "newfstatat"), 200);
}

// Creates, renames, unlinks (of the guest's files and of lower ones), mkdir,
// symlink, copy-up and chmod of a lower directory: the next opendir lists
// what the trap lists, and a published listing is the trap's. A stream
// opened before keeps its copy (POSIX leaves that open) until rewinddir.
TEST(FastListing, WriteChangesTheNextListing) {
  ProcessResult r = RunListingPy(R"PY(
J = "/usr/lib/python3.11/json"
t("before", lambda: (same(J), lib(J)[1], "fm-new" in names(J)))
old = libc.opendir(J.encode())
open(J + "/fm-new", "w").close()
t("created", lambda: (same(J), lib(J)[1], "fm-new" in names(J)))
t("old_stream", lambda: "fm-new" in [n for n, *_ in read_dir(old)])
libc.rewinddir(old)
t("rewound", lambda: "fm-new" in [n for n, *_ in read_dir(old)])
libc.closedir(old)
os.rename(J + "/fm-new", J + "/fm-renamed")
t("renamed", lambda: (same(J), "fm-new" in names(J), "fm-renamed" in names(J)))
os.unlink(J + "/fm-renamed")
t("unlinked", lambda: (same(J), "fm-renamed" in names(J)))
os.unlink(J + "/tool.py")
t("lower_unlinked", lambda: (same(J), "tool.py" in names(J)))
os.mkdir(J + "/fm-dir")
t("mkdir", lambda: (same(J), "fm-dir" in names(J)))
os.symlink("elsewhere", J + "/fm-link")
t("symlink", lambda: (same(J), "fm-link" in names(J)))
with open(J + "/decoder.py", "a") as f: f.write("#")
t("copied_up", lambda: same(J))
os.rename(J + "/scanner.py", "/usr/lib/python3.11/fm-moved.py")
t("moved_out", lambda: (same(J), same("/usr/lib/python3.11"), "scanner.py" in names(J)))
# Not readable by every caller: not published (this root run could list it).
os.chmod(J, 0o700)
t("private", lambda: (same(J), J in listings()[0], lib(J)[1]))
os.chmod(J, 0o755)
t("public_again", lambda: (same(J), J in listings()[0], lib(J)[1]))
)PY",
                                 {"--root"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Value(res, "before"), "(True, True, False)") << r.out;
  EXPECT_EQ(Value(res, "created"), "(True, True, True)") << r.out;
  EXPECT_EQ(Value(res, "old_stream"), "False") << r.out;
  EXPECT_EQ(Value(res, "rewound"), "True") << r.out;
  EXPECT_EQ(Value(res, "renamed"), "(True, False, True)") << r.out;
  EXPECT_EQ(Value(res, "unlinked"), "(True, False)") << r.out;
  EXPECT_EQ(Value(res, "lower_unlinked"), "(True, False)") << r.out;
  EXPECT_EQ(Value(res, "mkdir"), "(True, True)") << r.out;
  EXPECT_EQ(Value(res, "symlink"), "(True, True)") << r.out;
  EXPECT_EQ(Value(res, "copied_up"), "True") << r.out;
  EXPECT_EQ(Value(res, "moved_out"), "(True, True, False)") << r.out;
  EXPECT_EQ(Value(res, "private"), "(True, False, False)") << r.out;
  EXPECT_EQ(Value(res, "public_again"), "(True, True, True)") << r.out;
}

// Nothing is published that a trap would not list alike for every caller
// (upper listings off here: fast_upper_test.cc has them):
// no -v mount (ro or overlay), no /tmp, /proc, /dev or the sentry's own
// /etc/sentry, no entry the /etc rule hides; their streams are glibc's and
// list what the trap lists.
TEST(FastListing, HoldsOnlyWhatATrapLists) {
  TempDir ro("/tmp/sec-fl-ro-");
  TempDir ov("/tmp/sec-fl-ov-");
  WriteFileOrDie(ro.path() + "/f", "x");
  WriteFileOrDie(ov.path() + "/f", "y");
  // Readable by the guest's uid: listed by the trap, yet never published.
  ASSERT_EQ(chmod(ro.path().c_str(), 0755), 0);
  ASSERT_EQ(chmod(ov.path().c_str(), 0755), 0);
  ProcessResult r = RunListingPy(
      R"PY(
dirs = ["/data", "/usr/share/fmtest", "/tmp", "/proc", "/proc/self/fd", "/dev", "/etc/sentry",
        "/home/sandbox", "/etc", "/usr/lib/python3.11/json", "/"]
bad = []
for p in dirs:
    if isinstance(r := lib(p), int):
        bad.append(("errno", p, r))
        continue
    got, fast = r
    if fast != (p in ("/etc", "/usr/lib/python3.11/json")): bad.append(("fast", p, fast))
    if p not in ("/proc", "/proc/self/fd") and got != raw(p): bad.append(("differs", p))
t("bad", lambda: bad)
allowed = ("usr", "bin", "sbin", "lib", "lib64", "lib32", "etc")
t("outside", lambda: [p for p in listings()[0] if p.split("/")[1] not in allowed or
                      p.startswith(("/etc/sentry", "/usr/share/fmtest"))])
etc = [n for n, *_ in raw("/etc")]
t("etc_hidden", lambda: [n for n in ("shadow", "gshadow", "sentry-none") if n in etc])
t("etc_published", lambda: "/etc" in listings()[0] and records(listings()[0]["/etc"]) == raw("/etc"))
)PY",
      {"-v", ro.path() + ":/data:ro", "-v", ov.path() + ":/usr/share/fmtest", "--no-fast-upper"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Value(res, "bad"), "[]") << r.out;
  EXPECT_EQ(Value(res, "outside"), "[]") << r.out;
  EXPECT_EQ(Value(res, "etc_hidden"), "[]") << r.out;
  EXPECT_EQ(Value(res, "etc_published"), "True") << r.out;
}

// An fd whose number now names another directory, a file or a pipe gets
// that object's stream (or glibc's error), never the old directory's
// listing; an fd already read from is glibc's, from where it is.
TEST(FastListing, FdopendirListsWhatTheFdNamesNow) {
  ProcessResult r = RunListingPy(R"PY(
J, E = "/usr/lib/python3.11/json", "/usr/lib/python3.11/email"
a = os.open(J, os.O_RDONLY | os.O_DIRECTORY)
b = os.open(E, os.O_RDONLY | os.O_DIRECTORY)
os.dup2(b, a)
d = libc.fdopendir(a)
t("dup2", lambda: (read_dir(d) == raw(E), ours(d)))
libc.closedir(d)
f = os.open(J + "/decoder.py", os.O_RDONLY)
t("file", lambda: (libc.fdopendir(f), ctypes.get_errno()))
rp, wp = os.pipe()
t("pipe", lambda: (libc.fdopendir(rp), ctypes.get_errno()))
c = os.open(J, os.O_RDONLY | os.O_DIRECTORY)
buf = ctypes.create_string_buffer(64)
n = libc.syscall(217, c, buf, 64)
first = records(buf.raw[:n])
d = libc.fdopendir(c)
t("read_from", lambda: (first + read_dir(d) == raw(J), ours(d)))
libc.closedir(d)
)PY");
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Value(res, "dup2"), "(True, True)") << r.out;
  EXPECT_EQ(Value(res, "file"), "(None, 20)") << r.out;  // ENOTDIR
  EXPECT_EQ(Value(res, "pipe"), "(None, 20)") << r.out;
  EXPECT_EQ(Value(res, "read_from"), "(True, False)") << r.out;
}

// A walk whose listings outgrow their area (/usr/lib: 13,000 directories,
// 4.5 MB of records; the area holds 4 MiB) starts the area again: the
// region never holds more, and what it holds afterwards is still the trap's.
TEST(FastListing, ListingsStayWithinTheirArea) {
  ProcessResult r = RunListingPy(R"PY(
import random
walked = [d for d, _, _ in os.walk("/usr/lib")]
t("walked", lambda: len(walked) > 5000)
L, _ = listings()
t("within", lambda: 0 < sum(len(b) for b in L.values()) <= 4 << 20)
t("fewer", lambda: len(L) < len(walked))
sample = random.Random(1).sample(walked, 40) + walked[-10:]
t("same", lambda: [p for p in sample if not same(p) or not lib(p)[1]])
for p in sample:  # what differs, for the failure's message
    want, (got, fast), pub = raw(p), lib(p), listings()[0].get(p)
    if got != want or not fast or (pub is not None and records(pub) != want):
        print("differs", p, "fast", fast, "raw", want, "lib", got,
              "published", pub and records(pub))
)PY",
                                 {}, /*timeout_sec=*/120);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Value(res, "walked"), "True") << r.out;
  EXPECT_EQ(Value(res, "within"), "True") << r.out;
  EXPECT_EQ(Value(res, "fewer"), "True") << r.out;
  EXPECT_EQ(Value(res, "same"), "[]") << r.out;
}

// A directory whose listing is not published (/tmp, the upper layer): the
// library's own stream reads it by getdents64, as glibc's, but without
// glibc's fstat and without the getdents64 that returns 0: the sentry marks
// the record that ends a listing (d_off 0x7fffffff, region.h
// SENTRY_FM_DIR_END). The records are the trap's; telldir, seekdir and
// rewinddir behave as on glibc's stream, and fdopendir's stream starts
// where its fd is; 300 listings (200 by opendir, 100 by fdopendir) make 300
// getdents64 and no fstat, where --no-fast-dir-streams makes 600 and 300.
constexpr char kUpperStreamsPy[] = R"PY(
D = "/tmp/fl-upper"
os.mkdir(D)
for i in range(300): open(f"{D}/file-{i:03}", "w").close()
END = 0x7fffffff
d = libc.opendir(D.encode())
t("stream", lambda: (ours(d), trap_stream(d)))
got = read_dir(d)
t("same", lambda: got == raw(D))
t("end", lambda: (got[-1][2] == END, [e for e in got[:-1] if e[2] == END]))
t("after_end", lambda: (bool(libc.readdir(d)), bool(libc.readdir(d))))
libc.telldir.restype = ctypes.c_long; libc.telldir.argtypes = [V]
libc.seekdir.argtypes = [V, ctypes.c_long]
libc.rewinddir(d)
first = [libc.readdir(d).contents.name.decode() for _ in range(100)]
mark = libc.telldir(d)
nxt = libc.readdir(d).contents.name.decode()
rest = read_dir(d)
libc.seekdir(d, mark)
t("seekdir", lambda: (libc.readdir(d).contents.name.decode() == nxt, len(rest)))
libc.seekdir(d, libc.telldir(d))
libc.seekdir(d, END)
t("seek_end", lambda: (libc.telldir(d) == END, bool(libc.readdir(d))))
open(D + "/made-later", "w").close()
libc.rewinddir(d)
t("rewound", lambda: "made-later" in [n for n, *_ in read_dir(d)])
libc.closedir(d)
t("empty", lambda: (os.mkdir(D + "/e"), [(n, o) for n, _, o, _ in lib(D + "/e")[0]])[1])
t("listdir", lambda: sorted(os.listdir(D)) == sorted(n for n, *_ in raw(D)[2:]))
t("scandir", lambda: sorted(e.name for e in os.scandir(D)) == sorted(os.listdir(D)))
# fdopendir: from where the fd is; a file is ENOTDIR; an O_PATH fd is
# glibc's stream, whose readdir meets EBADF.
fd = os.open(D, os.O_RDONLY | os.O_DIRECTORY)
buf = ctypes.create_string_buffer(64)
n = libc.syscall(217, fd, buf, 64)
head = records(buf.raw[:n])  # buf.raw read after the call
d = libc.fdopendir(fd)
t("fdopendir", lambda: (trap_stream(d), head + read_dir(d) == raw(D), libc.dirfd(d) == fd))
libc.closedir(d)
f = os.open(D + "/file-000", os.O_RDONLY)
t("fdopendir_file", lambda: (libc.fdopendir(f), ctypes.get_errno()))
os.close(f)
# os.listdir(fd) lists through a dup, which shares the position, then
# rewinds it: the next listing is whole again.
t("listdir_fd", lambda: (len(os.listdir(fd := os.open(D, os.O_RDONLY))), len(os.listdir(fd))))
p = os.open(D, os.O_PATH)
d = libc.fdopendir(p)
t("fdopendir_path", lambda: (bool(d), lib_stream(d), bool(libc.readdir(d)), ctypes.get_errno()))
libc.closedir(d)
# The guest's own positions at and past the end: nothing, and no harm.
fd = os.open(D, os.O_RDONLY | os.O_DIRECTORY)
buf = ctypes.create_string_buffer(4096)
past = []
for at in (END - 1, END, END + 1, (1 << 63) - 1):
    os.lseek(fd, at, 0)
    past.append(libc.syscall(217, fd, buf, 4096))
t("past", lambda: past)
os.close(fd)
for _ in range(200):
    d = libc.opendir(D.encode())
    read_dir(d)
    libc.closedir(d)
for _ in range(100):
    d = libc.fdopendir(os.open(D, os.O_RDONLY | os.O_DIRECTORY))
    read_dir(d)
    libc.closedir(d)
)PY";

TEST(FastListing, UnpublishedDirectoriesListWithOneTrap) {
  TempDir census("/tmp/sec-fl-census-");
  int getdents[2], fstats[2];
  for (int off = 0; off < 2; ++off) {
    SCOPED_TRACE(off);
    std::string file = census.path() + "/census" + std::to_string(off) + ".json";
    // /tmp unpublished: the upper layer's own answers are fast_upper_test's.
    std::vector<std::string> flags = {"--census", file, "--no-fast-upper"};
    if (off) flags.push_back("--no-fast-dir-streams");
    ProcessResult r = RunListingPy(kUpperStreamsPy, flags);
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    Results res = ParseResults(r.out);
    EXPECT_EQ(Value(res, "stream"), off ? "(False, False)" : "(False, True)") << r.out;
    EXPECT_EQ(Value(res, "same"), "True") << r.out;
    EXPECT_EQ(Value(res, "end"), "(True, [])") << r.out;
    EXPECT_EQ(Value(res, "after_end"), "(False, False)") << r.out;
    EXPECT_EQ(Value(res, "seekdir"), "(True, 201)") << r.out;
    EXPECT_EQ(Value(res, "seek_end"), "(True, False)") << r.out;
    EXPECT_EQ(Value(res, "rewound"), "True") << r.out;
    EXPECT_EQ(Value(res, "empty"), "[('.', 1), ('..', 2147483647)]") << r.out;
    EXPECT_EQ(Value(res, "listdir"), "True") << r.out;
    EXPECT_EQ(Value(res, "scandir"), "True") << r.out;
    EXPECT_EQ(Value(res, "past"), "[0, 0, 0, 0]") << r.out;
    EXPECT_EQ(Value(res, "fdopendir"), off ? "(False, True, True)" : "(True, True, True)") << r.out;
    EXPECT_EQ(Value(res, "fdopendir_file"), "(None, 20)") << r.out;  // ENOTDIR
    EXPECT_EQ(Value(res, "listdir_fd"), "(302, 302)") << r.out;
    EXPECT_EQ(Value(res, "fdopendir_path"), "(True, False, False, 9)") << r.out;  // EBADF
    getdents[off] = Trapped(file, "getdents64");
    fstats[off] = Trapped(file, "newfstatat");
  }
  EXPECT_GE(getdents[1] - getdents[0], 295) << getdents[0] << " " << getdents[1];
  EXPECT_GE(fstats[1] - fstats[0], 295) << fstats[0] << " " << fstats[1];
}

// Listings off (--no-fast-listings), or the region unmapped: glibc's
// streams, the trap's listing.
TEST(FastListing, WithoutListingsOnlyTraps) {
  std::string body = R"PY(
J = "/usr/lib/python3.11/json"
t("off", lambda: (lib(J)[0] == raw(J), lib(J)[1], listings()[1] & 2, J in listings()[0]))
lines = [l for l in open("/proc/self/maps") if "memfd:sentry-fastmeta (" in l]
lo, hi = (int(x, 16) for x in lines[0].split()[0].split("-"))
libc.munmap(ctypes.c_void_p(lo), ctypes.c_size_t(hi - lo))
t("unmapped", lambda: (lib(J)[0] == raw(J), lib(J)[1]))
)PY";
  ProcessResult off = RunListingPy(body, {"--no-fast-listings"});
  ASSERT_EQ(off.exit_code, 0) << Describe(off);
  Results res = ParseResults(off.out);
  EXPECT_EQ(Value(res, "off"), "(True, False, 0, False)") << off.out;
  EXPECT_EQ(Value(res, "unmapped"), "(True, False)") << off.out;
  ProcessResult on = RunListingPy(body);
  ASSERT_EQ(on.exit_code, 0) << Describe(on);
  res = ParseResults(on.out);
  EXPECT_EQ(Value(res, "off"), "(True, True, 2, True)") << on.out;
  EXPECT_EQ(Value(res, "unmapped"), "(True, False)") << on.out;
}

// A walk's next directories are listed ahead on another CPU
// (vfs/listing_ahead.h): what the guest's walk lists, directory by
// directory, is the host's tree, with the thread on and off; with it on
// (and a second CPU to run it), most listings come from it.
TEST(FastListing, AWalkListedAheadListsTheHostsTree) {
  const std::string root = "/usr/lib/python3.11";
  // The host's tree: each directory's entries, sorted, one line each.
  std::vector<std::string> want;
  std::vector<std::string> todo{root};
  while (!todo.empty()) {
    std::string dir = todo.back();
    todo.pop_back();
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      names.push_back(e.path().filename().string());
      if (e.is_directory() && !e.is_symlink()) todo.push_back(e.path().string());
    }
    std::sort(names.begin(), names.end());
    std::string line = dir + ":";
    for (const std::string& n : names) line += n + ",";
    want.push_back(line);
  }
  std::sort(want.begin(), want.end());
  std::string want_text;
  for (const std::string& l : want) want_text += l + "\n";
  const std::string body = "import sys\nR = " + PyQuote(root) + R"PY(
lines = []
for d, dirs, files in os.walk(R):
    lines.append(d + ":" + "".join(n + "," for n in sorted(os.listdir(d))))
sys.stdout.write("".join(l + "\n" for l in sorted(lines)))
)PY";
  cpu_set_t cpus;
  bool two_cpus = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && CPU_COUNT(&cpus) > 1;
  for (bool ahead : {true, false}) {
    std::vector<std::string> flags = {"--fast-metadata", "--log-level", "debug"};
    if (!ahead) flags.push_back("--no-listing-ahead");
    ProcessResult r = RunPy(body, flags, 120);
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    EXPECT_EQ(r.out, want_text) << "ahead " << ahead;
    size_t at = r.err.find("listings read ahead ");
    if (!ahead || !two_cpus) {
      EXPECT_EQ(at, std::string::npos) << r.err;
      continue;
    }
    ASSERT_NE(at, std::string::npos) << r.err;
    unsigned long read = 0, taken = 0;
    ASSERT_EQ(sscanf(r.err.c_str() + at, "listings read ahead %lu, taken %lu", &read, &taken), 2);
    // /usr/lib/python3.11 has a few hundred directories; a quiet machine
    // reads most ahead, a loaded one fewer: some, at least.
    EXPECT_GT(taken, 0u) << r.err.substr(at, 100);
    EXPECT_LE(taken, read);
  }
}

}  // namespace
}  // namespace sentry::security
