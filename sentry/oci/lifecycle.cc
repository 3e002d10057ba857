#include "sentry/oci/lifecycle.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "sentry/base/fd_passing.h"
#include "sentry/base/status_macros.h"
#include "sentry/base/unique_fd.h"
#include "sentry/oci/bundle.h"
#include "sentry/oci/monitor.h"
#include "sentry/oci/state.h"
#include "sentry/run/cgroups.h"
#include "sentry/run/userns_root.h"

namespace sentry::oci {
namespace {

int Fail(const Globals& g, const std::string& msg) {
  g.log->Error(msg);
  return 1;
}

std::string Message(const absl::Status& s) { return std::string(s.message()); }

// Writes the pid file as runc does: the number alone, through a rename.
absl::Status WritePidFile(const std::string& path, pid_t pid) {
  std::string tmp = path + ".sentry-tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return absl::InternalError(absl::StrCat("cannot write the pid file ", path));
  std::string text = std::to_string(pid);
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) < 0) {
    unlink(tmp.c_str());
    return absl::InternalError(absl::StrCat("cannot write the pid file ", path));
  }
  return absl::OkStatus();
}

// Whatever the failed monitor left in its error pipe (it has exited).
std::string Drain(int fd) {
  fcntl(fd, F_SETFL, O_NONBLOCK);
  std::string out;
  char buf[4096];
  ssize_t n;
  while (out.size() < (64 << 10) && (n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, n);
  return std::string(absl::StripAsciiWhitespace(out));
}

// The ready line: "R INIT GUEST\n", or nothing (the monitor failed).
bool ReadReady(int fd, pid_t* init, pid_t* guest) {
  std::string line;
  char c;
  while (line.size() < 64) {
    ssize_t n = read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || c == '\n') break;
    line.push_back(c);
  }
  std::vector<std::string> parts = absl::StrSplit(line, ' ');
  return parts.size() == 3 && parts[0] == "R" && absl::SimpleAtoi(parts[1], init) &&
         absl::SimpleAtoi(parts[2], guest) && *init > 0 && *guest > 0;
}

}  // namespace

namespace {

absl::StatusOr<UniqueFd> ConnectTo(const std::string& socket_path, const char* what) {
  int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (sock < 0) return ErrnoStatus("socket");
  UniqueFd so(sock);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("the ", what, "'s path is too long"));
  }
  std::memcpy(addr.sun_path, socket_path.data(), socket_path.size());
  if (connect(sock, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) < 0) {
    return ErrnoStatus(absl::StrCat("cannot connect to the ", what, " ", socket_path));
  }
  return so;
}

}  // namespace

absl::Status SendPidfd(const std::string& socket_path, pid_t pid, const std::string& name) {
  UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd) return ErrnoStatus("pidfd_open");
  ASSIGN_OR_RETURN(UniqueFd sock, ConnectTo(socket_path, "pidfd socket"));
  int fds[1] = {pidfd.get()};
  if (SendWithFds(sock.get(), name.data(), name.size(), fds) < 0) {
    return ErrnoStatus("cannot send the pidfd to the pidfd socket");
  }
  return absl::OkStatus();
}

absl::StatusOr<UniqueFd> MakeConsole(const std::string& socket_path) {
  int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0) return ErrnoStatus("cannot open a pty");
  UniqueFd m(master);
  char name[128];
  if (grantpt(master) < 0 || unlockpt(master) < 0 || ptsname_r(master, name, sizeof(name)) != 0) {
    return ErrnoStatus("cannot set up the pty");
  }
  int slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (slave < 0) return ErrnoStatus("cannot open the pty's slave");
  UniqueFd s(slave);
  ASSIGN_OR_RETURN(UniqueFd so, ConnectTo(socket_path, "console socket"));
  int fds[1] = {master};
  if (SendWithFds(so.get(), name, std::strlen(name), fds) < 0) {
    return ErrnoStatus("cannot send the pty to the console socket");
  }
  return s;
}

