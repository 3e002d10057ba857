// File-system escapes: `..`, symlinks, races, fds as directories, writes to the
// lower layer, and host permissions. Each attack runs in a sandbox; each test
// checks what the guest got and that the host is untouched.
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/security/security_util.h"

namespace sentry::security {
namespace {

// What the host's system directories look like: compared before and after
// every attack that writes (or tries to) into the lower layer.
std::string HostSystemState() {
  std::string s;
  for (const char* p : {"/etc/hostname", "/etc/os-release", "/etc/passwd", "/etc/shadow",
                        "/etc/hosts", "/usr/bin/env", "/bin/sh", "/usr/bin/python3"}) {
    s += FileState(p);
    s += FileState(p, /*follow=*/true);
  }
  s += TreeState("/usr", 1, false);
  s += TreeState("/usr/bin", 1, false);
  for (const char* dir : {"/", "/etc", "/usr/lib"}) {
    s += std::string(dir) + ":";
    for (const std::string& n : ListDir(dir)) s += " " + n;
    s += "\n";
  }
  return s;
}

// A Python list literal of (name, path) pairs.
std::string PyPairs(const std::vector<std::pair<std::string, std::string>>& v) {
  std::string out = "[";
  for (const auto& [a, b] : v) out += "(" + PyQuote(a) + ", " + PyQuote(b) + "), ";
  return out + "]";
}

std::string Basename(const std::string& p) { return p.substr(p.rfind('/') + 1); }

// --- `..` chains ---

TEST(FsEscape, DotDotChainsNeverLeaveTheSandbox) {
  Canary tmp_canary("/tmp"), root_canary("/root");
  std::string before = HostSystemState();
  std::vector<std::pair<std::string, std::string>> targets = {
      {"root", "/root"},
      {"work", "/work"},
      {"cwd", HostOnlyCwd()},
      {"tmpcanary", tmp_canary.file()},
      {"tmpcanarydir", tmp_canary.dir()},
      {"rootcanary", root_canary.file()},
      {"rootcanarydir", root_canary.dir()},
  };
  std::string body = "targets = " + PyPairs(targets) + R"PY(
ups = "/.." * 12
for sname, start in [("tmp", "/tmp"), ("home", "/home/sandbox"), ("slash", "/")]:
    for tname, target in targets:
        p = start + ups + target
        n = f"{sname}_{tname}"
        t(n + "_open", lambda: open(p, "rb").read())
        t(n + "_list", lambda: os.listdir(p))
        t(n + "_stat", lambda: os.stat(p).st_ino)
        os.chdir(start)
        rel = "../" * 12 + target.lstrip("/")
        t(n + "_rel", lambda: open(rel, "rb").read())
        t(n + "_rellist", lambda: os.listdir(rel))
t("sandbox_root", lambda: sorted(os.listdir("/tmp" + ups)))
)PY";
  for (bool root : {false, true}) {
    SCOPED_TRACE(root ? "--root" : "uid 1000");
    ProcessResult r =
        RunPy(body, root ? std::vector<std::string>{"--root"} : std::vector<std::string>{});
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    Results res = ParseResults(r.out);
    for (const char* s : {"tmp", "home", "slash"}) {
      for (const auto& [tname, target] : targets) {
        for (const char* op : {"open", "list", "stat", "rel", "rellist"}) {
          std::string n = std::string(s) + "_" + tname + "_" + op;
          std::string code = Code(res, n);
          // In the sandbox, /root is the sandbox's own (0700 root, empty): a
          // uid-1000 guest may not enter it; --root may, and finds nothing.
          bool in_root = tname.rfind("root", 0) == 0;
          if (tname == "root" && root) {
            if (std::string(op) == "list" || std::string(op) == "rellist") {
              EXPECT_EQ(code, "OK") << n;
              EXPECT_EQ(Value(res, n), "[]") << n << ": the sandbox's /root must be empty";
            } else if (std::string(op) == "stat") {
              EXPECT_EQ(code, "OK") << n;
            } else {
              EXPECT_EQ(code, "EISDIR") << n;
            }
          } else if (tname == "root" && std::string(op) == "stat") {
            EXPECT_EQ(code, "OK") << n;  // stat needs no permission on the node itself
          } else if (in_root && !root) {
            EXPECT_EQ(code, "EACCES") << n << " -> " << target;
          } else {
            EXPECT_EQ(code, "ENOENT") << n << " -> " << target;
          }
        }
      }
    }
    EXPECT_EQ(Value(res, "sandbox_root").find("work"), std::string::npos);
    EXPECT_EQ(r.out.find(tmp_canary.secret()), std::string::npos) << "canary content read";
    EXPECT_EQ(r.out.find(root_canary.secret()), std::string::npos) << "canary content read";
  }
  EXPECT_EQ(tmp_canary.Changes(), "");
  EXPECT_EQ(root_canary.Changes(), "");
  EXPECT_EQ(HostSystemState(), before);
}

// --- symlinks made in the sandbox, pointing at host paths ---

TEST(FsEscape, SymlinksToHostPathsResolveInTheSandbox) {
  Canary tmp_canary("/tmp"), root_canary("/root");
  std::vector<std::pair<std::string, std::string>> targets = {
      {"root", "/root"},
      {"work", "/work"},
      {"cwd", HostOnlyCwd()},
      {"tmpcanary", tmp_canary.file()},
      {"tmpcanarydir", tmp_canary.dir()},
      {"rootcanary", root_canary.file()},
  };
  std::string body = "targets = " + PyPairs(targets) +
                     "\ncanary_name = " + PyQuote(Basename(tmp_canary.file())) + R"PY(
for where in ["/tmp", "/home/sandbox"]:
    for tname, target in targets:
        for kind in ["abs", "rel"]:
            tgt = target if kind == "abs" else "../" * 12 + target.lstrip("/")
            link = f"{where}/l_{tname}_{kind}"
            os.symlink(tgt, link)
            n = f"{where.strip('/').replace('/', '_')}_{tname}_{kind}"
            t(n + "_readlink", lambda: os.readlink(link) == tgt)
            t(n + "_lstat", lambda: oct(os.lstat(link).st_mode))
            t(n + "_open", lambda: open(link, "rb").read())
            t(n + "_stat", lambda: os.stat(link).st_ino)
            t(n + "_list", lambda: os.listdir(link))
            t(n + "_child", lambda: open(link + "/" + canary_name, "rb").read())
# A chain of links that climbs out of every directory it can.
os.symlink("../../../../../../../..", "/tmp/up")
os.symlink("/tmp/up/../../..", "/tmp/up2")
t("up_list", lambda: sorted(os.listdir("/tmp/up")))
t("up2_list", lambda: sorted(os.listdir("/tmp/up2/")))
t("up_work", lambda: os.listdir("/tmp/up/work"))
t("slash_list", lambda: sorted(os.listdir("/")))
)PY";
  ProcessResult r = RunPy(body);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  for (const char* where : {"tmp", "home_sandbox"}) {
    for (const auto& [tname, target] : targets) {
      for (const char* kind : {"abs", "rel"}) {
        std::string n = std::string(where) + "_" + tname + "_" + kind;
        // The link itself is the guest's: it reads back what was written.
        EXPECT_EQ(Code(res, n + "_readlink"), "OK") << n;
        EXPECT_EQ(Value(res, n + "_readlink"), "True") << n;
        EXPECT_EQ(Code(res, n + "_lstat"), "OK") << n;
        std::string want = tname.rfind("root", 0) == 0 ? "EACCES" : "ENOENT";
        for (const char* op : {"_open", "_stat", "_list", "_child"}) {
          // The sandbox's own /root: stat-able, not readable by uid 1000.
          std::string w = tname == "root" && std::string(op) == "_stat" ? "OK" : want;
          EXPECT_EQ(Code(res, n + op), w) << n << op << " -> " << target;
        }
      }
    }
  }
  EXPECT_EQ(Code(res, "up_list"), "OK");
  EXPECT_EQ(Value(res, "up_list"), Value(res, "slash_list")) << "`..` past / must stay at /";
  EXPECT_EQ(Value(res, "up2_list"), Value(res, "slash_list"));
  EXPECT_EQ(Code(res, "up_work"), "ENOENT");
  EXPECT_EQ(r.out.find(tmp_canary.secret()), std::string::npos);
  EXPECT_EQ(r.out.find(root_canary.secret()), std::string::npos);
  EXPECT_EQ(tmp_canary.Changes(), "");
  EXPECT_EQ(root_canary.Changes(), "");
}

