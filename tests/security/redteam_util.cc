#include "tests/security/redteam_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <sstream>

namespace sentry::security {
namespace {

std::string RtProbePath() {
  if (const char* env = getenv("SENTRY_REDTEAM_PROBE")) return env;
#ifdef REDTEAM_PROBE_PATH
  return REDTEAM_PROBE_PATH;
#else
  return "redteam_probe";
#endif
}

long StatusValue(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::atol(line.c_str() + key.size() + 1);
  }
  return 0;
}

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

}  // namespace

std::vector<std::string> RtProbeCopyFlags() {
  return {"--copy", RtProbePath() + ":" + kGuestRtProbe};
}

ProcessResult RunRtProbe(const std::vector<std::string>& args,
                         const std::vector<std::string>& flags, double timeout_sec) {
  std::vector<std::string> all = RtProbeCopyFlags();
  all.insert(all.end(), flags.begin(), flags.end());
  std::vector<std::string> cmd = {kGuestRtProbe};
  cmd.insert(cmd.end(), args.begin(), args.end());
  return sentry::testing::RunSentry(all, cmd, "", timeout_sec);
}

std::vector<std::string> SentryArgv(const std::vector<std::string>& flags,
                                    const std::vector<std::string>& cmd) {
  return sentry::testing::SentryRunArgv(flags, cmd);
}

Background::Background(const std::vector<std::string>& argv, const std::string& cwd) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) return;
  pid_ = fork();
  if (pid_ == 0) {
    int null = open("/dev/null", O_RDONLY);
    dup2(null, 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    if (!cwd.empty() && chdir(cwd.c_str()) < 0) _exit(126);
    std::vector<char*> a;
    for (const std::string& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    execv(a[0], a.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  out_ = out[0];
  err_ = err[0];
}

Background::~Background() {
  if (pid_ > 0 && !waited_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (out_ >= 0) close(out_);
  if (err_ >= 0) close(err_);
}

ProcessResult Background::Wait(double timeout_sec) {
  ProcessResult r;
  if (pid_ <= 0 || waited_) return r;
  double deadline = Now() + timeout_sec;
  bool out_open = true, err_open = true;
  char buf[65536];
  while (out_open || err_open) {
    double left = deadline - Now();
    if (left <= 0) {
      r.timed_out = true;
      kill(pid_, SIGKILL);
      break;
    }
    pollfd p[2] = {{out_open ? out_ : -1, POLLIN, 0}, {err_open ? err_ : -1, POLLIN, 0}};
    if (poll(p, 2, static_cast<int>(left * 1000) + 1) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (!p[i].revents) continue;
      ssize_t n = read(p[i].fd, buf, sizeof(buf));
      if (n <= 0) {
        (i == 0 ? out_open : err_open) = false;
      } else {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  int status = 0;
  waitpid(pid_, &status, 0);
  waited_ = true;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

long RssKb(pid_t pid) { return StatusValue(pid, "VmRSS"); }
long ThreadCount(pid_t pid) { return StatusValue(pid, "Threads"); }

long FdCount(pid_t pid) {
  DIR* d = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (!d) return 0;
  long n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n;
}

double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string all;
  if (!std::getline(in, all)) return 0;
  size_t paren = all.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream rest(all.substr(paren + 2));
  std::string field;
  long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {  // fields 14 and 15 of proc(5)
    if (i == 14) utime = std::atol(field.c_str());
    if (i == 15) stime = std::atol(field.c_str());
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

bool Alive(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string all;
  if (!std::getline(in, all)) return false;
  size_t paren = all.rfind(')');
  return paren != std::string::npos && paren + 2 < all.size() && all[paren + 2] != 'Z';
}

Sampler::Sampler(pid_t pid) : pid_(pid) {
  thread_ = std::thread([this] {
    while (!stop_.load()) {
      long rss = RssKb(pid_), threads = ThreadCount(pid_), fds = FdCount(pid_);
      if (threads > 0) {
        peaks_.rss_kb = std::max(peaks_.rss_kb, rss);
        peaks_.threads = std::max(peaks_.threads, threads);
        peaks_.fds = std::max(peaks_.fds, fds);
        peaks_.cpu_sec = std::max(peaks_.cpu_sec, CpuSeconds(pid_));
        ++peaks_.samples;
      }
      usleep(20 * 1000);
    }
  });
}

Sampler::~Sampler() { Stop(); }

Peaks Sampler::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  return peaks_;
}

}  // namespace sentry::security
