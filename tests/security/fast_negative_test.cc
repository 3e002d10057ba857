// Negative answers from complete listings (fastmeta/region.h
// SENTRY_FM_COMPLETE): after a name's first ENOENT in a lower directory the
// sentry publishes that directory's listing, and the guest's library answers
// ENOENT for any name absent from it (and anything below such a name)
// without a trap. Each answer must be the trap's (compared with the raw
// syscall, which always traps); a write that adds a name is seen by the
// next stat; nothing is answered for a directory not every caller may
// search, a -v mount or a name the sentry adds (/etc, mount points).
#include <sys/stat.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/security/security_util.h"
#include "tests/util/subprocess.h"

namespace sentry::security {
namespace {

// The library's stat (os.stat: libc's fstatat, interposed) against the raw
// newfstatat (always trapped), and the region's COMPLETE listings.
constexpr char kNegativePy[] = R"PY(
import ctypes, mmap, struct
libc = ctypes.CDLL(None, use_errno=True)
def raw(path, follow=True):
    buf = ctypes.create_string_buffer(256)
    r = libc.syscall(262, -100, path.encode(), buf, 0 if follow else 0x100)
    if r < 0: return errno.errorcode[ctypes.get_errno()]
    mode, = struct.unpack_from("<I", buf.raw, 24)
    ino, = struct.unpack_from("<Q", buf.raw, 8)
    return (ino, mode)
def lib(path, follow=True):
    try:
        st = os.stat(path) if follow else os.lstat(path)
        return (st.st_ino, st.st_mode)
    except OSError as e:
        return errno.errorcode[e.errno]
def same(path): return lib(path) == raw(path) and lib(path, False) == raw(path, False)
# Paths whose listing slot (current generation) says COMPLETE.
def complete():
    fd = os.open("/etc/sentry/fastmeta", os.O_RDONLY)
    m = mmap.mmap(fd, os.lseek(fd, 0, 2), mmap.MAP_SHARED, mmap.PROT_READ)
    os.close(fd)
    _, _, ssz, n, off, gen = struct.unpack_from("<IIIIQQ", m, 0)
    out = set()
    for i in range(n):
        b = off + i * ssz
        seq, flags, g, _, pl, _ = struct.unpack_from("<IIQIHH", m, b)
        if g == gen and not seq & 1 and flags & 16 and flags & 32:
            out.add(m[b + 168:b + 168 + pl].decode()[1:])
    return out
)PY";

ProcessResult RunNegativePy(const std::string& body, std::vector<std::string> flags = {}) {
  flags.insert(flags.begin(), "--fast-metadata");
  return RunPy(std::string(kNegativePy) + body, flags);
}

int TrappedStats(const std::string& census) {
  ProcessResult count = testing::RunProcess(
      {"/usr/bin/python3", "-c",
       "import json,sys; d=json.load(open(sys.argv[1])); "
       "print(sum(x['trapped'] for x in d['syscalls'] if x['name']=='newfstatat'))",
       census});
  EXPECT_EQ(count.exit_code, 0) << Describe(count);
  return count.exit_code == 0 ? std::stoi(count.out) : -1;
}

// A package's probes (Python's __init__ with each suffix): the first traps
// and lists the directory; 300 more absent names, and paths below an absent
// name, are ENOENT without a trap, as the trap says; present names still
// get the trap's answer. With --no-fast-negatives every one traps.
constexpr char kProbes[] = R"PY(
J = "/usr/lib/python3.11/json"
t("first", lambda: (lib(J + "/__init__.fm-first.so"), J in complete()))
bad = [p for p in [J + "/__init__.fm%d.so" % i for i in range(300)] if lib(p) != "ENOENT"]
t("absent", lambda: bad)
t("below", lambda: (lib(J + "/fm-none/x/y.py"), lib(J + "/fm-none")))
t("access", lambda: (libc.access((J + "/fm-acc").encode(), 4), ctypes.get_errno()))
t("readlink", lambda: os.readlink(J + "/fm-link"))
t("same", lambda: [p for p in [J + "/__init__.so", J + "/decoder.py", J + "/__pycache__",
                               J + "/fm-none/x", J + "/decoder.py/x", J + "/.", J + "/.."]
                   if not same(p)])
)PY";

