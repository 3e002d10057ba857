#include "sentry/agent/cold_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <thread>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "sentry/base/fd_passing.h"
#include "sentry/base/log.h"
#include "sentry/base/status_macros.h"
#include "sentry/net/net_policy.h"

namespace sentry::agent {
namespace {

using nlohmann::json;

constexpr size_t kMaxJobBytes = 256 << 20;
constexpr size_t kMaxResultBytes = 64 << 20;

// The fds of one job message, in order; a missing tee is sent as /dev/null's.
// kCancel: an eventfd that becomes readable when the caller cancels the run.
enum JobFd { kJob, kResult, kStdin, kStdoutTee, kStderrTee, kCancel, kJobFds };

// What a job sets on top of the server's options, as CBOR (file contents
// are bytes, not text).
std::vector<uint8_t> EncodeJob(const RunJob& job) {
  const RunOptions& o = job.options;
  json files = json::array();
  for (const InlineFile& f : o.inline_files) {
    files.push_back(
        {f.guest_path, json::binary(std::vector<uint8_t>(f.data.begin(), f.data.end())), f.mode});
  }
  json j = {{"argv", o.argv},
            {"env", o.env},
            {"files", files},
            {"ret", o.return_files},
            {"retMax", o.return_file_max},
            {"retTotal", o.return_total_max},
            {"merge", o.merge_stderr},
            {"timeout", o.timeout_sec},
            {"memory", o.memory_bytes},
            {"pids", o.pids},
            {"cpus", o.cpus},
            {"disk", o.disk_bytes},
            {"maxOut", o.max_output},
            {"nofile", o.nofile},
            {"allow", job.allow},
            {"none", job.network_none}};
  return json::to_cbor(j);
}

void DecodeJob(const json& j, RunOptions* o) {
  o->argv = j.at("argv").get<std::vector<std::string>>();
  o->env = j.at("env").get<std::vector<std::string>>();
  for (const json& f : j.at("files")) {
    const auto& bytes = f.at(1).get_binary();
    o->inline_files.push_back(InlineFile{f.at(0).get<std::string>(),
                                         std::string(bytes.begin(), bytes.end()),
                                         f.at(2).get<unsigned>()});
  }
  o->return_files = j.at("ret").get<std::vector<std::string>>();
  o->return_file_max = j.at("retMax").get<uint64_t>();
  o->return_total_max = j.at("retTotal").get<uint64_t>();
  o->merge_stderr = j.at("merge").get<bool>();
  o->timeout_sec = j.at("timeout").get<double>();
  o->memory_bytes = j.at("memory").get<uint64_t>();
  o->pids = j.at("pids").get<uint64_t>();
  o->cpus = j.at("cpus").get<double>();
  o->disk_bytes = j.at("disk").get<uint64_t>();
  o->max_output = j.at("maxOut").get<uint64_t>();
  o->nofile = j.at("nofile").get<uint64_t>();
  if (j.at("none").get<bool>()) {
    o->net.allow.clear();
    o->net.secrets.clear();
  }
  auto allow = j.at("allow").get<std::vector<std::string>>();
  if (!allow.empty()) {
    o->net.allow.clear();
    for (const std::string& a : allow) {
      net::AllowRule rule;
      std::string why;
      if (net::ParseAllowRule(a, &rule, &why)) o->net.allow.push_back(rule);
    }
  }
}

bool ReadAll(int fd, std::string* out, size_t max) {
  struct stat st;
  if (fstat(fd, &st) < 0 || static_cast<size_t>(st.st_size) > max) return false;
  out->resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < out->size()) {
    ssize_t n = pread(fd, out->data() + got, out->size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

bool WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// One run, in a child of the zygote: never returns.
// A cancel ends the run as SIGTERM ends `sentry run`: the guest is told and
// the sandbox killed; sent again until the process ends (the second kills
// at once). The thread has every signal blocked, so that SIGTERM reaches the
// supervisor's signalfd, never a default action.
void WatchCancel(UniqueFd cancel) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  std::thread([fd = cancel.Release()] {
    pollfd p{fd, POLLIN, 0};
    while (poll(&p, 1, -1) < 0 && errno == EINTR) {
    }
    while (true) {
      kill(getpid(), SIGTERM);
      usleep(100 * 1000);
    }
  }).detach();
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

[[noreturn]] void RunChild(const RunOptions& base, std::array<UniqueFd, kJobFds>& fds) {
  sigset_t term;  // until the supervisor takes it in its signalfd
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigprocmask(SIG_SETMASK, &term, nullptr);
  WatchCancel(std::move(fds[kCancel]));
  signal(SIGCHLD, SIG_DFL);
  if (dup2(fds[kStdin].get(), 0) < 0 || dup2(fds[kResult].get(), 1) < 0) _exit(125);
  std::string bytes;
  if (!ReadAll(fds[kJob].get(), &bytes, kMaxJobBytes)) _exit(125);
  RunOptions o = base;
  try {
    DecodeJob(json::from_cbor(bytes), &o);
  } catch (const json::exception& e) {
    log::Error(absl::StrCat("a malformed job reached the runner: ", e.what()));
    _exit(125);
  }
  bytes.clear();
  bytes.shrink_to_fit();
  // Whatever the server's own options: the result as JSON, stdin from the
  // job, nothing read from the host's files, no log (the server writes it).
  o.json = true;
  o.stdin_path = "-";
  o.copy_script = false;
  o.copies.clear();
  o.trace = o.timings = false;
  o.log_path.clear();
  auto tee = [&](JobFd i) {
    struct stat st;
    return fstat(fds[i].get(), &st) == 0 && S_ISFIFO(st.st_mode) ? fds[i].get() : -1;
  };
  o.stdout_tee_fd = tee(kStdoutTee);
  o.stderr_tee_fd = tee(kStderrTee);
  int code = RunSandbox(o);
  std::fflush(stdout);
  _exit(code);
}

// The zygote's loop: a child per message, until the server's end closes.
[[noreturn]] void Zygote(const RunOptions& base, int sock) {
  // Its parent's signals (a terminal's ^C, serve's SIGTERM) are not its
  // own: it ends when the server's socket does.
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  // The server's stdin and stdout may be its protocol (sentry mcp): not ours.
  int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  dup2(null_fd, 0);
  dup2(null_fd, 1);
  close(null_fd);
  while (true) {
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    pollfd p{sock, POLLIN, 0};
    if (poll(&p, 1, 500) == 0) continue;
    std::array<UniqueFd, kJobFds> fds;
    char tag = 0;
    Received r = ReceiveWithFds(sock, &tag, 1, fds);
    if (r.bytes == 0) _exit(0);
    if (r.bytes < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      _exit(0);
    }
    if (tag != 'r' || !fds[kJobFds - 1]) continue;  // not a whole job: dropped
    pid_t pid = fork();
    if (pid == 0) {
      close(sock);
      // Its own children's signals come back to its own signal handling,
      // not the zygote's ignored ones.
      signal(SIGINT, SIG_DFL);
      signal(SIGTERM, SIG_DFL);
      signal(SIGHUP, SIG_DFL);
      RunChild(base, fds);
    }
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<ColdRunner>> ColdRunner::Start(const RunOptions& base) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
    return ErrnoStatus("socketpair for the runner");
  }
  pid_t pid = fork();
  if (pid < 0) return ErrnoStatus("fork the runner");
  if (pid == 0) {
    close(sv[0]);
    Zygote(base, sv[1]);
  }
  close(sv[1]);
  return std::unique_ptr<ColdRunner>(new ColdRunner(UniqueFd(sv[0]), pid));
}

ColdRunner::~ColdRunner() {
  sock_.Reset();  // the zygote exits; runs in progress finish on their own
  waitpid(zygote_, nullptr, 0);
}

absl::StatusOr<RunOutcome> ColdRunner::Run(const RunJob& job, OutputSink* sink) {
  std::vector<uint8_t> bytes = EncodeJob(job);
  UniqueFd job_fd(memfd_create("sentry-job", MFD_CLOEXEC));
  if (!job_fd || !WriteAll(job_fd.get(), bytes.data(), bytes.size())) {
    return ErrnoStatus("write the job");
  }
  UniqueFd stdin_fd;
  if (job.stdin_data.empty()) {
    stdin_fd = UniqueFd(open("/dev/null", O_RDONLY | O_CLOEXEC));
  } else {
    stdin_fd = UniqueFd(memfd_create("sentry-stdin", MFD_CLOEXEC));
    if (stdin_fd && !WriteAll(stdin_fd.get(), job.stdin_data.data(), job.stdin_data.size())) {
      return ErrnoStatus("write the stdin");
    }
    lseek(stdin_fd.get(), 0, SEEK_SET);
  }
  UniqueFd null_fd(open("/dev/null", O_WRONLY | O_CLOEXEC));
  if (!stdin_fd || !null_fd) return ErrnoStatus("open /dev/null");
  UniqueFd never;  // a job that cannot be cancelled: an eventfd never written
  if (job.cancel_fd < 0) {
    never = UniqueFd(eventfd(0, EFD_CLOEXEC));
    if (!never) return ErrnoStatus("eventfd");
  }
  std::array<UniqueFd, 3> ours;  // result, stdout, stderr: read ends
  std::array<UniqueFd, 3> theirs;
  for (int i = 0; i < (sink ? 3 : 1); ++i) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) return ErrnoStatus("pipe");
    ours[i] = UniqueFd(p[0]);
    theirs[i] = UniqueFd(p[1]);
  }
  int fds[kJobFds] = {job_fd.get(),
                      theirs[0].get(),
                      stdin_fd.get(),
                      sink ? theirs[1].get() : null_fd.get(),
                      sink ? theirs[2].get() : null_fd.get(),
                      job.cancel_fd >= 0 ? job.cancel_fd : never.get()};
  char tag = 'r';
  if (SendWithFds(sock_.get(), &tag, 1, fds) != 1) return ErrnoStatus("hand the job over");
  for (UniqueFd& fd : theirs) fd.Reset();
  job_fd.Reset();
  stdin_fd.Reset();

  std::string result;
  std::array<bool, 3> open = {true, sink != nullptr, sink != nullptr};
  char buf[1 << 16];
  while (open[0] || open[1] || open[2]) {
    pollfd p[3];
    for (int i = 0; i < 3; ++i) p[i] = {open[i] ? ours[i].get() : -1, POLLIN, 0};
    if (poll(p, 3, -1) < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("wait for the run");
    }
    for (int i = 0; i < 3; ++i) {
      if (!open[i] || !p[i].revents) continue;
      ssize_t n = read(ours[i].get(), buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        open[i] = false;
      } else if (i == 0) {
        if (result.size() + static_cast<size_t>(n) > kMaxResultBytes) {
          return absl::InternalError("the run's result is larger than 64 MiB");
        }
        result.append(buf, static_cast<size_t>(n));
      } else {
        sink->Chunk(i, std::string_view(buf, static_cast<size_t>(n)));
      }
    }
  }
  while (!result.empty() && result.back() == '\n') result.pop_back();
  if (result.empty()) return absl::InternalError("the run ended without a result");
  RunOutcome out;
  out.result_json = std::move(result);
  try {
    out.exit_code = json::parse(out.result_json).at("exitCode").get<int>();
  } catch (const json::exception& e) {
    return absl::InternalError(absl::StrCat("the run's result is not JSON: ", e.what()));
  }
  return out;
}

}  // namespace sentry::agent
