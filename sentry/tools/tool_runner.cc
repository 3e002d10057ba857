#include "sentry/tools/tool_runner.h"

#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "sentry/base/unique_fd.h"

namespace sentry::tools {
namespace {

using Json = nlohmann::json;

struct Pipe {
  UniqueFd read, write;
  bool Make() {
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) return false;
    read = UniqueFd(p[0]);
    write = UniqueFd(p[1]);
    return true;
  }
};

int RemoveOne(const char* path, const struct stat*, int, struct FTW*) {
  remove(path);
  return 0;
}

std::string Clip(std::string s, size_t max) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  if (s.size() > max) s = absl::StrCat(s.substr(0, max), "...");
  return s;
}

// The pids of this (one-threaded) process's children, from
// /proc/self/task/PID/children; async-signal-safe (no allocation).
int ReadChildren(pid_t* pids, int max) {
  char path[64] = "/proc/self/task/";
  char digits[16];
  int n = 0;
  for (pid_t self = getpid(); self > 0; self /= 10)
    digits[n++] = static_cast<char>('0' + self % 10);
  size_t at = strlen(path);
  while (n > 0) path[at++] = digits[--n];
  memcpy(path + at, "/children", sizeof("/children"));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[4096];
  ssize_t got = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  int count = 0;
  pid_t pid = 0;
  for (ssize_t i = 0; i < got && count < max; ++i) {
    if (buf[i] >= '0' && buf[i] <= '9') {
      pid = pid * 10 + (buf[i] - '0');
    } else if (pid > 0) {
      pids[count++] = pid;
      pid = 0;
    }
  }
  return count;
}

// Kills every descendant: as a subreaper this process inherits each
// orphan (setsid, double forks included), so killing its children until it
// has none leaves nothing of the tool.
void KillDescendants() {
  for (int round = 0; round < 10000; ++round) {
    pid_t pids[512];
    int n = ReadChildren(pids, 512);
    for (int i = 0; i < n; ++i) kill(pids[i], SIGKILL);
    pid_t r;
    while ((r = waitpid(-1, nullptr, WNOHANG)) > 0) {
    }
    if (r < 0 && errno == ECHILD) return;
    if (n == 0) {
      timespec ms{0, 1000 * 1000};
      nanosleep(&ms, nullptr);
    }
  }
}

// Between fork and exec only async-signal-safe calls. The tool is a child
// of this one-purpose process, not of the sentry: the sentry's supervisor
// reaps every child it has (waitpid(-1)), and would take the tool's status.
// This process is a subreaper: whatever the tool starts, however detached,
// stays below it. It waits for the tool (or a SIGTERM: the call's timeout or
// cancel, or the sentry's death), writes the status, kills every
// descendant, and exits.
[[noreturn]] void Intermediate(const char* program, char* const* argv, char* const* envp,
                               const char* cwd, int in, int out, int err, int status) {
  setpgid(0, 0);
  sigset_t none, waited;
  sigemptyset(&none);
  sigemptyset(&waited);
  sigaddset(&waited, SIGTERM);
  sigaddset(&waited, SIGCHLD);
  for (int s = 1; s < NSIG; ++s) signal(s, SIG_DFL);
  sigprocmask(SIG_SETMASK, &waited, nullptr);
  int sig = signalfd(-1, &waited, SFD_CLOEXEC);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  // Not the CPU the sentry pinned its run to: every CPU this cpuset allows.
  cpu_set_t every;
  memset(&every, 0xff, sizeof(every));
  sched_setaffinity(0, sizeof(every), &every);
  pid_t tool = sig < 0 ? -1 : fork();
  if (tool == 0) {
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) _exit(127);
    syscall(SYS_close_range, 3, ~0U, 0);
    if (chdir(cwd) != 0) _exit(127);
    execve(program, argv, envp);
    const char msg[] = "cannot execute the tool's command\n";
    (void)!write(2, msg, sizeof(msg) - 1);
    _exit(127);
  }
  if (dup2(status, 3) < 0 || (sig >= 0 && dup2(sig, 4) < 0)) _exit(1);
  syscall(SYS_close_range, 5, ~0U, 0);
  int st = 127 << 8;
  bool have = false;
  while (tool > 0 && !have) {
    signalfd_siginfo si;
    ssize_t n = read(4, &si, sizeof(si));
    if (n < 0 && errno == EINTR) continue;
    if (n != sizeof(si) || si.ssi_signo == SIGTERM) break;
    int wst;
    for (pid_t r; (r = waitpid(-1, &wst, WNOHANG)) > 0;) {
      if (r == tool) {
        st = wst;
        have = true;
      }
    }
  }
  if (have || tool <= 0) (void)!write(3, &st, sizeof(st));
  KillDescendants();
  _exit(0);
}

}  // namespace

double NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

