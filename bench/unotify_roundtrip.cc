// bench_unotify: the bare seccomp user-notification round trip.
//
// This is the yardstick the sentry's trapped syscalls are compared against: the
// least a trapped syscall can cost on this kernel, with a supervisor that does no
// work at all besides receiving the notification and replying.
//
// Every benchmark run forks a child ("the guest") that installs a seccomp filter with
// SECCOMP_FILTER_FLAG_NEW_LISTENER. The filter sends exactly one syscall to the
// listener: getxattr() whose first argument is a bogus pointer cookie (kCookie);
// every other syscall, getxattr with any other first argument included, is allowed.
// The child hands the listener to the parent (SCM_RIGHTS), where a freshly created
// supervisor thread answers each notification with a fixed value. The benchmark
// harness itself is never filtered: the filter lives only in the child.
//
// The child makes state.max_iterations trapped calls (after a short warm-up), timing
// them itself with CLOCK_MONOTONIC (vDSO, never trapped), and sends the total back
// through a pipe; the benchmark uses manual timing, so the reported Time is the wall
// time of one trapped call. The CPU column is the harness thread's and means nothing
// here; the counters are the ones to read:
//   guest_cpu  CPU time the guest spends per call (entry, filter, sleep, return)
//   sup_cpu    CPU time the supervisor thread spends per notification
//
// Variants:
//   wake     default | sync   (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP via
//                              SECCOMP_IOCTL_NOTIF_SET_FLAGS, Linux 6.6+)
//   wait     recv | epoll     (block in SECCOMP_IOCTL_NOTIF_RECV, or in epoll_wait on the
//                              listener first, as an event loop does)
//   reply    plain            (SECCOMP_IOCTL_NOTIF_SEND with val = kReply)
//            addfd            (SECCOMP_IOCTL_NOTIF_ADDFD of /dev/null, then SEND with
//                              the new fd; the guest closes it, inside the timing)
//            addfd_send       (one SECCOMP_IOCTL_NOTIF_ADDFD with SECCOMP_ADDFD_FLAG_SEND;
//                              the guest closes it, inside the timing)
//   pin      none | same | split   (guest and supervisor unpinned, both on one CPU,
//                                   or each on its own CPU)
// plus "filtered_native": getpid in the same filtered child, which the filter lets
// through: a native syscall paying only for the filter.

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP 1
#endif
#ifndef SECCOMP_ADDFD_FLAG_SEND
#define SECCOMP_ADDFD_FLAG_SEND (1UL << 1)
#endif

namespace {

constexpr long kTrappedNr = SYS_getxattr;
// A bogus, non-canonical user pointer: if it ever ran natively, getxattr would fail
// with EFAULT and touch nothing.
constexpr uint64_t kCookie = 0x5e17'0000'beefULL;
constexpr uint64_t kStop = 0x57'0b;  // args[1] of the last call: supervisor exits
constexpr long kReply = 42;
constexpr int64_t kWarmup = 200;

enum class Wake { kDefault, kSync };
enum class Wait { kRecv, kEpoll };
enum class Reply { kNone, kPlain, kAddfd, kAddfdSend };
enum class Pin { kNone, kSame, kSplit };

struct Config {
  Wake wake;
  Wait wait;
  Reply reply;  // kNone: "filtered_native", nothing is trapped but the stop call
  Pin pin;
};

std::string Name(const Config& c) {
  if (c.reply == Reply::kNone) return "unotify/filtered_native";
  std::string n = "unotify/";
  n += c.wake == Wake::kSync ? "sync" : "default";
  n += c.wait == Wait::kEpoll ? "/epoll" : "/recv";
  n += c.reply == Reply::kPlain ? "/plain" : c.reply == Reply::kAddfd ? "/addfd" : "/addfd_send";
  if (c.pin == Pin::kSame) n += "/pin_same";
  if (c.pin == Pin::kSplit) n += "/pin_split";
  return n;
}

int64_t NowNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// The CPUs this process may run on, in order.
std::vector<int> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) cpus.push_back(i);
  return cpus;
}