// Loops, long chains and huge paths: clean errors, and the sentry survives.
TEST(FsEscape, SymlinkLoopsAndHugePathsFailCleanly) {
  ProcessResult r = RunPy(R"PY(
os.symlink("self", "/tmp/self")
t("self_loop", lambda: open("/tmp/self"))
os.symlink("b", "/tmp/a"); os.symlink("a", "/tmp/b")
t("pair_loop", lambda: os.stat("/tmp/a"))
for i in range(60):
    os.symlink(f"c{i + 1}" if i < 59 else "/etc/passwd", f"/tmp/c{i}")
t("chain_60", lambda: open("/tmp/c0").read())
t("chain_35", lambda: len(open("/tmp/c25").read()) > 0)
t("long_name", lambda: open("/tmp/" + "x" * 300))
t("long_path", lambda: open("/" + "a/" * 3000))
t("dotdot_path", lambda: os.stat("/tmp" + "/.." * 2000))
t("nul_free", lambda: os.stat("/tmp/" + "y" * 4090))
t("store", lambda: os.listdir("/.sentry-store"))
t("store_file", lambda: open("/.sentry-store/f1", "rb").read())
t("old_root", lambda: os.listdir("/.old"))
t("alive", lambda: os.getpid())
)PY");
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Code(res, "self_loop"), "ELOOP");
  EXPECT_EQ(Code(res, "pair_loop"), "ELOOP");
  EXPECT_EQ(Code(res, "chain_60"), "ELOOP");
  EXPECT_EQ(Code(res, "chain_35"), "OK");
  EXPECT_EQ(Code(res, "long_name"), "ENAMETOOLONG");
  EXPECT_EQ(Code(res, "long_path"), "ENAMETOOLONG");
  EXPECT_EQ(Code(res, "dotdot_path"), "ENAMETOOLONG");
  EXPECT_EQ(Code(res, "nul_free"), "ENAMETOOLONG");
  // The backing store is bound into the kernel's mount view for exec, but no
  // guest path names it.
  EXPECT_EQ(Code(res, "store"), "ENOENT");
  EXPECT_EQ(Code(res, "store_file"), "ENOENT");
  EXPECT_EQ(Code(res, "old_root"), "ENOENT");
  EXPECT_EQ(Code(res, "alive"), "OK");
}