ToolOutcome RunHostTool(const HostTool& tool, const std::string& args_json, int timeout_ms,
                        int cancel_fd) {
  ToolOutcome r;
  char dir_template[] = "/tmp/sentry-tool-XXXXXX";
  if (!mkdtemp(dir_template)) {
    r.error = absl::StrCat("cannot make the tool's directory: ", std::strerror(errno));
    return r;
  }
  std::string dir = dir_template;
  Pipe in, out, err, status;
  if (!in.Make() || !out.Make() || !err.Make() || !status.Make()) {
    nftw(dir.c_str(), RemoveOne, 16, FTW_DEPTH | FTW_PHYS);
    r.error = "cannot make the tool's pipes";
    return r;
  }
  std::vector<char*> argv;
  for (const std::string& a : tool.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::string path_env = "PATH=/usr/local/bin:/usr/bin:/bin";
  std::string lang_env = "LANG=C.UTF-8";
  std::string home_env = "HOME=" + dir;
  char* envp[] = {path_env.data(), lang_env.data(), home_env.data(), nullptr};

  pid_t pid = fork();
  if (pid == 0) {
    Intermediate(tool.argv[0].c_str(), argv.data(), envp, dir.c_str(), in.read.get(),
                 out.write.get(), err.write.get(), status.write.get());
  }
  if (pid < 0) {
    nftw(dir.c_str(), RemoveOne, 16, FTW_DEPTH | FTW_PHYS);
    r.error = absl::StrCat("cannot start the tool: ", std::strerror(errno));
    return r;
  }
  // Waited for through a pidfd: the sentry's supervisor may reap it first,
  // and a bare pid could by then name another process.
  UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  in.read.Reset();
  out.write.Reset();
  err.write.Reset();
  status.write.Reset();
  fcntl(in.write.get(), F_SETFL, O_NONBLOCK);

  std::string stdout_text, stderr_text;
  int wait_status = 0;
  bool have_status = false, out_open = true, err_open = true, status_open = true;
  bool too_large = false, timed_out = false, cancelled = false;
  size_t written = 0;
  double deadline = NowMs() + timeout_ms;
  while (out_open || err_open || status_open) {
    pollfd p[5];
    int n = 0;
    int i_out = -1, i_err = -1, i_status = -1, i_in = -1, i_cancel = -1;
    if (out_open) p[i_out = n++] = {out.read.get(), POLLIN, 0};
    if (err_open) p[i_err = n++] = {err.read.get(), POLLIN, 0};
    if (status_open) p[i_status = n++] = {status.read.get(), POLLIN, 0};
    if (in.write) p[i_in = n++] = {in.write.get(), POLLOUT, 0};
    if (cancel_fd >= 0) p[i_cancel = n++] = {cancel_fd, POLLIN, 0};
    int left = static_cast<int>(deadline - NowMs());
    if (left <= 0) {
      timed_out = true;
      break;
    }
    if (poll(p, n, left) < 0 && errno != EINTR) break;
    if (i_cancel >= 0 && p[i_cancel].revents) {
      cancelled = true;
      break;
    }
    char buf[16384];
    if (i_out >= 0 && p[i_out].revents) {
      ssize_t got = read(out.read.get(), buf, sizeof(buf));
      if (got <= 0) {
        out_open = false;
      } else {
        stdout_text.append(buf, got);
        if (stdout_text.size() > kMaxResultBytes) {
          too_large = true;
          break;
        }
      }
    }
    if (i_err >= 0 && p[i_err].revents) {
      ssize_t got = read(err.read.get(), buf, sizeof(buf));
      if (got <= 0) {
        err_open = false;
      } else if (stderr_text.size() < kMaxStderrBytes + 1) {
        stderr_text.append(buf, std::min<size_t>(got, kMaxStderrBytes + 1 - stderr_text.size()));
      }
    }
    if (i_status >= 0 && p[i_status].revents) {
      ssize_t got = read(status.read.get(), &wait_status, sizeof(wait_status));
      have_status = got == sizeof(wait_status);
      status_open = false;
    }
    if (i_in >= 0 && p[i_in].revents) {
      ssize_t put = p[i_in].revents & POLLOUT ? write(in.write.get(), args_json.data() + written,
                                                      args_json.size() - written)
                                              : -1;
      if (put > 0) written += put;
      // A tool that reads not all of its kwargs (or closed stdin) still runs.
      if (put < 0 || written == args_json.size()) in.write.Reset();
    }
  }
  // The intermediate kills every descendant of the tool and exits; should it
  // not within a second, its process group is killed (the tool's, at least).
  if (timed_out || too_large || cancelled) kill(pid, SIGTERM);
  if (pidfd) {
    pollfd p{pidfd.get(), POLLIN, 0};
    if (poll(&p, 1, 1000) == 0) kill(-pid, SIGKILL);
    siginfo_t info;
    waitid(static_cast<idtype_t>(3 /* P_PIDFD */), pidfd.get(), &info, WEXITED);
  }
  nftw(dir.c_str(), RemoveOne, 16, FTW_DEPTH | FTW_PHYS);

  std::string tail =
      stderr_text.empty() ? "" : absl::StrCat(": ", Clip(stderr_text, kMaxStderrBytes));
  if (cancelled) {
    r.error = absl::StrCat("tool ", tool.name, " was killed: the run ended");
  } else if (timed_out) {
    r.error =
        absl::StrCat("tool ", tool.name, " timed out after ", timeout_ms / 1000.0, " s", tail);
  } else if (too_large) {
    r.error =
        absl::StrCat("tool ", tool.name, " wrote more than ", kMaxResultBytes, " bytes on stdout");
  } else if (!have_status) {
    r.error = absl::StrCat("tool ", tool.name, " ended without a status", tail);
  } else if (WIFSIGNALED(wait_status)) {
    r.error =
        absl::StrCat("tool ", tool.name, " was killed by signal ", WTERMSIG(wait_status), tail);
  } else if (WEXITSTATUS(wait_status) != 0) {
    r.error =
        absl::StrCat("tool ", tool.name, " exited with code ", WEXITSTATUS(wait_status), tail);
  } else if (!JsonDepthAtMost(stdout_text, kMaxJsonDepth)) {
    r.error = absl::StrCat("tool ", tool.name, " wrote JSON nested deeper than ", kMaxJsonDepth);
  } else {
    Json value = Json::parse(stdout_text, nullptr, false);
    if (value.is_discarded()) {
      r.error = absl::StrCat("tool ", tool.name, " wrote no single JSON value on stdout: \"",
                             Clip(stdout_text, 200), "\"");
    } else {
      r.ok = true;
      r.value = std::move(value);
    }
  }
  return r;
}

}  // namespace sentry::tools
