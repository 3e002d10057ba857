#include "tests/limits/limits_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "tests/util/subprocess.h"

namespace sentry::limits {

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

std::string ReadFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string data;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) data.append(buf, n);
  close(fd);
  return data;
}

std::string Clip(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  return s.substr(0, n / 2) + "\n[...]\n" + s.substr(s.size() - n / 2);
}

Child Spawn(const std::vector<std::string>& argv, const SpawnOptions& options) {
  int in[2] = {-1, -1}, out[2], err[2];
  if (options.stdin_pipe && pipe2(in, O_CLOEXEC) < 0) std::abort();
  if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) std::abort();
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  Child c;
  c.started = Now();
  c.pid = fork();
  if (c.pid < 0) std::abort();
  if (c.pid == 0) {
    setpgid(0, 0);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    int devnull = open("/dev/null", O_RDONLY);
    dup2(options.stdin_pipe ? in[0] : devnull, 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    for (const std::string& kv : options.extra_env) putenv(const_cast<char*>(kv.c_str()));
    if (!options.cwd.empty() && chdir(options.cwd.c_str()) < 0) _exit(127);
    execv(args[0], args.data());
    _exit(127);
  }
  if (options.stdin_pipe) {
    close(in[0]);
    c.in = in[1];
  }
  close(out[1]);
  close(err[1]);
  c.out = out[0];
  c.err = err[0];
  return c;
}

Child SpawnSentry(const std::vector<std::string>& flags, const std::vector<std::string>& cmd,
                  const SpawnOptions& options) {
  return Spawn(sentry::testing::SentryRunArgv(flags, cmd), options);
}

Finished Collect(Child& c, double timeout_sec) {
  Finished f;
  double deadline = c.started + timeout_sec;
  bool out_open = c.out >= 0, err_open = c.err >= 0;
  while (out_open || err_open) {
    pollfd p[2] = {{out_open ? c.out : -1, POLLIN, 0}, {err_open ? c.err : -1, POLLIN, 0}};
    int left_ms = static_cast<int>((deadline - Now()) * 1000);
    if (left_ms <= 0) {
      f.deadline = true;
      kill(-c.pid, SIGKILL);
      kill(c.pid, SIGKILL);
      break;
    }
    if (poll(p, 2, left_ms) < 0 && errno != EINTR) break;
    char buf[65536];
    for (int i = 0; i < 2; ++i) {
      if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = read(p[i].fd, buf, sizeof(buf));
      if (n > 0) {
        (i == 0 ? f.out : f.err).append(buf, n);
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        (i == 0 ? out_open : err_open) = false;
      }
    }
  }
  for (int* fd : {&c.in, &c.out, &c.err}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
  int status = 0;
  rusage ru{};
  while (wait4(c.pid, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  f.wall = Now() - c.started;
  f.maxrss_kb = ru.ru_maxrss;
  f.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return f;
}

std::string ReadUntil(int fd, const std::string& needle, double timeout_sec) {
  std::string got;
  double deadline = Now() + timeout_sec;
  while (got.find(needle) == std::string::npos) {
    int left_ms = static_cast<int>((deadline - Now()) * 1000);
    if (left_ms <= 0) break;
    pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, left_ms) <= 0) continue;
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    got.append(buf, n);
  }
  return got;
}

std::optional<nlohmann::json> ResultOf(const std::string& out) {
  std::vector<std::string> lines;
  std::stringstream ss(out);
  std::string line;
  while (std::getline(ss, line)) lines.push_back(line);
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    if (it->empty() || (*it)[0] != '{') continue;
    std::optional<nlohmann::json> v = ParseJson(*it);
    if (v && v->is_object()) return v;
  }
  return std::nullopt;
}

Finished RunSentryFull(const std::vector<std::string>& flags, const std::vector<std::string>& cmd,
                       double timeout_sec, const SpawnOptions& options) {
  Child c = SpawnSentry(flags, cmd, options);
  return Collect(c, timeout_sec);
}

std::string UniqueMarker(const std::string& tag) {
  static std::atomic<int> counter{0};
  static const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed + counter.load());
  char buf[96];
  snprintf(buf, sizeof(buf), "%s-%d-%d-%08x", tag.c_str(), getpid(), counter++,
           static_cast<unsigned>(rng()));
  return buf;
}

namespace {

std::vector<pid_t> AllPids() {
  std::vector<pid_t> pids;
  DIR* d = opendir("/proc");
  if (!d) return pids;
  while (dirent* e = readdir(d)) {
    char* end;
    long v = strtol(e->d_name, &end, 10);
    if (*end == '\0' && v > 0) pids.push_back(static_cast<pid_t>(v));
  }
  closedir(d);
  return pids;
}

bool Alive(pid_t pid) {
  // A zombie has exited; it only waits for its parent.
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty()) return false;
  size_t close_paren = stat.rfind(')');
  return close_paren == std::string::npos || close_paren + 2 >= stat.size() ||
         stat[close_paren + 2] != 'Z';
}

}  // namespace