namespace {

// The host pids of the sandbox's processes: those in its pid 1's pid
// namespace (pid 1 itself, the loader, left out).
std::vector<pid_t> SandboxPids(const ContainerState& s) {
  std::vector<pid_t> pids;
  if (ProcessStartTime(s.init_pid) != s.init_start) return pids;
  struct stat ns;
  if (stat(absl::StrCat("/proc/", s.init_pid, "/ns/pid").c_str(), &ns) < 0) return pids;
  DIR* d = opendir("/proc");
  if (!d) return pids;
  while (dirent* e = readdir(d)) {
    pid_t pid;
    if (!absl::SimpleAtoi(e->d_name, &pid) || pid == s.init_pid) continue;
    struct stat st;
    if (stat(absl::StrCat("/proc/", pid, "/ns/pid").c_str(), &st) == 0 && st.st_ino == ns.st_ino &&
        st.st_dev == ns.st_dev) {
      pids.push_back(pid);
    }
  }
  closedir(d);
  std::sort(pids.begin(), pids.end());
  return pids;
}

// Tells a created container's monitor to end before its guest runs.
bool AbortCreated(const StateDir& dir, int signo) {
  int fd = open(dir.fifo_path().c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  char msg[2] = {'k', static_cast<char>(signo)};
  bool ok = write(fd, msg, 2) == 2;
  close(fd);
  return ok;
}

// Kills the whole sandbox: its pid 1, whose end takes every process of its
// pid namespace with it (the monitor then cleans up and exits).
void KillSandbox(const ContainerState& s) {
  if (s.init_pid > 0 && ProcessStartTime(s.init_pid) == s.init_start) kill(s.init_pid, SIGKILL);
}

// Waits for a process to exit (not to be reaped: the monitor's engine, or
// the monitor, reaps it).
bool WaitGone(pid_t pid, uint64_t start, int timeout_ms) {
  if (ProcessStartTime(pid) != start) return true;
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) return ProcessStartTime(pid) != start;
  UniqueFd fd(pidfd);
  if (ProcessStartTime(pid) != start) return true;  // reused before the open
  pollfd p{pidfd, POLLIN, 0};
  return poll(&p, 1, timeout_ms) == 1;
}

// Ends a created or running container for delete, and waits for its monitor.
void EndContainer(const StateDir& dir, const ContainerState& s, Status st) {
  if (st == Status::kStopped) return;
  if (st == Status::kCreated) AbortCreated(dir, SIGKILL);
  KillSandbox(s);
  if (WaitGone(s.pid, s.pid_start, 10000)) return;
  // A monitor that does not end is killed; its cgroups are swept by Delete.
  if (ProcessStartTime(s.pid) == s.pid_start) kill(s.pid, SIGKILL);
  WaitGone(s.pid, s.pid_start, 2000);
}

}  // namespace

std::string DefaultStateRoot() {
  // (uid 0 of rootless podman's namespace is its caller: see userns_root.h.)
  const uid_t caller = CallerUid();
  if (caller == 0) return "/run/sentry-oci";
  const char* xdg = getenv("XDG_RUNTIME_DIR");
  struct stat st;
  if (xdg && xdg[0] == '/' && stat(xdg, &st) == 0 && S_ISDIR(st.st_mode) &&
      st.st_uid == geteuid()) {
    return absl::StrCat(xdg, "/sentry-oci");
  }
  return absl::StrCat("/tmp/sentry-oci-", caller);
}

int ParseSignal(const std::string& text) {
  int n;
  if (absl::SimpleAtoi(text, &n)) return n > 0 && n < NSIG ? n : 0;
  std::string name = absl::AsciiStrToUpper(text);
  if (name.rfind("SIG", 0) == 0) name = name.substr(3);
  for (int s = 1; s < SIGRTMIN; ++s) {
    const char* abbrev = sigabbrev_np(s);
    if (abbrev && name == abbrev) return s;
  }
  if (name == "IOT") return SIGABRT;
  if (name == "CLD") return SIGCHLD;
  if (name == "POLL") return SIGIO;
  return 0;
}

