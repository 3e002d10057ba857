#include "tests/security/security_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <sstream>

namespace sentry::security {
namespace {

constexpr const char* kPyPrelude = R"PY(
import os, sys, errno
def t(name, f):
    try:
        r = f()
        line = f"{name}=OK {r!r}"
    except OSError as e:
        line = f"{name}={errno.errorcode.get(e.errno, e.errno)}"
    except Exception as e:
        line = f"{name}=EXC {type(e).__name__}: {e}"
    print(line.replace("\n", "\\n")[:4000], flush=True)
# Runs f in another process (a fork) and waits: what f writes is that one's.
def elsewhere(f):
    pid = os.fork()
    if pid == 0:
        try: f()
        finally: os._exit(0)
    os.waitpid(pid, 0)
)PY";

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

std::string ReadAvailable(int fd) {
  std::string out;
  int fl = fcntl(fd, F_GETFL);
  fcntl(fd, F_SETFL, fl | O_NONBLOCK);
  char buf[4096];
  while (true) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    out.append(buf, n);
  }
  fcntl(fd, F_SETFL, fl);
  return out;
}

}  // namespace

bool SeccompOnly() {
  const char* flags = getenv("SENTRY_RUN_FLAGS");
  return flags && std::string(flags) == "--no-namespaces";
}

std::string ProbePath() {
  if (const char* env = getenv("SENTRY_ESCAPE_PROBE")) return env;
#ifdef ESCAPE_PROBE_PATH
  return ESCAPE_PROBE_PATH;
#else
  return "escape_probe";
#endif
}

ProcessResult RunProbe(const std::vector<std::string>& args, const std::vector<std::string>& flags,
                       double timeout_sec) {
  std::vector<std::string> all = {"--copy", ProbePath() + ":" + kGuestProbe};
  all.insert(all.end(), flags.begin(), flags.end());
  std::vector<std::string> cmd = {kGuestProbe};
  cmd.insert(cmd.end(), args.begin(), args.end());
  return sentry::testing::RunSentry(all, cmd, "", timeout_sec);
}

ProcessResult RunPy(const std::string& body, const std::vector<std::string>& flags,
                    double timeout_sec) {
  return sentry::testing::RunSentry(flags, {"/usr/bin/python3", "-c", kPyPrelude + body}, "",
                                    timeout_sec);
}

Results ParseResults(const std::string& out) {
  Results r;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    size_t eq = line.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    r[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return r;
}

std::string Code(const Results& r, const std::string& name) {
  auto it = r.find(name);
  if (it == r.end()) return "<missing>";
  return it->second.substr(0, it->second.find(' '));
}

std::string Value(const Results& r, const std::string& name) {
  auto it = r.find(name);
  if (it == r.end()) return "";
  size_t sp = it->second.find(' ');
  return sp == std::string::npos ? "" : it->second.substr(sp + 1);
}

std::string PyQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\\' || c == '\'') out += '\\';
    out += c;
  }
  return out + "'";
}

std::string Describe(const ProcessResult& r) {
  auto clip = [](const std::string& s) {
    return s.size() > 6000 ? s.substr(0, 6000) + "...[clipped]" : s;
  };
  return "exit=" + std::to_string(r.exit_code) + (r.timed_out ? " (timed out)" : "") +
         "\n--- stdout ---\n" + clip(r.out) + "\n--- stderr ---\n" + clip(r.err);
}

int Trapped(const std::string& census, const std::string& name) {
  ProcessResult count = testing::RunProcess(
      {"/usr/bin/python3", "-c",
       "import json,sys; d=json.load(open(sys.argv[1])); "
       "print(sum(x['trapped'] for x in d['syscalls'] if x['name']==sys.argv[2]))",
       census, name});
  EXPECT_EQ(count.exit_code, 0) << Describe(count);
  return count.exit_code == 0 ? std::stoi(count.out) : -1;
}

TempDir::TempDir(const std::string& prefix) {
  std::string tmpl = prefix + "XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) {
    std::perror(("mkdtemp " + tmpl).c_str());
    std::abort();
  }
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