TEST(FastNegative, AbsentNamesAnswerWithoutATrap) {
  TempDir census("/tmp/sec-fn-census-");
  std::string on_file = census.path() + "/on.json";
  ProcessResult r = RunNegativePy(kProbes, {"--census", on_file});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Value(res, "first"), "('ENOENT', True)") << r.out;
  EXPECT_EQ(Value(res, "absent"), "[]") << r.out;
  EXPECT_EQ(Value(res, "below"), "('ENOENT', 'ENOENT')") << r.out;
  EXPECT_EQ(Value(res, "access"), "(-1, 2)") << r.out;
  EXPECT_EQ(Code(res, "readlink"), "ENOENT") << r.out;
  EXPECT_EQ(Value(res, "same"), "[]") << r.out;
  int on = TrappedStats(on_file);

  std::string off_file = census.path() + "/off.json";
  ProcessResult off = RunNegativePy(kProbes, {"--no-fast-negatives", "--census", off_file});
  ASSERT_EQ(off.exit_code, 0) << Describe(off);
  res = ParseResults(off.out);
  EXPECT_EQ(Value(res, "first"), "('ENOENT', False)") << off.out;
  EXPECT_EQ(Value(res, "absent"), "[]") << off.out;
  EXPECT_EQ(Value(res, "same"), "[]") << off.out;
  int trapped_off = TrappedStats(off_file);
  // Off, the 300 absent names each trap (their ENOENTs published one by
  // one); on, they are answered from the listing.
  EXPECT_GE(trapped_off, on + 300) << "on " << on << " off " << trapped_off;
}

// A directory missing on a path's way (in a directory every caller may
// search but not read, so never listed): its own ENOENT answers for all
// below it, without a trap; a mkdir there is seen at once.
TEST(FastNegative, BelowAnAbsentDirectory) {
  TempDir census("/tmp/sec-fn-census-");
  std::string body = R"PY(
J = "/usr/lib/python3.11/json"
os.chmod(J, 0o711)
t("first", lambda: (lib(J + "/fm-gone/a"), J in complete()))
bad = [p for p in [J + "/fm-gone/%d/x" % i for i in range(200)] if lib(p) != "ENOENT"]
t("below", lambda: bad)
t("same", lambda: [p for p in [J + "/fm-gone", J + "/fm-gone/b", J + "/decoder.py/x"] if not same(p)])
os.mkdir(J + "/fm-gone")
open(J + "/fm-gone/a", "w").close()
t("made", lambda: (same(J + "/fm-gone/a"), lib(J + "/fm-gone/a") != "ENOENT"))
)PY";
  std::string on_file = census.path() + "/on.json";
  ProcessResult r = RunNegativePy(body, {"--root", "--census", on_file});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Value(res, "first"), "('ENOENT', False)") << r.out;
  EXPECT_EQ(Value(res, "below"), "[]") << r.out;
  EXPECT_EQ(Value(res, "same"), "[]") << r.out;
  EXPECT_EQ(Value(res, "made"), "(True, True)") << r.out;
  std::string off_file = census.path() + "/off.json";
  ProcessResult off = RunNegativePy(body, {"--root", "--no-fast-negatives", "--census", off_file});
  ASSERT_EQ(off.exit_code, 0) << Describe(off);
  res = ParseResults(off.out);
  EXPECT_EQ(Value(res, "below"), "[]") << off.out;
  EXPECT_EQ(Value(res, "made"), "(True, True)") << off.out;
  EXPECT_GE(TrappedStats(off_file), TrappedStats(on_file) + 200);
}

// A write that adds, removes or renames a name in a listed directory (a
// lower one, copied up) is seen by the next stat: the trap's answer.
TEST(FastNegative, WriteChangesTheNextAnswer) {
  ProcessResult r = RunNegativePy(R"PY(
J = "/usr/lib/python3.11/json"
t("before", lambda: (lib(J + "/fm-new"), J in complete()))
open(J + "/fm-new", "w").close()
t("created", lambda: (same(J + "/fm-new"), lib(J + "/fm-new") != "ENOENT"))
t("relisted", lambda: (lib(J + "/fm-other"), J in complete()))
os.mkdir(J + "/fm-dir")
t("mkdir", lambda: (same(J + "/fm-dir"), same(J + "/fm-dir/x"), lib(J + "/fm-dir") != "ENOENT"))
os.rename(J + "/fm-new", J + "/fm-renamed")
t("renamed", lambda: (same(J + "/fm-new"), same(J + "/fm-renamed"), lib(J + "/fm-new")))
os.unlink(J + "/tool.py")
t("unlinked", lambda: (same(J + "/tool.py"), lib(J + "/tool.py")))
os.symlink("decoder.py", J + "/fm-link")
t("symlink", lambda: (same(J + "/fm-link"), os.readlink(J + "/fm-link")))
# Relative to a directory fd: the fd's own answer is never ENOENT, and a
# name under it is answered for the directory it names, moved or not.
E = "/usr/lib/python3.11/email"
fd = os.open(E, os.O_RDONLY | os.O_DIRECTORY)
rel = lambda n: os.stat(n, dir_fd=fd).st_ino if n else os.fstat(fd).st_ino
t("at_before", lambda: (rel("fm-absent"), ))
t("at_present", lambda: rel("parser.py") == raw(E + "/parser.py")[0])
os.rename(E, "/usr/lib/python3.11/fm-email")
t("at_moved", lambda: (rel("") == raw("/usr/lib/python3.11/fm-email")[0],
                       rel("parser.py") == raw("/usr/lib/python3.11/fm-email/parser.py")[0],
                       lib(E + "/parser.py")))
t("at_absent", lambda: rel("fm-absent"))
)PY",
                                  {"--root"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Value(res, "before"), "('ENOENT', True)") << r.out;
  EXPECT_EQ(Value(res, "created"), "(True, True)") << r.out;
  EXPECT_EQ(Value(res, "relisted"), "('ENOENT', True)") << r.out;
  EXPECT_EQ(Value(res, "mkdir"), "(True, True, True)") << r.out;
  EXPECT_EQ(Value(res, "renamed"), "(True, True, 'ENOENT')") << r.out;
  EXPECT_EQ(Value(res, "unlinked"), "(True, 'ENOENT')") << r.out;
  EXPECT_EQ(Value(res, "symlink"), "(True, 'decoder.py')") << r.out;
  EXPECT_EQ(Code(res, "at_before"), "ENOENT") << r.out;
  EXPECT_EQ(Value(res, "at_present"), "True") << r.out;
  EXPECT_EQ(Value(res, "at_moved"), "(True, True, 'ENOENT')") << r.out;
  EXPECT_EQ(Code(res, "at_absent"), "ENOENT") << r.out;
}

