#include "tests/oci/oci_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
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

bool EnginesRequired() {
  const char* v = getenv("SENTRY_REQUIRE_ENGINES");
  return v && std::string(v) == "1";
}

std::string FirstExecutable(const std::vector<std::string>& paths) {
  for (const std::string& p : paths) {
    struct stat st;
    if (stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

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
  return SpawnToFiles(argv, out_path, err_path, {});
}

int SpawnToFiles(const std::vector<std::string>& argv, const std::string& out_path,
                 const std::string& err_path, const std::vector<int>& extra_fds) {
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
    if (!extra_fds.empty()) {
      int top = 3 + static_cast<int>(extra_fds.size());
      std::vector<int> high;
      for (int fd : extra_fds) high.push_back(fcntl(fd, F_DUPFD_CLOEXEC, top + 64));
      for (size_t i = 0; i < high.size(); ++i) dup2(high[i], 3 + static_cast<int>(i));
      syscall(SYS_close_range, top, ~0U, 0);
    }
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

std::vector<std::string> CgroupsNamed(const std::string& name) {
  std::vector<std::string> found;
  std::istringstream lines(ReadFile("/proc/self/cgroup"));
  for (std::string line; std::getline(lines, line);) {
    size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string path = line.substr(b + 1) == "/" ? "" : line.substr(b + 1);
    std::istringstream controllers(line.substr(a + 1, b - a - 1));
    for (std::string c; std::getline(controllers, c, ',');) {
      if (c.empty() || c.find('=') != std::string::npos) continue;  // v2's line, name=systemd
      std::string dir = "/sys/fs/cgroup/" + c + path + "/" + name;
      if (access(dir.c_str(), F_OK) == 0) found.push_back(dir);
    }
  }
  return found;
}

namespace {

// A listening TCP socket on 127.0.0.1:port (0: any) in the namespace of
// netns_fd (-1: this thread's), or -1.
int ListenOn(int netns_fd, int port) {
  int fd = -1;
  std::thread([&] {
    if (netns_fd >= 0 && setns(netns_fd, CLONE_NEWNET) < 0) return;
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    if (fd >= 0 &&
        (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) < 0 || listen(fd, 16) < 0)) {
      close(fd);
      fd = -1;
    }
  }).join();
  return fd;
}

int PortOf(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

}  // namespace

EngineNetns::EngineNetns() {
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) < 0) return;
  holder_ = fork();
  if (holder_ == 0) {
    // The namespace's holder, as the pause process of a pod.
    if (unshare(CLONE_NEWNET) < 0) _exit(1);
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
    ifr.ifr_flags = IFF_UP | IFF_RUNNING;
    if (s < 0 || ioctl(s, SIOCSIFFLAGS, &ifr) < 0) _exit(1);
    (void)!write(ready[1], "r", 1);
    for (;;) pause();
  }
  close(ready[1]);
  char c;
  bool up = holder_ > 0 && read(ready[0], &c, 1) == 1;
  close(ready[0]);
  if (!up) return;
  path_ = "/proc/" + std::to_string(holder_) + "/ns/net";
  int ns = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (ns < 0) return;
  // The same port in both namespaces: a few tries, in case the host's is taken.
  for (int i = 0; i < 20 && port_ == 0; ++i) {
    engine_.fd = ListenOn(ns, 0);
    if (engine_.fd < 0) break;
    host_.fd = ListenOn(-1, PortOf(engine_.fd));
    if (host_.fd >= 0) {
      port_ = PortOf(engine_.fd);
    } else {
      close(engine_.fd);
      engine_.fd = -1;
    }
  }
  close(ns);
  if (port_ == 0) return;
  engine_.thread = std::thread(Serve, &engine_, "engine\n");
  host_.thread = std::thread(Serve, &host_, "host\n");
}

void EngineNetns::Serve(Listener* l, const char* tag) {
  for (;;) {
    int c = accept4(l->fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) return;  // shut down
    ++l->count;
    (void)!send(c, tag, std::strlen(tag), MSG_NOSIGNAL);
    close(c);
  }
}

EngineNetns::~EngineNetns() {
  for (Listener* l : {&engine_, &host_}) {
    if (l->fd >= 0) shutdown(l->fd, SHUT_RDWR);
    if (l->thread.joinable()) l->thread.join();
    if (l->fd >= 0) close(l->fd);
  }
  if (holder_ > 0) {
    kill(holder_, SIGKILL);
    waitpid(holder_, nullptr, 0);
  }
}

int ReceiveOneFd(int ls, std::string* name, int timeout_ms) {
  pollfd ready{ls, POLLIN, 0};
  if (poll(&ready, 1, timeout_ms) != 1) return -1;  // a runtime that sends nothing
  int c = accept(ls, nullptr, nullptr);
  if (c < 0) return -1;
  char text[256] = {};
  iovec iov{text, sizeof(text) - 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  int fd = -1;
  if (recvmsg(c, &msg, 0) > 0 && CMSG_FIRSTHDR(&msg)) {
    memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&msg)), sizeof(int));
    if (name) *name = text;
  }
  close(c);
  return fd;
}

}  // namespace sentry::testing