Canary::Canary(const std::string& parent) : dir_(parent + "/sec-canary-") {
  secret_ = "CANARY-" + RandomToken();
  file_ = dir_.path() + "/canary.txt";
  WriteFileOrDie(file_, secret_ + "\n", 0644);
  snapshot_ = TreeState(dir_.path(), 4, true);
}

std::string Canary::Changes() const {
  std::string now = TreeState(dir_.path(), 4, true);
  if (now == snapshot_) return "";
  return "canary directory changed.\nbefore:\n" + snapshot_ + "after:\n" + now;
}

std::string HostOnlyCwd() {
  char buf[4096];
  std::string cwd = getcwd(buf, sizeof(buf)) ? buf : "/";
  std::string top = cwd.substr(1, cwd.find('/', 1) - 1);
  static const std::set<std::string> kSandboxTop = {"",    "bin",   "dev",   "etc",  "home",
                                                    "lib", "lib32", "lib64", "proc", "root",
                                                    "run", "sbin",  "tmp",   "usr",  "var"};
  return kSandboxTop.count(top) ? "/work" : cwd;
}

std::string RandomToken(size_t len) {
  static const char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::random_device rd;
  std::mt19937_64 gen(rd());
  std::uniform_int_distribution<size_t> pick(0, sizeof(kChars) - 2);
  std::string s;
  for (size_t i = 0; i < len; ++i) s += kChars[pick(gen)];
  return s;
}

std::optional<std::string> ReadFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[65536];
  while (true) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    out.append(buf, n);
  }
  close(fd);
  return out;
}

void WriteFileOrDie(const std::string& path, const std::string& data, mode_t mode) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0 || write(fd, data.data(), data.size()) != static_cast<ssize_t>(data.size())) {
    std::perror(("write " + path).c_str());
    std::abort();
  }
  fchmod(fd, mode);
  close(fd);
}

std::string FileState(const std::string& path, bool follow) {
  struct stat st;
  if ((follow ? stat(path.c_str(), &st) : lstat(path.c_str(), &st)) < 0) {
    return path + " absent(" + std::strerror(errno) + ")\n";
  }
  std::ostringstream o;
  o << path << " mode=" << std::oct << st.st_mode << std::dec << " uid=" << st.st_uid
    << " gid=" << st.st_gid << " size=" << st.st_size << " ino=" << st.st_ino
    << " nlink=" << st.st_nlink << " mtime=" << st.st_mtim.tv_sec << "." << st.st_mtim.tv_nsec
    << " ctime=" << st.st_ctim.tv_sec << "." << st.st_ctim.tv_nsec;
  if (S_ISLNK(st.st_mode)) {
    char buf[4096];
    ssize_t n = readlink(path.c_str(), buf, sizeof(buf));
    if (n >= 0) o << " -> " << std::string(buf, n);
  }
  if (S_ISREG(st.st_mode) && st.st_size <= (8 << 20)) {
    // FNV-1a of the content: byte-for-byte comparison without keeping the data.
    uint64_t h = 1469598103934665603ull;
    if (auto data = ReadFile(path)) {
      for (unsigned char c : *data) h = (h ^ c) * 1099511628211ull;
      o << " fnv=" << std::hex << h << std::dec;
    } else {
      o << " unreadable";
    }
  }
  o << "\n";
  return o.str();
}

std::string TreeState(const std::string& root, int max_depth, bool with_content) {
  std::string out = FileState(root);
  if (max_depth <= 0) return out;
  struct stat st;
  if (lstat(root.c_str(), &st) < 0 || !S_ISDIR(st.st_mode)) return out;
  for (const std::string& name : ListDir(root)) {
    std::string p = root + "/" + name;
    struct stat cst;
    if (lstat(p.c_str(), &cst) == 0 && S_ISDIR(cst.st_mode)) {
      out += TreeState(p, max_depth - 1, with_content);
    } else if (with_content) {
      out += FileState(p);
    } else {
      // Metadata only: cheap enough for /usr/bin.
      std::ostringstream o;
      o << p << " mode=" << std::oct << cst.st_mode << std::dec << " size=" << cst.st_size
        << " ino=" << cst.st_ino << " nlink=" << cst.st_nlink << " mtime=" << cst.st_mtim.tv_sec
        << "." << cst.st_mtim.tv_nsec << " ctime=" << cst.st_ctim.tv_sec << "."
        << cst.st_ctim.tv_nsec << "\n";
      out += o.str();
    }
  }
  return out;
}

