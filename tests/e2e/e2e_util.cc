#include "tests/e2e/e2e_util.h"

#include <dirent.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace sentry::testing {

TempDir::TempDir(const std::string& parent) {
  std::string tmpl = parent + "/sentry-e2e-XXXXXX";
  if (!mkdtemp(tmpl.data())) std::abort();
  path_ = tmpl;
  chmod(path_.c_str(), 0755);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string TempDir::Write(const std::string& rel, const std::string& data, int mode) const {
  std::filesystem::path p = std::filesystem::path(path_) / rel;
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << data;
  chmod(p.c_str(), static_cast<mode_t>(mode));
  return p.string();
}

ProcessResult RunIn(const std::string& cwd, const std::vector<std::string>& env,
                    const std::vector<std::string>& argv, bool clean_env, const std::string& input,
                    double timeout_sec) {
  // env(1) sets the directory and variables, then execs argv in place, so
  // exit codes and signals are argv's own.
  std::vector<std::string> full = {"/usr/bin/env"};
  if (clean_env) full.push_back("-i");
  full.push_back("-C");
  full.push_back(cwd);
  full.insert(full.end(), env.begin(), env.end());
  full.insert(full.end(), argv.begin(), argv.end());
  return RunProcess(full, input, timeout_sec);
}

ProcessResult SentryIn(const std::string& cwd, const std::vector<std::string>& flags,
                       const std::vector<std::string>& cmd, const std::vector<std::string>& env) {
  std::vector<std::string> argv = {SentryBinary(), "run"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back("--");
  argv.insert(argv.end(), cmd.begin(), cmd.end());
  return RunIn(cwd, env, argv);
}

ProcessResult Sentry(const std::vector<std::string>& args, const std::string& input) {
  std::vector<std::string> argv = {SentryBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, input);
}

ProcessResult SandboxScript(const std::string& script, const std::vector<std::string>& flags) {
  TempDir dir;
  dir.Write("script.py", script);
  return SentryIn(dir.path(), flags, {"/usr/bin/python3", "script.py", "/tmp"});
}

ProcessResult NativeScript(const std::string& script) {
  TempDir dir, base;
  dir.Write("script.py", script);
  return RunIn(dir.path(),
               {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir.path(), "LANG=C.UTF-8",
                "LC_ALL=C.UTF-8", "TMPDIR=" + base.path()},
               {"/usr/bin/python3", "script.py", base.path()}, /*clean_env=*/true);
}

std::map<std::string, std::string> KeyValues(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

std::string BinaryDir() {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path().string();
}

std::string ReadHostFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Describe(const ProcessResult& r) {
  std::ostringstream os;
  os << "exit " << r.exit_code << (r.timed_out ? " (timed out)" : "") << "\n--- stdout:\n"
     << r.out << "--- stderr:\n"
     << r.err;
  return os.str();
}

std::set<std::string> SentryCgroups() {
  std::set<std::string> out;
  if (DIR* d = opendir("/sys/fs/cgroup/pids")) {
    while (dirent* e = readdir(d)) {
      if (std::string(e->d_name).rfind("sentry-", 0) == 0) out.insert(e->d_name);
    }
    closedir(d);
  }
  return out;
}

}  // namespace sentry::testing