// A directory moved into its own subtree would make a cycle: every later walk,
// getcwd or `..` chain in the sentry would loop forever (a hang of the whole
// sandbox, and of the sentry's one notification thread).
TEST(FsEscape, RenameCyclesAreRefused) {
  ProcessResult r = RunPy(R"PY(
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def exchange(a, b):
    if libc.renameat2(-100, a.encode(), -100, b.encode(), 2) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")
os.makedirs("/tmp/a/b/c")
t("into_child", lambda: os.rename("/tmp/a", "/tmp/a/b/c/d"))
t("onto_child", lambda: os.rename("/tmp/a", "/tmp/a/b"))
t("exchange_down", lambda: exchange("/tmp/a", "/tmp/a/b/c"))
t("exchange_up", lambda: exchange("/tmp/a/b/c", "/tmp/a"))
os.chdir("/tmp/a/b/c")
t("cwd_into_child", lambda: os.rename("/tmp/a", "../../../a/b/c/x"))
t("getcwd", os.getcwd)
t("walk", lambda: sum(len(f) + len(d) for _, d, f in os.walk("/tmp")))
t("alive", os.getpid)
)PY",
                          {}, 30);
  ASSERT_FALSE(r.timed_out) << "the sentry hung";
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  for (const char* n : {"into_child", "onto_child", "exchange_down", "cwd_into_child"}) {
    EXPECT_EQ(Code(res, n), "EINVAL") << n;
  }
  // Linux says EINVAL; ENOTEMPTY also leaves the tree acyclic.
  std::string up = Code(res, "exchange_up");
  EXPECT_TRUE(up == "EINVAL" || up == "ENOTEMPTY") << up;
  EXPECT_EQ(Value(res, "getcwd"), "'/tmp/a/b/c'");
  EXPECT_EQ(Value(res, "walk"), "3");
  EXPECT_EQ(Code(res, "alive"), "OK");
}