std::set<std::string> ListDir(const std::string& path) {
  std::set<std::string> names;
  DIR* d = opendir(path.c_str());
  if (!d) return names;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.insert(n);
  }
  closedir(d);
  return names;
}

std::vector<pid_t> ProcessesWithCmdline(const std::string& marker, bool exact) {
  std::vector<pid_t> out;
  for (const std::string& name : ListDir("/proc")) {
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    auto cmd = ReadFile("/proc/" + name + "/cmdline");
    if (!cmd) continue;
    for (char& c : *cmd)
      if (c == '\0') c = ' ';
    while (!cmd->empty() && cmd->back() == ' ') cmd->pop_back();
    bool match = exact ? *cmd == marker : cmd->find(marker) != std::string::npos;
    if (match) out.push_back(std::stoi(name));
  }
  return out;
}

ProcessResult RunSentryWithStdin(const std::vector<std::string>& flags,
                                 const std::vector<std::string>& cmd, int stdin_fd, bool make_ctty,
                                 double timeout_sec) {
  ProcessResult result;
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) std::abort();
  std::vector<std::string> argv = {sentry::testing::SentryBinary(), "run"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back("--");
  argv.insert(argv.end(), cmd.begin(), cmd.end());
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    if (make_ctty) {
      setsid();
      ioctl(stdin_fd, TIOCSCTTY, 0);  // the sentry's (and so the guest's) terminal
    } else {
      setpgid(0, 0);
    }
    dup2(stdin_fd, 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  double deadline = Now() + timeout_sec;
  bool open_out = true, open_err = true;
  while (open_out || open_err) {
    int left = static_cast<int>((deadline - Now()) * 1000);
    if (left <= 0) {
      result.timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    pollfd p[2] = {{open_out ? out[0] : -1, POLLIN, 0}, {open_err ? err[0] : -1, POLLIN, 0}};
    poll(p, 2, left);
    char buf[4096];
    for (int i = 0; i < 2; ++i) {
      if (!(p[i].revents & (POLLIN | POLLHUP))) continue;
      ssize_t n = read(i == 0 ? out[0] : err[0], buf, sizeof(buf));
      if (n > 0) {
        (i == 0 ? result.out : result.err).append(buf, n);
      } else {
        (i == 0 ? open_out : open_err) = false;
      }
    }
  }
  close(out[0]);
  close(err[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

PtyRun RunSentryWithPty(const std::vector<std::string>& flags, const std::vector<std::string>& cmd,
                        double timeout_sec) {
  PtyRun run;
  int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0) std::abort();
  std::string slave_name = ptsname(master);
  int slave = open(slave_name.c_str(), O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (slave < 0) std::abort();
  // Non-canonical, so an injected byte is readable at once; echo on, so it would
  // also show on the master.
  termios tio;
  tcgetattr(slave, &tio);
  tio.c_lflag &= ~ICANON;
  tio.c_lflag |= ECHO;
  tio.c_cc[VMIN] = 0;
  tio.c_cc[VTIME] = 0;
  tcsetattr(slave, TCSANOW, &tio);

  // Control: the test itself (root on the host) can inject into this terminal,
  // so an injection by the guest would be seen.
  char z = 'Z';
  if (ioctl(slave, TIOCSTI, &z) == 0) run.control_input = ReadAvailable(slave);
  ReadAvailable(master);

  run.result = RunSentryWithStdin(flags, cmd, slave, /*make_ctty=*/true, timeout_sec);
  run.slave_input = ReadAvailable(slave);
  run.master_output = ReadAvailable(master);
  close(slave);
  close(master);
  return run;
}

}  // namespace sentry::security