std::vector<pid_t> MarkedProcesses(const std::string& marker) {
  std::vector<pid_t> found;
  for (pid_t pid : AllPids()) {
    if (pid == getpid()) continue;
    std::string base = "/proc/" + std::to_string(pid);
    if (ReadFile(base + "/cmdline").find(marker) == std::string::npos &&
        ReadFile(base + "/environ").find(marker) == std::string::npos) {
      continue;
    }
    if (Alive(pid)) found.push_back(pid);
  }
  return found;
}

std::vector<pid_t> LeftoverProcesses(const std::string& marker, double grace_sec) {
  double deadline = Now() + grace_sec;
  std::vector<pid_t> left;
  while (true) {
    left = MarkedProcesses(marker);
    if (left.empty() || Now() > deadline) break;
    usleep(50 * 1000);
  }
  for (pid_t pid : left) kill(pid, SIGKILL);
  return left;
}

std::string DescribeProcesses(const std::vector<pid_t>& pids) {
  std::string out;
  for (pid_t pid : pids) {
    std::string base = "/proc/" + std::to_string(pid);
    std::string cmd = ReadFile(base + "/cmdline");
    for (char& ch : cmd) {
      if (ch == '\0') ch = ' ';
    }
    std::string uid;
    std::stringstream status(ReadFile(base + "/status"));
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("Uid:", 0) == 0) uid = line.substr(4);
    }
    out += std::to_string(pid) + " uid" + uid + " " + Clip(cmd, 200) + "\n";
  }
  return out;
}

bool WaitForMarked(const std::string& marker, size_t at_least, double wait_sec) {
  double deadline = Now() + wait_sec;
  while (Now() < deadline) {
    if (MarkedProcesses(marker).size() >= at_least) return true;
    usleep(20 * 1000);
  }
  return false;
}

std::vector<std::string> SentryCgroupDirs(pid_t sentry_pid) {
  // Our own cgroup per v1 controller: "N:controllers:/path".
  std::string mine = ReadFile("/proc/self/cgroup");
  std::vector<std::string> found;
  for (const char* controller : {"memory", "pids", "cpu", "cpuacct"}) {
    std::string own;
    std::stringstream ss(mine);
    std::string line;
    while (std::getline(ss, line)) {
      size_t a = line.find(':');
      size_t b = line.find(':', a + 1);
      if (a == std::string::npos || b == std::string::npos) continue;
      std::string list = "," + line.substr(a + 1, b - a - 1) + ",";
      if (list.find("," + std::string(controller) + ",") != std::string::npos) {
        own = line.substr(b + 1);
        if (own == "/") own = "";
      }
    }
    std::string name = "sentry-" + std::to_string(sentry_pid);
    std::string base = std::string("/sys/fs/cgroup/") + controller;
    for (const std::string& dir : {base + own + "/" + name, base + "/" + name}) {
      struct stat st;
      if (stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
        bool dup = false;
        for (const std::string& f : found) dup = dup || f == dir;
        if (!dup) found.push_back(dir);
      }
    }
  }
  return found;
}

void RemoveCgroupDirs(const std::vector<std::string>& dirs) {
  for (const std::string& d : dirs) rmdir(d.c_str());
}

std::set<std::string> MountLines() {
  std::set<std::string> lines;
  std::stringstream ss(ReadFile("/proc/self/mountinfo"));
  std::string line;
  while (std::getline(ss, line)) {
    size_t a = line.find(' ');
    size_t b = a == std::string::npos ? a : line.find(' ', a + 1);
    lines.insert(b == std::string::npos ? line : line.substr(b + 1));
  }
  return lines;
}

std::string Sha256OfFile(const std::string& path) {
  sentry::testing::ProcessResult r = sentry::testing::RunProcess(
      {"/usr/bin/python3", "-c",
       "import hashlib,sys;print(hashlib.sha256(open(sys.argv[1],'rb').read()).hexdigest())",
       path});
  if (r.exit_code != 0) return "";
  std::string h = r.out;
  while (!h.empty() && (h.back() == '\n' || h.back() == ' ')) h.pop_back();
  return h;
}

SentryRssSampler::SentryRssSampler(pid_t pid, int period_ms) : pid_(pid), period_ms_(period_ms) {
  thread_ = std::thread([this] {
    while (!stop_) {
      Sample();
      std::this_thread::sleep_for(std::chrono::milliseconds(period_ms_));
    }
  });
}

SentryRssSampler::~SentryRssSampler() { Stop(); }

void SentryRssSampler::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void SentryRssSampler::Sample() {
  std::string status = ReadFile("/proc/" + std::to_string(pid_) + "/status");
  if (status.empty()) return;
  auto field = [&](const char* name) -> long {
    size_t at = status.find(name);
    if (at == std::string::npos) return 0;
    return std::strtol(status.c_str() + at + strlen(name), nullptr, 10);
  };
  long rss = std::max(field("VmRSS:"), field("VmHWM:"));
  long threads = field("Threads:");
  if (rss > peak_rss_kb_) peak_rss_kb_ = rss;
  if (threads > peak_threads_) peak_threads_ = threads;
  ++samples_;
}

}  // namespace sentry::limits