// Names the sentry adds to a lower directory (a -v mount point, /etc's
// files) are in its listing, so never answered ENOENT; a directory not every
// caller may search, a -v mount and /tmp (upper answers off here) are never
// COMPLETE.
TEST(FastNegative, OnlyWhatATrapAnswers) {
  TempDir ro("/tmp/sec-fn-ro-");
  WriteFileOrDie(ro.path() + "/f", "x");
  ASSERT_EQ(chmod(ro.path().c_str(), 0755), 0);
  ProcessResult r =
      RunNegativePy(R"PY(
S = "/usr/share"
t("share", lambda: (lib(S + "/fm-absent"), S in complete()))
t("mount", lambda: (same(S + "/fm-mnt"), same(S + "/fm-mnt/f"), lib(S + "/fm-mnt/f") != "ENOENT"))
t("mounts_absent", lambda: [p for p in [S + "/fm-mnt/fm-absent", S + "/fm-ov/fm-absent",
                                        S + "/fm-ov/fm-absent/x", S + "/fm-ov/f"] if not same(p)])
t("mounts_listed", lambda: [p for p in [S + "/fm-mnt", S + "/fm-ov"] if p in complete()])
t("data", lambda: (same("/data/fm-absent"), same("/data/f"), "/data" in complete()))
t("tmp", lambda: (same("/tmp/fm-absent"), "/tmp" in complete()))
t("etc", lambda: (lib("/etc/fm-absent"),
                  [p for p in ["/etc/passwd", "/etc/group", "/etc/hosts", "/etc/ld.so.preload",
                               "/etc/sentry/fastmeta", "/etc/shadow", "/etc/fm-absent/x"]
                   if not same(p)]))
t("etc_files", lambda: (lib("/etc/passwd") != "ENOENT", lib("/etc/sentry") != "ENOENT"))
)PY",
                    {"-v", ro.path() + ":/data:ro", "-v", ro.path() + ":/usr/share/fm-mnt:ro", "-v",
                     ro.path() + ":/usr/share/fm-ov", "--no-fast-upper"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Value(res, "share"), "('ENOENT', True)") << r.out;
  EXPECT_EQ(Value(res, "mount"), "(True, True, True)") << r.out;
  EXPECT_EQ(Value(res, "mounts_absent"), "[]") << r.out;
  EXPECT_EQ(Value(res, "mounts_listed"), "[]") << r.out;
  EXPECT_EQ(Value(res, "data"), "(True, True, False)") << r.out;
  EXPECT_EQ(Value(res, "tmp"), "(True, False)") << r.out;
  EXPECT_EQ(Value(res, "etc"), "('ENOENT', [])") << r.out;
  EXPECT_EQ(Value(res, "etc_files"), "(True, True)") << r.out;

  // Readable by all but not searchable: no listing answers for it (as root
  // in the guest the trap says ENOENT; a listing would say it to everyone).
  ProcessResult p = RunNegativePy(R"PY(
J = "/usr/lib/python3.11/json"
os.chmod(J, 0o744)
t("private", lambda: (same(J + "/fm-absent"), J in complete()))
os.chmod(J, 0o755)
t("public", lambda: (same(J + "/fm-absent"), J in complete()))
)PY",
                                  {"--root"});
  ASSERT_EQ(p.exit_code, 0) << Describe(p);
  res = ParseResults(p.out);
  EXPECT_EQ(Value(res, "private"), "(True, False)") << p.out;
  EXPECT_EQ(Value(res, "public"), "(True, True)") << p.out;
}

}  // namespace
}  // namespace sentry::security