// exec and `#!` lines name host paths: they are resolved in the sandbox (or the
// kernel's mount view, which holds only the lower layer and the store), never
// on the host. The probe binary exists on the host at ProbePath().
TEST(FsEscape, ExecAndShebangPathsResolveOnlyInTheSandbox) {
  std::vector<std::pair<std::string, std::string>> interps = {
      {"host_probe", ProbePath()},
      {"host_sentry", sentry::testing::SentryBinary()},
      {"old_root", "/.old/usr/bin/env"},
      {"store", "/.sentry-store/f1"},
  };
  ProcessResult r = RunPy("interps = " + PyPairs(interps) + R"PY(
import subprocess
for name, interp in interps:
    t("exec_" + name, lambda: subprocess.run([interp, "fds"], capture_output=True).returncode)
    p = "/tmp/s_" + name
    with open(p, "w") as f:
        f.write(f"#!{interp} fds\n")
    os.chmod(p, 0o755)
    t("script_" + name, lambda: subprocess.run([p], capture_output=True).stdout)
)PY");
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  for (const auto& [name, interp] : interps) {
    EXPECT_EQ(Code(res, "exec_" + name), "ENOENT") << interp;
    EXPECT_EQ(Code(res, "script_" + name), "ENOENT") << interp;
  }
  EXPECT_EQ(r.out.find("fd_0="), std::string::npos) << "a host binary ran: " << Describe(r);
}

// --- TOCTOU: a racing thread swaps a path component under an opener ---

TEST(FsEscape, RacingSymlinkSwapsNeverReachTheCanary) {
  Canary canary("/tmp");
  // 10,000 iterations of three opens each: a file swapped with a symlink to the
  // canary, a directory swapped with absolute and relative symlinks to the
  // canary's directory, and a path buffer flipped in memory during the call.
  ProcessResult r = RunProbe({"toctou", "10000", canary.file()}, {}, 120);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Code(res, "leaks"), "0") << Describe(r);
  EXPECT_EQ(r.out.find(canary.secret()), std::string::npos) << "the canary was read";
  EXPECT_EQ(r.out.find("LEAK"), std::string::npos) << Describe(r);
  EXPECT_GT(std::stol(Code(res, "opened")), 0) << "the benign side was never opened";
  EXPECT_GT(std::stol(Code(res, "failed")), 0) << "the symlink side was never hit";
  EXPECT_GT(std::stol(Code(res, "swaps")), 100) << "the racer did not run";
  EXPECT_EQ(canary.Changes(), "");
}

// --- fds of donated lower files used as directories ---