bool PinSelf(int cpu) {
  if (cpu < 0) return true;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

void CloseFd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

bool WriteAll(int fd, const void* buf, size_t len) {
  const char* p = static_cast<const char*>(buf);
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

bool ReadAll(int fd, void* buf, size_t len) {
  char* p = static_cast<char*>(buf);
  while (len > 0) {
    ssize_t n = read(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

// What the child sends back.
struct ChildResult {
  int32_t error;  // errno-style code of the first failure, 0 if none
  char what[64];  // what failed
  int64_t wall_ns;
  int64_t cpu_ns;
};

// ---------------------------------------------------------------- the guest (child)

long Trapped(uint64_t arg1) { return syscall(kTrappedNr, kCookie, arg1, 0, 0, 0, 0); }

// Traps getxattr(kCookie, ...) to the listener, allows everything else. x86-64 only.
int InstallFilter() {
  sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kTrappedNr, 0, 5),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(kCookie), 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0]) + 4),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(kCookie >> 32), 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog = {static_cast<unsigned short>(sizeof(code) / sizeof(code[0])), code};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  return static_cast<int>(
      syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog));
}

bool SendFd(int sock, int fd) {
  char byte = 'L';
  iovec iov = {&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
  return sendmsg(sock, &msg, MSG_NOSIGNAL) == 1;
}

int RecvFd(int sock) {
  char byte;
  iovec iov = {&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1) return -1;
  cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  if (cmsg == nullptr || cmsg->cmsg_type != SCM_RIGHTS) return -1;
  int fd;
  memcpy(&fd, CMSG_DATA(cmsg), sizeof(int));
  return fd;
}

// Runs in the forked child; never returns. Only raw syscalls and no allocation: the
// parent may have other threads.
[[noreturn]] void ChildMain(const Config& cfg, int64_t iterations, int cpu, int sock, int go_fd,
                            int result_fd) {
  ChildResult r = {};
  auto fail = [&](const char* what) {
    r.error = errno != 0 ? errno : EINVAL;
    snprintf(r.what, sizeof(r.what), "%s", what);
    WriteAll(result_fd, &r, sizeof(r));
    _exit(1);
  };
  int listener = InstallFilter();
  if (listener < 0) fail("seccomp(NEW_LISTENER)");
  if (!SendFd(sock, listener)) fail("sendmsg(listener)");
  close(listener);
  close(sock);
  char go;
  if (!ReadAll(go_fd, &go, 1)) _exit(1);  // the parent gave up
  if (!PinSelf(cpu)) fail("sched_setaffinity(guest)");

  const bool trapped = cfg.reply != Reply::kNone;
  const bool gets_fd = cfg.reply == Reply::kAddfd || cfg.reply == Reply::kAddfdSend;
  // filtered_native runs getpid, which the filter lets through. (Not getxattr with
  // another bogus pointer: the fault that makes it fail with EFAULT costs ~10 us here.)
  const long my_pid = syscall(SYS_getpid);
  auto one_call = [&]() -> bool {
    if (!trapped) return syscall(SYS_getpid) == my_pid;
    long ret = Trapped(0);
    if (gets_fd) return ret >= 0 && close(static_cast<int>(ret)) == 0;
    return ret == kReply;
  };
  for (int64_t i = 0; i < kWarmup; ++i)
    if (!one_call()) fail("warm-up call");
  int64_t cpu0 = NowNs(CLOCK_THREAD_CPUTIME_ID);
  int64_t t0 = NowNs(CLOCK_MONOTONIC);
  for (int64_t i = 0; i < iterations; ++i)
    if (!one_call()) fail("timed call");
  int64_t t1 = NowNs(CLOCK_MONOTONIC);
  int64_t cpu1 = NowNs(CLOCK_THREAD_CPUTIME_ID);
  r.wall_ns = t1 - t0;
  r.cpu_ns = cpu1 - cpu0;
  if (!WriteAll(result_fd, &r, sizeof(r))) _exit(1);
  Trapped(kStop);  // lets the supervisor thread leave its loop
  _exit(0);
}

// ------------------------------------------------------------ the supervisor (parent)

std::atomic<bool> g_abort{false};
void OnWakeSignal(int) {}

struct Supervisor {
  const Config* cfg = nullptr;
  int listener = -1;
  int epfd = -1;
  int devnull = -1;
  int cpu = -1;
  pid_t child = -1;
  int64_t handled = 0;
  int64_t cpu_ns = 0;
  std::string error;  // empty if all went well
  std::atomic<bool> done{false};

  void Fail(const char* what) {
    error = std::string(what) + ": " + strerror(errno);
    kill(child, SIGKILL);  // a guest stuck in a trapped call would never return
  }

  void Run() {
    if (!PinSelf(cpu)) {
      Fail("sched_setaffinity(supervisor)");
      done.store(true);
      return;
    }
    int64_t cpu0 = NowNs(CLOCK_THREAD_CPUTIME_ID);
    for (;;) {
      if (g_abort.load()) break;
      if (cfg->wait == Wait::kEpoll) {
        epoll_event ev;
        int n = epoll_wait(epfd, &ev, 1, -1);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
          Fail("epoll_wait");
          break;
        }
        if (!(ev.events & EPOLLIN)) break;  // EPOLLHUP alone: the guest is gone
      }
      seccomp_notif req;
      memset(&req, 0, sizeof(req));  // RECV insists on a zeroed buffer
      if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) {
        if (errno == EINTR || errno == ENOENT) continue;
        Fail("SECCOMP_IOCTL_NOTIF_RECV");
        break;
      }
      ++handled;
      const bool stop = req.data.args[1] == kStop;
      if (stop || cfg->reply == Reply::kPlain || cfg->reply == Reply::kNone) {
        seccomp_notif_resp resp = {};
        resp.id = req.id;
        resp.val = kReply;
        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) != 0 && errno != ENOENT) {
          Fail("SECCOMP_IOCTL_NOTIF_SEND");
          break;
        }
      } else {
        seccomp_notif_addfd addfd = {};
        addfd.id = req.id;
        addfd.srcfd = static_cast<uint32_t>(devnull);
        addfd.newfd_flags = O_CLOEXEC;
        addfd.flags = cfg->reply == Reply::kAddfdSend ? SECCOMP_ADDFD_FLAG_SEND : 0;
        int newfd = ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &addfd);
        if (newfd < 0) {
          if (errno == ENOENT) continue;
          Fail("SECCOMP_IOCTL_NOTIF_ADDFD");
          break;
        }
        if (cfg->reply == Reply::kAddfd) {
          seccomp_notif_resp resp = {};
          resp.id = req.id;
          resp.val = newfd;
          if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) != 0 && errno != ENOENT) {
            Fail("SECCOMP_IOCTL_NOTIF_SEND");
            break;
          }
        }
      }
      if (stop) break;
    }
    cpu_ns = NowNs(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    done.store(true);
  }
};

