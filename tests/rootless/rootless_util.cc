#include "tests/rootless/rootless_util.h"

#include <fcntl.h>
#include <ftw.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace sentry::testing {
namespace {

// The start of name's first range in file (0: none).
uint32_t FirstRange(const std::string& file, const std::string& name) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + ":", 0) != 0) continue;
    return static_cast<uint32_t>(std::stoul(line.substr(name.size() + 1)));
  }
  return 0;
}

bool HasRange(const std::string& file, const std::string& name) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + ":", 0) == 0) return true;
  }
  return false;
}

// Makes the user if missing (reused if there), and gives it a subordinate
// range or checks that it has none.
Caller EnsureUser(const std::string& name, bool subid) {
  if (!getpwnam(name.c_str())) {
    // A system user gets no subordinate range from useradd.
    std::vector<std::string> argv = {"/usr/sbin/useradd", "-m", "-s", "/bin/sh"};
    if (!subid) argv.push_back("-r");
    argv.push_back(name);
    RunProcess(argv);
  }
  if (subid && !HasRange("/etc/subuid", name)) {
    RunProcess({"/usr/sbin/usermod", "--add-subuids", "300000-365535", "--add-subgids",
                "300000-365535", name});
  }
  Caller c;
  passwd* pw = getpwnam(name.c_str());
  if (!pw) return c;
  c.name = name;
  c.uid = pw->pw_uid;
  c.gid = pw->pw_gid;
  c.home = pw->pw_dir;
  return c;
}

int RemoveEntry(const char* path, const struct stat*, int type, FTW*) {
  if (type == FTW_DP) {
    rmdir(path);
  } else {
    unlink(path);
  }
  return 0;
}

}  // namespace

std::vector<Caller> RootlessCallers() {
  static std::vector<Caller> callers = [] {
    std::vector<Caller> out;
    if (geteuid() != 0) {
      Caller self;
      self.uid = getuid();
      self.gid = getgid();
      passwd* pw = getpwuid(self.uid);
      self.home = pw ? pw->pw_dir : "/tmp";
      out.push_back(self);
      return out;
    }
    out.push_back(EnsureUser("sentry-rl-single", false));
    out.push_back(EnsureUser("sentry-rl-subid", true));
    return out;
  }();
  return callers;
}

uint32_t RangeStart(const Caller& c) {
  std::string name = c.name;
  if (name.empty()) {
    passwd* pw = getpwuid(c.uid);
    if (!pw) return 0;
    name = pw->pw_name;
  }
  if (access("/usr/bin/newuidmap", X_OK) != 0 || access("/usr/bin/newgidmap", X_OK) != 0 ||
      FirstRange("/etc/subgid", name) == 0) {
    return 0;
  }
  return FirstRange("/etc/subuid", name);
}

ProcessResult RunAsCaller(const Caller& c, const std::vector<std::string>& argv,
                          const std::vector<std::string>& env, const std::string& input,
                          double timeout_sec, long ulimit_u) {
  std::vector<std::string> full;
  if (!c.name.empty()) full = {"/usr/sbin/runuser", "-u", c.name, "--"};
  full.insert(full.end(), {"/usr/bin/env", "-i", "PATH=/usr/bin:/bin",
                           absl::StrCat("HOME=", c.home), "LANG=C.UTF-8"});
  if (const char* xdg = getenv("XDG_RUNTIME_DIR"); xdg && c.name.empty()) {
    full.push_back(absl::StrCat("XDG_RUNTIME_DIR=", xdg));
  }
  full.insert(full.end(), env.begin(), env.end());
  if (ulimit_u > 0) {
    full.insert(full.end(),
                // (bash: dash has no ulimit -u.)
                {"/bin/bash", "-c",
                 absl::StrCat("ulimit -u ", ulimit_u, " || exit 99; exec \"$@\""), "bash"});
  }
  full.insert(full.end(), argv.begin(), argv.end());
  return RunProcess(full, input, timeout_sec);
}

ProcessResult SentryAs(const Caller& c, const std::vector<std::string>& flags,
                       const std::vector<std::string>& cmd, const std::string& input) {
  std::vector<std::string> argv = {SentryBinary(), "run"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back("--");
  argv.insert(argv.end(), cmd.begin(), cmd.end());
  return RunAsCaller(c, argv, {}, input);
}

CallerDir::CallerDir(const Caller& c) : c_(c) {
  std::string templ = c.home + "/rl-test-XXXXXX";
  if (mkdtemp(templ.data())) path_ = templ;
  chown(path_.c_str(), c.uid, c.gid);
  chmod(path_.c_str(), 0700);
}

CallerDir::~CallerDir() {
  if (!path_.empty()) nftw(path_.c_str(), RemoveEntry, 16, FTW_DEPTH | FTW_PHYS);
}

std::string CallerDir::Write(const std::string& rel, const std::string& data, int mode) const {
  std::string p = path_ + "/" + rel;
  size_t slash = rel.rfind('/');
  if (slash != std::string::npos) {
    std::string dir = path_ + "/" + rel.substr(0, slash);
    mkdir(dir.c_str(), 0755);
    chown(dir.c_str(), c_.uid, c_.gid);
  }
  {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << data;
  }
  chmod(p.c_str(), mode);
  chown(p.c_str(), c_.uid, c_.gid);
  return p;
}

std::string Describe(const ProcessResult& r) {
  return absl::StrCat("exit ", r.exit_code, "\nstdout: ", r.out, "\nstderr: ", r.err);
}

std::string ReadFileOr(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace sentry::testing