int Create(const Globals& g, const CreateOptions& c) {
  if (!ValidId(c.id)) return Fail(g, absl::StrCat("invalid container id: ", c.id));
  auto bundle = LoadBundle(c.bundle);
  if (!bundle.ok()) return Fail(g, absl::StrCat(c.id, ": ", Message(bundle.status())));
  if (bundle->terminal && c.console_socket.empty() && !c.foreground) {
    return Fail(g, "cannot allocate tty if sentry will detach without setting console socket");
  }
  if (!bundle->terminal && !c.console_socket.empty()) {
    return Fail(g, "cannot use console socket if sentry will not allocate a tty");
  }
  auto dir = StateDir::Create(g.root, c.id);
  if (!dir.ok()) return Fail(g, Message(dir.status()));
  auto abandon = [&](const std::string& msg) {
    dir->Remove();
    return Fail(g, absl::StrCat("container ", c.id, " could not be created: ", msg));
  };
  for (const std::string& note : bundle->notes) g.log->Warn(absl::StrCat(c.id, ": ", note));
  if (mkfifo(dir->fifo_path().c_str(), 0600) < 0) return abandon("cannot make the start fifo");
  UniqueFd slave;
  if (bundle->terminal && !c.console_socket.empty()) {
    auto s = MakeConsole(c.console_socket);
    if (!s.ok()) return abandon(Message(s.status()));
    slave = std::move(*s);
  }
  int ready[2], errp[2];
  // A socket, not a pipe: the monitor's send to a create that was killed
  // meanwhile fails with EPIPE (MSG_NOSIGNAL) and it cleans up, instead of
  // dying of SIGPIPE with its cgroups left behind.
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ready) < 0) return abandon("socketpair");
  if (pipe2(errp, O_CLOEXEC) < 0) return abandon("pipe");
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) return abandon("fork");
  if (pid == 0) {
    close(ready[0]);
    close(errp[0]);
    close(dir->lock_fd());  // the lock stays with create, which releases it when done
    MonitorArgs m;
    m.run = std::move(bundle->run);
    for (int i = 0; i < c.preserve_fds; ++i) m.run.extra_fds.push_back(3 + i);
    m.fifo_path = dir->fifo_path();
    m.exec_socket_path = dir->exec_socket_path();
    m.ready_fd = ready[1];
    m.error_fd = errp[1];
    m.tty_fd = slave.Release();
    m.detach = !c.foreground;
    MonitorMain(std::move(m));  // does not return
  }
  close(ready[1]);
  close(errp[1]);
  UniqueFd ready_r(ready[0]), err_r(errp[0]);
  slave.Reset();
  pid_t init = 0, guest = 0;
  if (!ReadReady(ready_r.get(), &init, &guest)) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    std::string why = Drain(err_r.get());
    if (absl::StartsWith(why, "sentry: ")) why = why.substr(8);
    if (why.empty()) why = absl::StrCat("the sandbox ended with status ", status);
    return abandon(why);
  }
  ContainerState s;
  s.id = c.id;
  s.bundle = bundle->dir;
  s.rootfs = bundle->rootfs;
  s.created = NowRfc3339();
  s.pid = pid;
  s.pid_start = ProcessStartTime(pid);
  s.init_pid = init;
  s.init_start = ProcessStartTime(init);
  s.guest_pid = guest;
  s.annotations = bundle->annotations;
  absl::Status w = dir->Write(s);
  if (w.ok() && !c.pid_file.empty()) w = WritePidFile(c.pid_file, pid);
  // As runc: a pidfd of the process the pid file names, for an engine that
  // waits and signals through pidfds.
  if (w.ok() && !c.pidfd_socket.empty()) w = SendPidfd(c.pidfd_socket, pid, c.id);
  if (!w.ok()) {
    EndContainer(*dir, s, Status::kCreated);
    if (!c.foreground) {
    } else {
      waitpid(pid, nullptr, 0);
    }
    return abandon(Message(w));
  }
  g.log->Debug(absl::StrCat(c.id, ": created, monitor ", pid, ", sandbox pid 1 ", init));
  return 0;
}