// Wakes a supervisor thread out of a blocking RECV (which only a signal interrupts)
// and joins it.
void StopSupervisor(std::thread& t, Supervisor& sup) {
  g_abort.store(true);
  while (!sup.done.load()) {
    pthread_kill(t.native_handle(), SIGUSR1);
    usleep(1000);
  }
  t.join();
  g_abort.store(false);
}

void BM_Unotify(benchmark::State& state, Config cfg) {
  static const bool handler_installed = [] {
    struct sigaction sa = {};
    sa.sa_handler = OnWakeSignal;  // no SA_RESTART: RECV must fail with EINTR
    sigemptyset(&sa.sa_mask);
    return sigaction(SIGUSR1, &sa, nullptr) == 0;
  }();
  if (!handler_installed) {
    state.SkipWithError("sigaction(SIGUSR1) failed");
    return;
  }
  std::vector<int> cpus = AllowedCpus();
  int guest_cpu = -1, sup_cpu = -1;
  if (cfg.pin == Pin::kSame) {
    if (cpus.empty()) {
      state.SkipWithError("no CPU to pin to");
      return;
    }
    guest_cpu = sup_cpu = cpus.back();
  } else if (cfg.pin == Pin::kSplit) {
    if (cpus.size() < 2) {
      state.SkipWithError("needs two CPUs");
      return;
    }
    guest_cpu = cpus[cpus.size() - 2];
    sup_cpu = cpus.back();
  }

  const int64_t iterations = static_cast<int64_t>(state.max_iterations);
  int sv[2] = {-1, -1}, go[2] = {-1, -1}, res[2] = {-1, -1};
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0 || pipe2(go, O_CLOEXEC) != 0 ||
      pipe2(res, O_CLOEXEC) != 0) {
    state.SkipWithError("socketpair/pipe failed");
    return;
  }
  pid_t pid = fork();
  if (pid < 0) {
    state.SkipWithError("fork failed");
    return;
  }
  if (pid == 0) {
    close(sv[0]);
    close(go[1]);
    close(res[0]);
    ChildMain(cfg, iterations, guest_cpu, sv[1], go[0], res[1]);
  }
  CloseFd(sv[1]);
  CloseFd(go[0]);
  CloseFd(res[1]);

  std::string error;
  Supervisor sup;
  sup.cfg = &cfg;
  sup.cpu = sup_cpu;
  sup.child = pid;
  sup.listener = RecvFd(sv[0]);
  CloseFd(sv[0]);
  if (sup.listener < 0) {
    ChildResult why = {};
    error = "did not get the listener from the child";
    if (ReadAll(res[0], &why, sizeof(why)) && why.error != 0)
      error = std::string("guest: ") + why.what + ": " + strerror(why.error);
  }
  if (error.empty() && cfg.wake == Wake::kSync &&
      ioctl(sup.listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) != 0)
    error = std::string("SECCOMP_IOCTL_NOTIF_SET_FLAGS(SYNC_WAKE_UP): ") + strerror(errno);
  if (error.empty() && cfg.wait == Wait::kEpoll) {
    sup.epfd = epoll_create1(EPOLL_CLOEXEC);
    epoll_event ev = {};
    ev.events = EPOLLIN;
    if (sup.epfd < 0 || epoll_ctl(sup.epfd, EPOLL_CTL_ADD, sup.listener, &ev) != 0)
      error = std::string("epoll: ") + strerror(errno);
  }
  if (error.empty()) {
    sup.devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (sup.devnull < 0) error = std::string("open /dev/null: ") + strerror(errno);
  }

  ChildResult r = {};
  if (error.empty()) {
    std::thread t([&sup] { sup.Run(); });
    char byte = 'G';
    bool ok = WriteAll(go[1], &byte, 1) && ReadAll(res[0], &r, sizeof(r));
    if (!ok || r.error != 0) {
      // The child died or failed: it will not make the stop call.
      kill(pid, SIGKILL);
      StopSupervisor(t, sup);
      if (!sup.error.empty())
        error = sup.error;
      else if (r.error != 0)
        error = std::string("guest: ") + r.what + ": " + strerror(r.error);
      else
        error = "guest died";
    } else {
      t.join();  // the child's stop call ends the loop
      if (!sup.error.empty()) error = sup.error;
    }
  } else {
    kill(pid, SIGKILL);
  }
  CloseFd(go[1]);
  CloseFd(res[0]);
  CloseFd(sup.listener);
  CloseFd(sup.epfd);
  CloseFd(sup.devnull);
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (error.empty() && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
    error = "guest exited abnormally";
  if (!error.empty()) {
    state.SkipWithError(error.c_str());
    return;
  }

  const double per_call = static_cast<double>(r.wall_ns) * 1e-9 / static_cast<double>(iterations);
  for (auto _ : state) state.SetIterationTime(per_call);
  state.counters["guest_cpu"] =
      benchmark::Counter(static_cast<double>(r.cpu_ns) * 1e-9, benchmark::Counter::kAvgIterations);
  // Warm-up and stop notifications included: the per-notification average.
  if (cfg.reply != Reply::kNone && sup.handled > 0)
    state.counters["sup_cpu"] = benchmark::Counter(static_cast<double>(sup.cpu_ns) * 1e-9 /
                                                   static_cast<double>(sup.handled));
}

