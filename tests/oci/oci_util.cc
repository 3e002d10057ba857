#include "tests/oci/oci_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace sentry::testing {
namespace {

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

}  // namespace

std::string TestRootfs(std::string* why) {
  static std::string rootfs;
  static std::string error;
  if (rootfs.empty() && error.empty()) {
    std::string dir = std::string(OCI_TEST_DIR) + "/rootfs";
    ProcessResult r = RunProcess({"/bin/sh", OCI_MAKE_ROOTFS, dir}, "", 120);
    if (r.exit_code == 0) {
      rootfs = dir;
    } else {
      error = "make_rootfs.sh failed: " + r.err;
    }
  }
  if (why) *why = error;
  return rootfs;
}

ScratchDir::ScratchDir(const std::string& parent) {
  std::string tmpl = (parent.empty() ? std::string(OCI_TEST_DIR) : parent) + "/scratch-XXXXXX";
  char* made = mkdtemp(tmpl.data());
  if (!made) std::abort();
  chmod(made, 0755);
  path_ = made;
}

ScratchDir::~ScratchDir() { RunProcess({"/bin/rm", "-rf", path_}); }

void WriteBundle(const std::string& dir, const std::string& rootfs,
                 const std::vector<std::string>& args, const std::string& extra_process,
                 const std::string& extra_top) {
  nlohmann::json a = args;
  std::ostringstream c;
  c << R"({"ociVersion":"1.0.2","root":{"path":")" << rootfs << R"("},)"
    << R"("process":{"args":)" << a.dump()
    << R"(,"env":["PATH=/usr/bin:/bin","HOME=/root"],"cwd":"/","user":{"uid":0,"gid":0})"
    << (extra_process.empty() ? "" : "," + extra_process) << "}"
    << (extra_top.empty() ? "" : "," + extra_top) << "}";
  mkdir(dir.c_str(), 0755);
  std::ofstream(dir + "/config.json") << c.str();
}

int SpawnToFiles(const std::vector<std::string>& argv, const std::string& out_path,
                 const std::string& err_path) {
  std::vector<char*> args;
  for (const std::string& s : argv) args.push_back(const_cast<char*>(s.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    int in = open("/dev/null", O_RDONLY);
    int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    execv(args[0], args.data());
    _exit(127);
  }
  return WaitExit(pid, 60);
}

int WaitExit(pid_t pid, double timeout_sec) {
  double deadline = Now() + timeout_sec;
  while (Now() < deadline) {
    int status;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (r < 0) return -1;
    usleep(2000);
  }
  return -1;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

std::vector<pid_t> ProcessesWith(const std::string& needle) {
  std::vector<pid_t> found;
  DIR* d = opendir("/proc");
  if (!d) return found;
  while (dirent* e = readdir(d)) {
    pid_t pid = atoi(e->d_name);
    if (pid <= 0 || pid == getpid()) continue;
    std::string cmd = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
    if (cmd.find(needle) != std::string::npos && Alive(pid)) found.push_back(pid);
  }
  closedir(d);
  return found;
}

bool Alive(pid_t pid) {
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return false;
  return stat[close + 2] != 'Z' && stat[close + 2] != 'X';
}

}  // namespace sentry::testing