int Start(const Globals& g, const std::string& id) {
  auto dir = StateDir::Open(g.root, id);
  if (!dir.ok()) return Fail(g, Message(dir.status()));
  auto s = dir->Read();
  if (!s.ok()) return Fail(g, absl::StrCat("container ", id, ": ", Message(s.status())));
  switch (StatusOf(*s)) {
    case Status::kStopped:
      return Fail(g, absl::StrCat("cannot start container ", id, ": it has stopped"));
    case Status::kRunning:
      return Fail(g, absl::StrCat("cannot start container ", id, ": it is already running"));
    case Status::kCreated:
      break;
  }
  int fd = open(dir->fifo_path().c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0 || write(fd, "s", 1) != 1) {
    if (fd >= 0) close(fd);
    return Fail(g, absl::StrCat("cannot start container ", id, ": its monitor is gone"));
  }
  close(fd);
  s->started = true;
  if (absl::Status w = dir->Write(*s); !w.ok()) return Fail(g, Message(w));
  return 0;
}

int RunContainer(const Globals& g, const CreateOptions& c, bool detach) {
  CreateOptions cc = c;
  cc.foreground = !detach;
  if (int rc = Create(g, cc); rc != 0) return rc;
  if (int rc = Start(g, c.id); rc != 0) {
    Delete(g, c.id, /*force=*/true);
    return rc;
  }
  if (detach) return 0;
  pid_t pid = 0;
  {
    auto dir = StateDir::Open(g.root, c.id);
    if (dir.ok()) {
      auto s = dir->Read();
      if (s.ok()) pid = s->pid;
    }
  }
  // The monitor is this process's child: its status is the container's.
  // Signals from the terminal reach it too (same process group); here they
  // would only cut the wait short.
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  int status = 0, code = 1;
  if (pid > 0) {
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  Delete(g, c.id, /*force=*/true);
  return code;
}

int Kill(const Globals& g, const std::string& id, int signo, bool all) {
  auto dir = StateDir::Open(g.root, id);
  if (!dir.ok()) return Fail(g, Message(dir.status()));
  auto s = dir->Read();
  if (!s.ok()) return Fail(g, absl::StrCat("container ", id, ": ", Message(s.status())));
  Status st = StatusOf(*s);
  // As runc: --all on a stopped container signals what is left (nothing),
  // and "container not running" are the words containerd's shim takes for
  // an exit it has already seen (its CRI kills --all after every exit).
  if (st == Status::kStopped) {
    return all ? 0 : Fail(g, absl::StrCat("container not running: ", id));
  }
  if (st == Status::kCreated) {
    // The guest has not run: any signal ends it, as it would a process
    // stopped before its first instruction.
    if (!AbortCreated(*dir, signo)) KillSandbox(*s);
    return 0;
  }
  if (signo == SIGKILL) {
    KillSandbox(*s);
    return 0;
  }
  std::vector<pid_t> pids = SandboxPids(*s);
  if (all) {
    for (pid_t p : pids) kill(p, signo);
    return 0;
  }
  if (std::find(pids.begin(), pids.end(), s->guest_pid) == pids.end()) {
    return Fail(g, absl::StrCat("container not running: ", id));
  }
  if (kill(s->guest_pid, signo) < 0) {
    return Fail(g, absl::StrCat("cannot signal container ", id, ": ", std::strerror(errno)));
  }
  return 0;
}

int Delete(const Globals& g, const std::string& id, bool force) {
  auto dir = StateDir::Open(g.root, id);
  if (!dir.ok()) {
    // As runc: a directory without state (an aborted create) goes; --force
    // makes a missing container no error.
    if (ValidId(id) && absl::IsNotFound(dir.status())) {
      std::string path = absl::StrCat(g.root, "/", id);
      struct stat st;
      if (stat(path.c_str(), &st) == 0) {
        unlink((path + "/start.fifo").c_str());
        unlink((path + "/exec.sock").c_str());
        unlink((path + "/state.json.tmp").c_str());
        rmdir(path.c_str());
      }
      if (force) return 0;
    }
    return Fail(g, Message(dir.status()));
  }
  auto s = dir->Read();
  if (!s.ok()) {
    dir->Remove();
    return force ? 0 : Fail(g, absl::StrCat("container ", id, ": ", Message(s.status())));
  }
  Status st = StatusOf(*s);
  if (st == Status::kRunning && !force) {
    return Fail(g, absl::StrCat("cannot delete container ", id, " that is not stopped: running"));
  }
  EndContainer(*dir, *s, st);
  // A monitor that died (SIGKILL, here or before) took its sandbox's pid 1
  // with it (its parent-death signal), which may still be ending with the
  // tasks of its pid namespace: the cgroups are swept once it is gone, or
  // the memory one, tried first while in use (EBUSY), stays.
  WaitGone(s->init_pid, s->init_start, 2000);
  Cgroups::SweepStale();
  dir->Remove();
  return 0;
}

int State(const Globals& g, const std::string& id) {
  auto dir = StateDir::Open(g.root, id);
  if (!dir.ok()) return Fail(g, Message(dir.status()));
  auto s = dir->Read();
  if (!s.ok()) return Fail(g, absl::StrCat("container ", id, ": ", Message(s.status())));
  std::printf("%s\n", StateJson(*s, /*pretty=*/true).c_str());
  return 0;
}

int List(const Globals& g, bool json, bool quiet) {
  std::vector<std::string> ids = StateDir::List(g.root);
  nlohmann::json all = nlohmann::json::array();
  if (!json && !quiet)
    std::printf("ID          PID         STATUS      BUNDLE      CREATED     OWNER\n");
  for (const std::string& id : ids) {
    auto dir = StateDir::Open(g.root, id);
    if (!dir.ok()) continue;
    auto s = dir->Read();
    if (!s.ok()) continue;
    if (quiet) {
      std::printf("%s\n", id.c_str());
    } else if (json) {
      all.push_back(nlohmann::json::parse(StateJson(*s, false)));
    } else {
      Status st = StatusOf(*s);
      std::printf("%-11s %-11d %-11s %-11s %-11s %s\n", id.c_str(),
                  st == Status::kStopped ? 0 : s->pid, StatusName(st), s->bundle.c_str(),
                  s->created.c_str(), "root");
    }
  }
  if (json) std::printf("%s\n", all.dump().c_str());
  return 0;
}

int Ps(const Globals& g, const std::string& id, bool json) {
  auto dir = StateDir::Open(g.root, id);
  if (!dir.ok()) return Fail(g, Message(dir.status()));
  auto s = dir->Read();
  if (!s.ok()) return Fail(g, absl::StrCat("container ", id, ": ", Message(s.status())));
  std::vector<pid_t> pids;
  if (StatusOf(*s) != Status::kStopped) pids = SandboxPids(*s);
  if (json) {
    std::printf("%s\n", nlohmann::json(pids).dump().c_str());
    return 0;
  }
  std::printf("PID         CMD\n");
  for (pid_t p : pids) {
    FILE* f = std::fopen(absl::StrCat("/proc/", p, "/cmdline").c_str(), "r");
    std::string cmd;
    if (f) {
      char buf[4096];
      size_t n = std::fread(buf, 1, sizeof(buf), f);
      std::fclose(f);
      for (size_t i = 0; i < n; ++i) cmd.push_back(buf[i] ? buf[i] : ' ');
    }
    std::printf("%-11d %s\n", p, std::string(absl::StripTrailingAsciiWhitespace(cmd)).c_str());
  }
  return 0;
}

}  // namespace sentry::oci