void RegisterAll() {
  std::vector<Config> configs = {
      {Wake::kDefault, Wait::kRecv, Reply::kNone, Pin::kNone},
      // (a) and (b): default vs synchronous wake-up.
      {Wake::kDefault, Wait::kRecv, Reply::kPlain, Pin::kNone},
      {Wake::kSync, Wait::kRecv, Reply::kPlain, Pin::kNone},
      // (c) epoll_wait before RECV.
      {Wake::kDefault, Wait::kEpoll, Reply::kPlain, Pin::kNone},
      {Wake::kSync, Wait::kEpoll, Reply::kPlain, Pin::kNone},
      // (d) ADDFD + SEND vs ADDFD with SECCOMP_ADDFD_FLAG_SEND.
      {Wake::kDefault, Wait::kRecv, Reply::kAddfd, Pin::kNone},
      {Wake::kDefault, Wait::kRecv, Reply::kAddfdSend, Pin::kNone},
      {Wake::kSync, Wait::kRecv, Reply::kAddfd, Pin::kNone},
      {Wake::kSync, Wait::kRecv, Reply::kAddfdSend, Pin::kNone},
      {Wake::kSync, Wait::kEpoll, Reply::kAddfd, Pin::kNone},
      // Placement: both on one CPU, or one CPU each.
      {Wake::kDefault, Wait::kRecv, Reply::kPlain, Pin::kSame},
      {Wake::kSync, Wait::kRecv, Reply::kPlain, Pin::kSame},
      {Wake::kSync, Wait::kRecv, Reply::kAddfd, Pin::kSame},
      {Wake::kSync, Wait::kRecv, Reply::kAddfdSend, Pin::kSame},
      {Wake::kDefault, Wait::kRecv, Reply::kPlain, Pin::kSplit},
      {Wake::kSync, Wait::kRecv, Reply::kPlain, Pin::kSplit},
  };
  for (const Config& c : configs)
    benchmark::RegisterBenchmark(Name(c).c_str(), BM_Unotify, c)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
}

}  // namespace

int main(int argc, char** argv) {
  RegisterAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