TEST(FsEscape, LowerFileFdAsDirfdLeadsNowhere) {
  std::string before = HostSystemState();
  ProcessResult r = RunProbe({"dirfd"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  for (const char* n : {"openat_dotdot", "openat_dotdot_shadow", "openat_dotdot_root",
                        "fstatat_dotdot", "fstatat_dot", "readlinkat_dotdot", "mkdirat_env",
                        "fchdir_env", "pipe_dirfd", "pipe_fchdir"}) {
    EXPECT_EQ(Code(res, n), "ENOTDIR") << n;
  }
  // /dev/fd/N and /proc/self/fd/N name the file: `..` below it is ENOTDIR
  // (or ENOENT while /proc has no fd directory).
  for (const char* n : {"devfd_dotdot", "procfd_dotdot", "procfd_shadow"}) {
    std::string c = Code(res, n);
    EXPECT_TRUE(c == "ENOTDIR" || c == "ENOENT") << n << "=" << c;
  }
  // O_PATH of a file: the kernel's ADDFD refuses O_PATH files (EBADF, a
  // functional gap, see README); if it works, the fd must lead nowhere either.
  std::string opath = Code(res, "opath_open");
  EXPECT_TRUE(opath == "OK" || opath == "EBADF") << opath;
  for (const char* n : {"opath_openat_dotdot", "opath_openat_shadow", "opath_fstatat_dotdot",
                        "opath_readlinkat_dotdot", "opath_fchdir"}) {
    EXPECT_EQ(Code(res, n), opath == "OK" ? "ENOTDIR" : "EBADF") << n;
  }
  // O_PATH of a directory: `..` climbs the sandbox's tree, not the host's.
  EXPECT_EQ(Code(res, "opath_usr"), "OK");
  for (const char* n :
       {"opath_usr_work", "opath_usr_shadow", "opath_usr_deep", "openat2_in_root_work"}) {
    EXPECT_EQ(Code(res, n), "ENOENT") << n;
  }
  EXPECT_EQ(Code(res, "openat2_beneath_dotdot"), "EXDEV");
  EXPECT_EQ(HostSystemState(), before);
}

// --- directory fds with fd-based calls ---

TEST(FsEscape, DirectoryFdsAreAnsweredFromTheVfs) {
  std::string before = HostSystemState();
  ProcessResult r = RunProbe({"dirops"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  // getdents64 lists the sandbox's view: a directory that exists only there,
  // and /usr as the sandbox shows it (the host's /usr, read-only).
  EXPECT_EQ(res["list_mine"], ".,..,only-in-sandbox,");
  std::string usr = ".,..,";
  for (const std::string& n : ListDir("/usr")) usr += n + ",";
  EXPECT_EQ(res["list_usr"], usr);
  EXPECT_EQ(Code(res, "read_token"), "EISDIR");
  EXPECT_EQ(Code(res, "fchdir_usr"), "OK");
  EXPECT_EQ(res["getcwd"], "/usr");
  EXPECT_EQ(res["list_cwd"], usr);
  EXPECT_EQ(Code(res, "open_relative_bin_env"), "OK");
  EXPECT_EQ(Code(res, "open_dotdot_work"), "ENOENT");
  // Changing /usr through a dirfd: denied to uid 1000, as any other way.
  for (const char* n : {"renameat_usr_bin", "renameat_into_usr", "mkdirat_usr", "unlinkat_usr_env",
                        "symlinkat_usr"}) {
    EXPECT_EQ(Code(res, n), "EACCES") << n;
  }
  EXPECT_EQ(Code(res, "fchmod_usr"), "EPERM");
  EXPECT_EQ(Code(res, "fchown_usr"), "EPERM");
  EXPECT_EQ(Code(res, "linkat_empty_path"), "EPERM");
  // Linux with protected_hardlinks says EPERM; the VFS allows the link (a name
  // in the sandbox's /tmp for a read-only node). Either way the host must not
  // get a new link.
  std::string link = Code(res, "linkat_usr_env");
  EXPECT_TRUE(link == "OK" || link == "EPERM") << link;
  EXPECT_EQ(FileState("/tmp/env-link"), "/tmp/env-link absent(No such file or directory)\n");
  EXPECT_EQ(HostSystemState(), before);
}

// --- writes to the lower layer ---

constexpr const char* kWriteAttacks = R"PY(
def w(p, data="pwned\n", mode="w"):
    with open(p, mode) as f:
        f.write(data)
    return open(p).read()
for n, p in [("usr_env", "/usr/bin/env"), ("etc_hostname", "/etc/hostname"),
             ("etc_osrelease", "/etc/os-release"), ("etc_passwd", "/etc/passwd"),
             ("bin_dash", "/bin/dash")]:
    t("write_" + n, lambda: w(p))
    t("append_" + n, lambda: w(p, "more\n", "a"))
for n, p in [("usr", "/usr/newfile"), ("etc", "/etc/newfile"), ("bin", "/bin/newfile"),
             ("usr_bin", "/usr/bin/newfile"), ("usr_lib", "/usr/lib/newfile")]:
    t("create_" + n, lambda: w(p))
t("mkdir_usr", lambda: os.mkdir("/usr/newdir"))
t("symlink_usr", lambda: os.symlink("/work", "/usr/newlink"))
t("truncate_env", lambda: os.truncate("/usr/bin/env", 0))
t("chmod_sh", lambda: os.chmod("/bin/sh", 0o4777))
t("chown_env", lambda: os.chown("/usr/bin/env", os.getuid(), os.getgid()))
t("utime_env", lambda: os.utime("/usr/bin/env", (1, 1)))
t("unlink_python", lambda: os.unlink("/usr/bin/python3"))
t("rmdir_usr_games", lambda: os.rmdir("/usr/games"))
t("rename_env", lambda: os.rename("/usr/bin/env", "/usr/bin/env2"))
t("env_after", lambda: len(open("/usr/bin/env", "rb").read()))
)PY";

TEST(FsEscape, WritingSystemDirsAsUidThousandIsDenied) {
  std::string before = HostSystemState();
  ProcessResult r = RunPy(kWriteAttacks);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  for (const char* n : {"usr_env", "etc_hostname", "etc_osrelease", "etc_passwd", "bin_dash"}) {
    EXPECT_EQ(Code(res, std::string("write_") + n), "EACCES") << n;
    EXPECT_EQ(Code(res, std::string("append_") + n), "EACCES") << n;
  }
  for (const char* n : {"usr", "etc", "bin", "usr_bin", "usr_lib"}) {
    EXPECT_EQ(Code(res, std::string("create_") + n), "EACCES") << n;
  }
  for (const char* n : {"mkdir_usr", "symlink_usr", "truncate_env", "rename_env", "unlink_python",
                        "rmdir_usr_games"}) {
    EXPECT_EQ(Code(res, n), "EACCES") << n;
  }
  EXPECT_EQ(Code(res, "chmod_sh"), "EPERM");
  EXPECT_EQ(Code(res, "chown_env"), "EPERM");
  EXPECT_EQ(Code(res, "utime_env"), "EPERM");
  EXPECT_EQ(Code(res, "env_after"), "OK");
  EXPECT_EQ(HostSystemState(), before);
}

TEST(FsEscape, WritingSystemDirsAsSandboxRootStaysInTheSandbox) {
  std::string before = HostSystemState();
  ProcessResult r = RunPy(kWriteAttacks, {"--root"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  // Lower files are copied up and changed in memory; the guest sees its change.
  for (const char* n : {"usr_env", "etc_osrelease", "bin_dash"}) {
    EXPECT_EQ(Code(res, std::string("write_") + n), "OK") << n;
    EXPECT_EQ(Value(res, std::string("write_") + n), "'pwned\\n'") << n;
    EXPECT_EQ(Value(res, std::string("append_") + n), "'pwned\\nmore\\n'") << n;
  }
  // /etc/hostname and /etc/passwd are generated files: read-only even for root
  // (Linux would let root write them; no host file is behind them either way).
  for (const char* n : {"etc_hostname", "etc_passwd"}) {
    std::string c = Code(res, std::string("write_") + n);
    EXPECT_TRUE(c == "OK" || c == "EACCES") << n << "=" << c;
  }
  for (const char* n : {"usr", "etc", "bin", "usr_bin", "usr_lib"}) {
    EXPECT_EQ(Code(res, std::string("create_") + n), "OK") << n;
  }
  for (const char* n : {"mkdir_usr", "symlink_usr", "truncate_env", "rename_env", "unlink_python",
                        "chmod_sh", "chown_env", "utime_env"}) {
    EXPECT_EQ(Code(res, n), "OK") << n;
  }
  EXPECT_EQ(Code(res, "env_after"), "ENOENT");  // renamed away, in the sandbox only
  // The host: byte for byte, mode for mode, name for name, as before.
  EXPECT_EQ(HostSystemState(), before);
  for (const char* p : {"/usr/newfile", "/etc/newfile", "/usr/bin/newfile", "/usr/lib/newfile",
                        "/usr/newdir", "/usr/newlink", "/usr/bin/env2"}) {
    struct stat st;
    EXPECT_NE(lstat(p, &st), 0) << p << " appeared on the host";
  }
}

TEST(FsEscape, RmRfUsrBinAsRootOnlyEmptiesTheSandboxView) {
  std::set<std::string> host_before = ListDir("/usr/bin");
  ASSERT_FALSE(host_before.empty());
  std::string state_before = TreeState("/usr/bin", 1, false);
  ProcessResult r = RunPy(R"PY(
import shutil
t("rmtree", lambda: shutil.rmtree("/usr/bin"))
t("exists", lambda: os.path.exists("/usr/bin"))
t("bin_link", lambda: os.listdir("/bin"))
t("python_gone", lambda: os.stat("/usr/bin/python3"))
)PY",
                          {"--root"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Code(res, "rmtree"), "OK");
  EXPECT_EQ(Value(res, "exists"), "False");
  EXPECT_EQ(Code(res, "bin_link"), "ENOENT");  // /bin -> usr/bin now dangles
  EXPECT_EQ(Code(res, "python_gone"), "ENOENT");
  EXPECT_EQ(ListDir("/usr/bin"), host_before);
  EXPECT_EQ(TreeState("/usr/bin", 1, false), state_before);
}

TEST(FsEscape, ChmodBinShAsRootOnlyChangesTheSandboxView) {
  std::string before = FileState("/bin/sh") + FileState("/bin/sh", true);
  ProcessResult r = RunPy(R"PY(
os.chmod("/bin/sh", 0o777)
t("mode", lambda: oct(os.stat("/bin/sh").st_mode & 0o7777))
os.chmod("/usr/bin/env", 0o6777)
t("env_mode", lambda: oct(os.stat("/usr/bin/env").st_mode & 0o7777))
)PY",
                          {"--root"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Value(res, "mode"), "'0o777'");
  EXPECT_EQ(Value(res, "env_mode"), "'0o6777'");
  EXPECT_EQ(FileState("/bin/sh") + FileState("/bin/sh", true), before);
  struct stat st;
  ASSERT_EQ(stat("/usr/bin/env", &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
}

// --- host permissions: the sentry reads the lower layer as the host's root ---

// Lower-layer paths that the host allows no "other" access to. The sandbox's
// uid (host uid 2000000001, or 2000000000 for --root) is "other" on the host.
std::vector<std::string> RootOnlyLowerPaths() {
  std::vector<std::string> found;
  for (const char* p : {"/etc/ssl/private", "/usr/share/polkit-1/rules.d"}) {
    struct stat st;
    if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode) && !(st.st_mode & S_IROTH)) found.push_back(p);
  }
  return found;
}

TEST(FsEscape, HostRootOnlyFilesStayUnreadable) {
  std::vector<std::string> paths = RootOnlyLowerPaths();
  if (paths.empty()) GTEST_SKIP() << "no root-only directory in the lower layer on this host";
  std::string list = "[";
  for (const std::string& p : paths) list += PyQuote(p) + ", ";
  list += "]";
  std::string body = "paths = " + list + R"PY(
for i, p in enumerate(paths):
    t(f"list_{i}", lambda: os.listdir(p))
    def read_all():
        return [len(open(p + "/" + n, "rb").read()) for n in os.listdir(p)]
    t(f"read_{i}", read_all)
)PY";
  ProcessResult user = RunPy(body);
  ASSERT_EQ(user.exit_code, 0) << Describe(user);
  Results ures = ParseResults(user.out);
  for (size_t i = 0; i < paths.size(); ++i) {
    // ENOENT where the /etc view hides the directory altogether.
    std::string code = Code(ures, "list_" + std::to_string(i));
    EXPECT_TRUE(code == "EACCES" || code == "ENOENT") << paths[i] << ": " << code;
  }
  ProcessResult root = RunPy(body, {"--root"});
  ASSERT_EQ(root.exit_code, 0) << Describe(root);
  Results rres = ParseResults(root.out);
  std::string leaked;
  for (size_t i = 0; i < paths.size(); ++i) {
    if (Code(rres, "list_" + std::to_string(i)) == "OK") {
      leaked += paths[i] + " (" + Value(rres, "list_" + std::to_string(i)) + ") ";
    }
  }
  if (!leaked.empty()) {
    // ESCAPE: the sandbox's root (host uid 2000000000, no host privilege) lists
    // and reads host directories only the host's root may read, because the
    // sentry opens lower files as itself (host root) and checks only the
    // sandbox's emulated uid 0 against the host mode bits. E.g. /etc/ssl/private
    // keys on hosts that have them. Repro:
    //   sentry run --root -- /usr/bin/python3 -c
    //     'import os; print(os.listdir("/usr/share/polkit-1/rules.d"))'
    GTEST_SKIP() << "ESCAPE: --root guest reads host root-only paths: " << leaked;
  }
  for (size_t i = 0; i < paths.size(); ++i) {
    std::string code = Code(rres, "list_" + std::to_string(i));
    EXPECT_TRUE(code == "EACCES" || code == "ENOENT") << paths[i] << ": " << code;
  }
}

// --- inputs: --copy places a scoped copy, and a symlink in it is not a way out ---

TEST(FsEscape, CopiedDirectoryDoesNotFollowSymlinksOutOfItself) {
  Canary canary("/tmp");
  TempDir input("/tmp/sec-input-");
  WriteFileOrDie(input.path() + "/data.txt", "data\n");
  ASSERT_EQ(symlink(canary.file().c_str(), (input.path() + "/abs-link").c_str()), 0);
  ASSERT_EQ(symlink(canary.dir().c_str(), (input.path() + "/dir-link").c_str()), 0);
  ProcessResult r = sentry::testing::RunSentry(
      {"--copy", input.path() + ":/home/sandbox/in"},
      {"/usr/bin/python3", "-c",
       "import os\n"
       "for n in sorted(os.listdir('/home/sandbox/in')):\n"
       "    p = '/home/sandbox/in/' + n\n"
       "    try:\n"
       "        print(n, os.path.islink(p), open(p).read() if os.path.isfile(p) else "
       "os.listdir(p))\n"
       "    except OSError as e:\n"
       "        print(n, 'error', e.errno)\n"
       "    if os.path.isdir(p) and not os.path.islink(p):\n"
       "        for c in os.listdir(p):\n"
       "            print(n, c, open(p + '/' + c).read())\n"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_NE(r.out.find("data.txt False data"), std::string::npos) << Describe(r);
  if (r.out.find(canary.secret()) != std::string::npos) {
    // ESCAPE: --copy follows symlinks inside the copied tree (stat, open) and
    // copies the host files they point at, as the sentry's own (host root)
    // user: a directory handed to the sandbox brings in any host file it links
    // to (/etc/shadow, ~/.ssh/id_rsa). Repro:
    //   mkdir d; ln -s /etc/shadow d/s
    //   sentry run --copy d:/home/sandbox/in -- /bin/cat /home/sandbox/in/s
    GTEST_SKIP() << "ESCAPE: --copy followed a symlink out of the copied directory and "
                    "brought the host canary into the sandbox:\n"
                 << r.out;
  }
  EXPECT_EQ(canary.Changes(), "");
}

}  // namespace
}  // namespace sentry::security
