// The sandbox's /etc (sentry/run/etc_view.h): what installed packages ship
// there and nothing an administrator added, no credential whoever owns it,
// and nothing beyond /etc gained by the rule. Each test makes its files in the
// host's /etc and removes them after.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/security/security_util.h"

namespace sentry::security {
namespace {

// A host file that exists for the test's lifetime.
class HostFile {
 public:
  HostFile(std::string path, const std::string& data, mode_t mode) : path_(std::move(path)) {
    WriteFileOrDie(path_, data, mode);
    chmod(path_.c_str(), mode);
  }
  ~HostFile() { unlink(path_.c_str()); }
  HostFile(const HostFile&) = delete;
  HostFile& operator=(const HostFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// What the guest finds at path: "OK <bytes read>" or the errno name; and
// whether the name is listed in its directory.
std::string Probe(const std::vector<std::string>& paths) {
  std::string body = "paths = [";
  for (const std::string& p : paths) body += PyQuote(p) + ", ";
  body += R"PY(]
for i, p in enumerate(paths):
    t(f"read_{i}", lambda: len(open(p, "rb").read()))
    t(f"stat_{i}", lambda: os.lstat(p).st_size)
    d, n = os.path.split(p)
    t(f"listed_{i}", lambda: n in os.listdir(d))
)PY";
  return body;
}

void ExpectHidden(const Results& res, size_t i, const std::string& path) {
  std::string k = std::to_string(i);
  EXPECT_EQ(Code(res, "read_" + k), "ENOENT") << path;
  EXPECT_EQ(Code(res, "stat_" + k), "ENOENT") << path;
  std::string listed = Code(res, "listed_" + k);
  EXPECT_TRUE(listed == "ENOENT" || Value(res, "listed_" + k) == "False") << path << ": " << listed;
}

void ExpectShown(const Results& res, size_t i, const std::string& path) {
  std::string k = std::to_string(i);
  EXPECT_EQ(Code(res, "read_" + k), "OK") << path;
  EXPECT_EQ(Value(res, "listed_" + k), "True") << path;
}

TEST(EtcView, AdminAddedFilesAreNotVisible) {
  std::string token = RandomToken(8);
  // World-readable, owned by no package: in /etc, in a directory a package
  // owns, and in a directory of its own.
  HostFile top("/etc/sentry-sectest-" + token + ".conf", "api_key=" + token, 0644);
  HostFile in_pkg_dir("/etc/default/sentry-sectest-" + token, "TOKEN=" + token, 0644);
  TempDir own_dir("/etc/sentry-sectest-dir-");
  chmod(own_dir.path().c_str(), 0755);
  HostFile in_own_dir(own_dir.path() + "/settings", "password=" + token, 0644);
  std::vector<std::string> paths = {
      top.path(),           in_pkg_dir.path(),     in_own_dir.path(),
      own_dir.path() + "/", "/etc/debian_version", "/etc/ld.so.cache"};
  ProcessResult r = RunPy(Probe(paths));
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  for (size_t i = 0; i < 3; ++i) ExpectHidden(res, i, paths[i]);
  EXPECT_EQ(Code(res, "stat_3"), "ENOENT") << own_dir.path();
  // Controls: a file base-files ships, and one ldconfig generates.
  ExpectShown(res, 4, paths[4]);
  ExpectShown(res, 5, paths[5]);
  EXPECT_EQ(r.out.find(token), std::string::npos) << r.out;
}

// A dpkg database of the test's own (DPKG_ADMINDIR, honoured as dpkg does)
// claims credentials for a package: the denylist hides them all the same,
// while an ordinary file the same package lists shows (the control that the
// database was read).
TEST(EtcView, PackageOwnedCredentialsAreNotVisible) {
  std::string token = RandomToken(8);
  std::string base = "/etc/sentry-sectest-" + token;
  HostFile key(base + ".key", "-----BEGIN PRIVATE KEY-----" + token, 0644);
  HostFile secrets(base + "-secrets", "user * " + token, 0644);
  HostFile keytab(base + ".keytab", token, 0644);
  HostFile unreadable(base + "-root.conf", token, 0600);
  HostFile backup(base + "-", token, 0644);
  HostFile plain(base + ".conf", "colour=blue", 0644);
  TempDir db("/tmp/sec-dpkg-");
  WriteFileOrDie(db.path() + "/status", "");
  mkdir((db.path() + "/info").c_str(), 0755);
  std::string list = "/.\n/etc\n";
  for (const std::string& p : {key.path(), secrets.path(), keytab.path(), unreadable.path(),
                               backup.path(), plain.path()}) {
    list += p + "\n";
  }
  for (const char* p : {"/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/ssl/private",
                        "/etc/machine-id", "/etc/passwd-"}) {
    list += std::string(p) + "\n";
  }
  WriteFileOrDie(db.path() + "/info/sentry-sectest.list", list);
  setenv("DPKG_ADMINDIR", db.path().c_str(), 1);
  std::vector<std::string> paths = {
      key.path(),    secrets.path(), keytab.path(),     unreadable.path(), backup.path(),
      "/etc/shadow", "/etc/gshadow", "/etc/machine-id", "/etc/passwd-",    plain.path()};
  ProcessResult r = RunPy(Probe(paths));
  ProcessResult as_root = RunPy(Probe(paths), {"--root"});
  unsetenv("DPKG_ADMINDIR");
  for (const ProcessResult* run : {&r, &as_root}) {
    ASSERT_EQ(run->exit_code, 0) << Describe(*run);
    Results res = ParseResults(run->out);
    for (size_t i = 0; i + 1 < paths.size(); ++i) ExpectHidden(res, i, paths[i]);
    ExpectShown(res, paths.size() - 1, paths.back());
    EXPECT_EQ(run->out.find(token), std::string::npos) << run->out;
  }
}

// The rule narrows /etc and gains nothing: the top level is what it was, the
// dpkg database and the sentry's cache stay out of sight, and /etc's links
// resolve inside the sandbox.
TEST(EtcView, NothingOutsideEtcGained) {
  ProcessResult r = RunPy(R"PY(
t("root", lambda: sorted(os.listdir("/")))
t("dpkg", lambda: os.listdir("/var/lib/dpkg"))
t("cache", lambda: os.listdir("/var/cache/sentry"))
t("up", lambda: sorted(os.listdir("/etc/../var")))
t("passwd", lambda: open("/etc/passwd").read().count("\n"))
t("ssl_private", lambda: os.listdir("/etc/ssl/private"))
links = [os.path.join(d, n) for d, _, ns in os.walk("/etc") for n in ns
         if os.path.islink(os.path.join(d, n))]
t("links_out", lambda: [l for l in links if os.path.exists(l) and
                        os.path.realpath(l).split("/")[1] not in
                        ("etc", "usr", "bin", "sbin", "lib", "lib64", "lib32", "proc", "dev")])
)PY");
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  // The sandbox's own top level, less what this host lacks (lib32...).
  std::string root = Value(res, "root");
  for (const char* name : {"bin", "dev", "etc", "home", "lib", "lib32", "lib64", "proc", "root",
                           "run", "sbin", "sys", "tmp", "usr", "var"}) {
    std::string quoted = std::string("'") + name + "'";
    size_t at = root.find(quoted);
    if (at != std::string::npos) root.erase(at, quoted.size());
  }
  EXPECT_EQ(root.find_first_not_of("[], "), std::string::npos) << Value(res, "root");
  EXPECT_EQ(Code(res, "dpkg"), "ENOENT");
  EXPECT_EQ(Code(res, "cache"), "ENOENT");
  EXPECT_EQ(Value(res, "up"), "['tmp']");
  EXPECT_EQ(Value(res, "passwd"), "3");  // the sentry's own three users
  EXPECT_EQ(Code(res, "ssl_private"), "ENOENT");
  EXPECT_EQ(Value(res, "links_out"), "[]");
}

}  // namespace
}  // namespace sentry::security
