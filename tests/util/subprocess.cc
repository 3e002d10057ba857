#include "tests/util/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace sentry::testing {
namespace {

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

// A write whose EPIPE is an errno, not a SIGPIPE that kills the test
// (SIGPIPE blocked in this thread alone, and a pending one taken back: the
// children forked elsewhere keep the default).
ssize_t WriteNoSigpipe(int fd, const char* data, size_t size) {
  sigset_t pipe, old;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, &old);
  ssize_t n = write(fd, data, size);
  // A write the reader left halfway returns its count and raises SIGPIPE
  // too (fs/pipe.c): whatever n is, a pending one is taken.
  int saved = errno;
  timespec zero{};
  sigtimedwait(&pipe, nullptr, &zero);
  errno = saved;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return n;
}

}  // namespace

ProcessResult RunProcess(const std::vector<std::string>& argv, const std::string& input,
                         double timeout_sec) {
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) std::abort();
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    setpgid(0, 0);
    execv(args[0], args.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  ProcessResult r;
  size_t written = 0;
  if (input.empty()) {
    close(in[1]);
    in[1] = -1;
  }
  fcntl(out[0], F_SETFL, O_NONBLOCK);
  fcntl(err[0], F_SETFL, O_NONBLOCK);
  double deadline = Now() + timeout_sec;
  bool out_open = true, err_open = true;
  while (out_open || err_open) {
    pollfd p[3] = {{out_open ? out[0] : -1, POLLIN, 0},
                   {err_open ? err[0] : -1, POLLIN, 0},
                   {in[1], POLLOUT, 0}};
    int left_ms = static_cast<int>((deadline - Now()) * 1000);
    if (left_ms <= 0) {
      r.timed_out = true;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      break;
    }
    poll(p, 3, left_ms);
    char buf[65536];
    for (int i = 0; i < 2; ++i) {
      if (!(p[i].revents & (POLLIN | POLLHUP))) continue;
      ssize_t n = read(p[i].fd, buf, sizeof(buf));
      if (n > 0) {
        (i == 0 ? r.out : r.err).append(buf, n);
      } else if (n == 0 || errno != EAGAIN) {
        (i == 0 ? out_open : err_open) = false;
      }
    }
    if (in[1] >= 0 && (p[2].revents & (POLLOUT | POLLERR))) {
      ssize_t n = WriteNoSigpipe(in[1], input.data() + written, input.size() - written);
      if (n > 0) written += n;
      if (n < 0 || written == input.size()) {
        close(in[1]);
        in[1] = -1;
      }
    }
  }
  r.input_written = written;
  if (in[1] >= 0) close(in[1]);
  close(out[0]);
  close(err[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::string SentryBinary() {
  if (const char* env = getenv("SENTRY_BINARY")) return env;
#ifdef SENTRY_BINARY_PATH
  return SENTRY_BINARY_PATH;
#else
  return "sentry";
#endif
}

std::vector<std::string> SentryRunArgv(const std::vector<std::string>& flags,
                                       const std::vector<std::string>& cmd) {
  std::vector<std::string> argv = {SentryBinary(), "run"};
  // SENTRY_RUN_FLAGS (one flag, e.g. --no-namespaces): a whole suite run
  // again with it, in a sandbox of another kind.
  if (const char* extra = getenv("SENTRY_RUN_FLAGS"); extra && *extra) argv.push_back(extra);
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back("--");
  argv.insert(argv.end(), cmd.begin(), cmd.end());
  return argv;
}

ProcessResult RunSentry(const std::vector<std::string>& flags, const std::vector<std::string>& cmd,
                        const std::string& input, double timeout_sec) {
  return RunProcess(SentryRunArgv(flags, cmd), input, timeout_sec);
}

ProcessResult RunPython(const std::string& code, const std::vector<std::string>& flags) {
  return RunSentry(flags, {"/usr/bin/python3", "-c", code});
}

}  // namespace sentry::testing
