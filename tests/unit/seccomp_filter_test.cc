// The seccomp program built from the syscall table: first evaluated in a small
// classic-BPF interpreter over every number and the argument filters, then
// loaded into the kernel in a forked child. Without a listener the kernel fails
// trap rows with ENOSYS, so the child only calls native and errno rows.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/io_uring.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <linux/sockios.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "loader/filter.h"
#include "loader/prebuilt_filter.h"
#include "syscalls/fork_gate.h"
#include "syscalls/table.h"

namespace sentry {
namespace {

constexpr uint32_t kX32 = 0x40000000;

const std::vector<sock_filter>& Program() {
  static const auto* prog = new std::vector<sock_filter>(BuildSeccompFilter(SyscallTable()));
  return *prog;
}

// --- a classic BPF interpreter for the instructions the builder emits ---

struct Data {
  seccomp_data d{};
  Data(int nr, std::vector<uint64_t> args = {}, uint32_t arch = AUDIT_ARCH_X86_64) {
    d.nr = nr;
    d.arch = arch;
    for (size_t i = 0; i < args.size() && i < 6; ++i) d.args[i] = args[i];
  }
};

// Runs the program; returns the seccomp action, or fails the test and returns 0
// (SECCOMP_RET_KILL_THREAD) on an instruction it does not know.
uint32_t Eval(const std::vector<sock_filter>& prog, const Data& in) {
  uint32_t a = 0;
  size_t pc = 0;
  const auto* bytes = reinterpret_cast<const uint8_t*>(&in.d);
  for (int steps = 0; steps < 100000 && pc < prog.size(); ++steps) {
    const sock_filter& f = prog[pc];
    switch (f.code) {
      case BPF_LD | BPF_W | BPF_ABS:
        if (f.k + 4 > sizeof(seccomp_data) || f.k % 4) {
          ADD_FAILURE() << "load at " << f.k;
          return 0;
        }
        std::memcpy(&a, bytes + f.k, 4);
        ++pc;
        break;
      case BPF_JMP | BPF_JA:
        pc += 1 + f.k;
        break;
      case BPF_JMP | BPF_JEQ | BPF_K:
        pc += 1 + (a == f.k ? f.jt : f.jf);
        break;
      case BPF_JMP | BPF_JGE | BPF_K:
        pc += 1 + (a >= f.k ? f.jt : f.jf);
        break;
      case BPF_JMP | BPF_JSET | BPF_K:
        pc += 1 + ((a & f.k) ? f.jt : f.jf);
        break;
      case BPF_ALU | BPF_AND | BPF_K:
        a &= f.k;
        ++pc;
        break;
      case BPF_RET | BPF_K:
        return f.k;
      default:
        ADD_FAILURE() << "unknown BPF code " << f.code << " at " << pc;
        return 0;
    }
  }
  ADD_FAILURE() << "ran off the program";
  return 0;
}

uint32_t Eval(const Data& in) { return Eval(Program(), in); }

uint32_t Expected(const SyscallRow& row) {
  switch (row.action) {
    case Action::kNative:
      return SECCOMP_RET_ALLOW;
    case Action::kTrap:
      return SECCOMP_RET_USER_NOTIF;
    case Action::kTrace:
      return SECCOMP_RET_TRACE;
    case Action::kErrno:
      return RefusalAction(row.err);
  }
  return 0;
}

constexpr uint32_t Errno(int e) { return SECCOMP_RET_ERRNO | e; }

TEST(SeccompProgramTest, RefusalsWorthListingGoToTheSentry) {
  EXPECT_EQ(RefusalAction(EPERM), SECCOMP_RET_USER_NOTIF);
  EXPECT_EQ(RefusalAction(EACCES), SECCOMP_RET_USER_NOTIF);
  EXPECT_EQ(RefusalAction(ENOSYS), Errno(ENOSYS));
  EXPECT_EQ(RefusalAction(EAFNOSUPPORT), Errno(EAFNOSUPPORT));
  EXPECT_EQ(Eval(Data(SYS_ptrace, {PTRACE_ATTACH, 1})), SECCOMP_RET_USER_NOTIF);
  EXPECT_EQ(Eval(Data(SYS_clone3)), Errno(ENOSYS));
}

// What runs install is generated at build time; it must be the table's
// program exactly (a stale generated file would install an old table).
TEST(SeccompProgramTest, ThePrebuiltProgramIsTheTablesProgram) {
  std::span<const sock_filter> prebuilt = PrebuiltSeccompFilter();
  const std::vector<sock_filter>& fresh = Program();
  ASSERT_EQ(prebuilt.size(), fresh.size());
  for (size_t i = 0; i < fresh.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(prebuilt[i].code, fresh[i].code);
    EXPECT_EQ(prebuilt[i].jt, fresh[i].jt);
    EXPECT_EQ(prebuilt[i].jf, fresh[i].jf);
    EXPECT_EQ(prebuilt[i].k, fresh[i].k);
  }
}

TEST(SeccompProgramTest, FitsTheKernelLimit) {
  EXPECT_LT(Program().size(), static_cast<size_t>(BPF_MAXINSNS));
  EXPECT_GT(Program().size(), 0u);
}

TEST(SeccompProgramTest, JumpsStayInsideAndItEndsInAReturn) {
  const auto& prog = Program();
  ASSERT_FALSE(prog.empty());
  EXPECT_EQ(prog.back().code, BPF_RET | BPF_K);
  for (size_t pc = 0; pc < prog.size(); ++pc) {
    const sock_filter& f = prog[pc];
    if (BPF_CLASS(f.code) != BPF_JMP) continue;
    if (BPF_OP(f.code) == BPF_JA) {
      EXPECT_LT(pc + 1 + f.k, prog.size()) << "at " << pc;
    } else {
      EXPECT_LT(pc + 1 + f.jt, prog.size()) << "at " << pc;
      EXPECT_LT(pc + 1 + f.jf, prog.size()) << "at " << pc;
    }
  }
}

TEST(SeccompProgramTest, EveryRowGetsItsAction) {
  for (const SyscallRow& row : SyscallTable()) {
    if (row.filter != ArgFilter::kNone) continue;
    EXPECT_EQ(Eval(Data(row.nr)), Expected(row)) << row.name;
    EXPECT_EQ(Eval(Data(row.nr, {~0ull, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull})), Expected(row))
        << row.name;
  }
}

TEST(SeccompProgramTest, NumbersWithoutARowAreEnosys) {
  for (int nr = 0; nr < 2048; ++nr) {
    if (FindSyscall(nr)) continue;
    EXPECT_EQ(Eval(Data(nr)), Errno(ENOSYS)) << nr;
  }
  EXPECT_EQ(Eval(Data(kX32 - 1)), Errno(ENOSYS));
}

TEST(SeccompProgramTest, X32AndOtherArchitecturesAreKilled) {
  for (int nr : {0, 1, 39, 59, 257, 512, 545}) {
    EXPECT_EQ(Eval(Data(static_cast<int>(kX32 | nr))), SECCOMP_RET_KILL_PROCESS) << nr;
  }
  EXPECT_EQ(Eval(Data(-1)), SECCOMP_RET_KILL_PROCESS);
  EXPECT_EQ(Eval(Data(20, {}, AUDIT_ARCH_I386)), SECCOMP_RET_KILL_PROCESS);
  EXPECT_EQ(Eval(Data(39, {}, AUDIT_ARCH_AARCH64)), SECCOMP_RET_KILL_PROCESS);
}

TEST(SeccompProgramTest, IoctlFilter) {
  EXPECT_EQ(Eval(Data(SYS_ioctl, {0, TIOCSTI})), Errno(ENOTTY));
  // TIOCSCTTY only without the steal flag (a pty of the sandbox's own).
  EXPECT_EQ(Eval(Data(SYS_ioctl, {0, TIOCSCTTY, 0})), SECCOMP_RET_ALLOW);
  EXPECT_EQ(Eval(Data(SYS_ioctl, {0, TIOCSCTTY, 1})), Errno(ENOTTY));
  EXPECT_EQ(Eval(Data(SYS_ioctl, {0, TIOCLINUX})), Errno(ENOTTY));
  EXPECT_EQ(Eval(Data(SYS_ioctl, {0, TIOCSETD})), Errno(ENOTTY));
  for (uint64_t ok : {TCGETS, TIOCGWINSZ, FIONREAD, FIONBIO, FIOCLEX}) {
    EXPECT_EQ(Eval(Data(SYS_ioctl, {1, ok})), SECCOMP_RET_ALLOW) << ok;
  }
  // Interface queries run natively (the sandbox's own network namespace);
  // the setters never do.
  for (uint64_t ok : {SIOCGIFINDEX, SIOCGIFNAME, SIOCGIFCONF, SIOCGIFFLAGS, SIOCGIFADDR,
                      SIOCGIFNETMASK, SIOCGIFMTU, SIOCGIFHWADDR}) {
    EXPECT_EQ(Eval(Data(SYS_ioctl, {3, ok})), SECCOMP_RET_ALLOW) << ok;
  }
  for (uint64_t no : {SIOCSIFFLAGS, SIOCSIFADDR, SIOCSIFNETMASK, SIOCSIFMTU, SIOCSIFHWADDR,
                      SIOCSIFNAME, SIOCADDRT, SIOCDELRT}) {
    EXPECT_EQ(Eval(Data(SYS_ioctl, {3, no})), Errno(ENOTTY)) << no;
  }
}

// getsockopt runs natively but for the peer's credentials of a socket
// (SO_PEERCRED, SO_PEERPIDFD), which the sentry answers (sys_peercred.cc).
TEST(SeccompProgramTest, GetsockoptTrapsOnlyPeerCredentials) {
  EXPECT_EQ(Eval(Data(SYS_getsockopt, {3, SOL_SOCKET, SO_PEERCRED})), SECCOMP_RET_USER_NOTIF);
  EXPECT_EQ(Eval(Data(SYS_getsockopt, {3, SOL_SOCKET, 77 /* SO_PEERPIDFD */})),
            SECCOMP_RET_USER_NOTIF);
  EXPECT_EQ(Eval(Data(SYS_getsockopt, {3, SOL_SOCKET, SO_ERROR})), SECCOMP_RET_ALLOW);
  EXPECT_EQ(Eval(Data(SYS_getsockopt, {3, SOL_SOCKET, SO_TYPE})), SECCOMP_RET_ALLOW);
  EXPECT_EQ(Eval(Data(SYS_getsockopt, {3, 6 /* IPPROTO_TCP */, SO_PEERCRED})), SECCOMP_RET_ALLOW);
}

TEST(SeccompProgramTest, SocketFilter) {
  for (uint64_t ok : {AF_UNIX, AF_INET, AF_INET6}) {
    EXPECT_EQ(Eval(Data(SYS_socket, {ok, SOCK_STREAM, 0})), SECCOMP_RET_ALLOW) << ok;
  }
  for (uint64_t bad : {AF_PACKET, AF_ALG, AF_VSOCK, AF_BLUETOOTH, AF_KEY}) {
    EXPECT_EQ(Eval(Data(SYS_socket, {bad, SOCK_RAW, 0})), Errno(EAFNOSUPPORT)) << bad;
  }
  // Netlink for NETLINK_ROUTE (0) only: interface enumeration.
  EXPECT_EQ(Eval(Data(SYS_socket, {AF_NETLINK, SOCK_RAW, NETLINK_ROUTE})), SECCOMP_RET_ALLOW);
  for (uint64_t proto : {NETLINK_AUDIT, NETLINK_KOBJECT_UEVENT, NETLINK_SOCK_DIAG,
                         NETLINK_NETFILTER, NETLINK_GENERIC}) {
    EXPECT_EQ(Eval(Data(SYS_socket, {AF_NETLINK, SOCK_RAW, proto})), Errno(EAFNOSUPPORT)) << proto;
  }
}

// The program of a sandbox without namespaces (table_without_namespaces.cc).
TEST(SeccompProgramTest, WithoutNamespacesOnlyUnixStreamSocketsAreNative) {
  const std::vector<sock_filter> prog = BuildSeccompFilter(SyscallTableWithoutNamespaces());
  EXPECT_LT(prog.size(), static_cast<size_t>(BPF_MAXINSNS));
  for (int nr : {SYS_socket, SYS_socketpair}) {
    for (int type : {+SOCK_STREAM, +SOCK_SEQPACKET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK}) {
      EXPECT_EQ(Eval(prog, Data(nr, {AF_UNIX, static_cast<uint64_t>(type), 0})), SECCOMP_RET_ALLOW)
          << nr << " " << type;
    }
    // Refusals worth telling the model about go to the sentry (EACCES).
    for (int type : {+SOCK_DGRAM, SOCK_DGRAM | SOCK_CLOEXEC, +SOCK_RAW}) {
      EXPECT_EQ(Eval(prog, Data(nr, {AF_UNIX, static_cast<uint64_t>(type), 0})),
                SECCOMP_RET_USER_NOTIF)
          << type;
    }
    for (uint64_t family : {AF_INET, AF_INET6}) {
      EXPECT_EQ(Eval(prog, Data(nr, {family, SOCK_STREAM, 0})), SECCOMP_RET_USER_NOTIF) << family;
    }
    for (uint64_t family : {AF_NETLINK, AF_PACKET, AF_VSOCK}) {
      EXPECT_EQ(Eval(prog, Data(nr, {family, SOCK_RAW, 0})), Errno(EAFNOSUPPORT)) << family;
    }
  }
  EXPECT_EQ(Eval(prog, Data(SYS_shmget)), Errno(ENOSYS));
  EXPECT_EQ(Eval(prog, Data(SYS_mq_open)), Errno(ENOSYS));
  EXPECT_EQ(Eval(prog, Data(SYS_uname)), SECCOMP_RET_USER_NOTIF);
  EXPECT_EQ(Eval(prog, Data(SYS_getuid)), SECCOMP_RET_USER_NOTIF);
  // Calls that name a process go to the sentry (no pid namespace to confine them).
  EXPECT_EQ(Eval(prog, Data(SYS_kill)), SECCOMP_RET_USER_NOTIF);
  EXPECT_EQ(Eval(prog, Data(SYS_wait4)), SECCOMP_RET_ALLOW);
  EXPECT_EQ(Eval(prog, Data(SYS_fcntl, {3, F_SETFL, 0})), SECCOMP_RET_ALLOW);
  EXPECT_EQ(Eval(prog, Data(SYS_fcntl, {3, F_SETOWN, 1})),
            SECCOMP_RET_USER_NOTIF);  // EPERM, reported
  EXPECT_EQ(Eval(prog, Data(SYS_openat)), SECCOMP_RET_USER_NOTIF);
}

TEST(SeccompProgramTest, PrctlFilter) {
  EXPECT_EQ(Eval(Data(SYS_prctl, {PR_SET_NAME})), SECCOMP_RET_ALLOW);
  EXPECT_EQ(Eval(Data(SYS_prctl, {PR_SET_NO_NEW_PRIVS, 1})), SECCOMP_RET_ALLOW);
  for (uint64_t bad :
       {PR_SET_MM, PR_SET_SECUREBITS, PR_GET_SECUREBITS, PR_CAPBSET_DROP, PR_SET_KEEPCAPS}) {
    EXPECT_EQ(Eval(Data(SYS_prctl, {bad})), Errno(EINVAL)) << bad;
  }
}

TEST(SeccompProgramTest, CloneFilter) {
  EXPECT_EQ(Eval(Data(SYS_clone, {SIGCHLD})), SECCOMP_RET_ALLOW);
  uint64_t threads = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                     CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
  EXPECT_EQ(Eval(Data(SYS_clone, {threads})), SECCOMP_RET_ALLOW);
  for (uint64_t ns : {CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWUTS,
                      CLONE_NEWIPC, CLONE_NEWCGROUP}) {
    EXPECT_EQ(Eval(Data(SYS_clone, {ns | SIGCHLD})), RefusalAction(EPERM)) << ns;
  }
}

// The fork gate (syscalls/fork_gate.h): exactly the fork's flags stop at the
// tracer; one flag more or less, another exit signal, is the filter's EPERM.
// The filter and the tracer's predicate agree on every value tried.
TEST(SeccompProgramTest, ForkGate) {
  for (auto table : {SyscallTable(), SyscallTableWithoutNamespaces(), SyscallTableWithSignalScope(),
                     SyscallTableAfterFork()}) {
    std::vector<sock_filter> prog = BuildSeccompFilter(table);
    EXPECT_LT(prog.size(), static_cast<size_t>(BPF_MAXINSNS));
    EXPECT_EQ(Eval(prog, Data(SYS_clone, {kForkCloneFlags})), SECCOMP_RET_TRACE);
    EXPECT_EQ(Eval(prog, Data(SYS_clone, {(uint64_t{0xdead} << 32) | kForkCloneFlags})),
              SECCOMP_RET_TRACE);
    EXPECT_EQ(Eval(prog, Data(SYS_clone, {(kForkCloneFlags & ~0xffu) | SIGUSR1})),
              RefusalAction(EPERM));
    EXPECT_EQ(Eval(prog, Data(SYS_clone, {kForkCloneFlags | CLONE_NEWCGROUP})),
              RefusalAction(EPERM));
    EXPECT_EQ(Eval(prog, Data(SYS_clone, {kForkCloneFlags | CLONE_VM})), RefusalAction(EPERM));
    EXPECT_EQ(Eval(prog, Data(SYS_clone, {kForkCloneFlags & ~CLONE_NEWUSER})),
              RefusalAction(EPERM));
    EXPECT_EQ(Eval(prog, Data(SYS_clone3, {kForkCloneFlags})), Errno(ENOSYS));
    std::vector<uint64_t> values = {kForkCloneFlags, SIGCHLD, 0, ~0ull};
    for (int bit = 0; bit < 64; ++bit) {
      values.push_back(kForkCloneFlags ^ (uint64_t{1} << bit));
      values.push_back(uint64_t{1} << bit);
    }
    for (uint64_t v : values) {
      uint32_t got = Eval(prog, Data(SYS_clone, {v}));
      EXPECT_EQ(got == SECCOMP_RET_TRACE, IsForkClone(SYS_clone, v)) << std::hex << v;
      EXPECT_TRUE(got == SECCOMP_RET_TRACE || got == SECCOMP_RET_ALLOW ||
                  got == RefusalAction(EPERM))
          << std::hex << v;
      uint32_t sec = Eval(prog, Data(SYS_seccomp, {SECCOMP_SET_MODE_FILTER, v}));
      EXPECT_EQ(sec, IsListenerRequest(SYS_seccomp, v) ? SECCOMP_RET_TRACE : SECCOMP_RET_ALLOW)
          << std::hex << v;
    }
  }
}

TEST(SeccompProgramTest, PersonalityAndPriorityFilters) {
  EXPECT_EQ(Eval(Data(SYS_personality, {0xffffffff})), SECCOMP_RET_ALLOW);
  EXPECT_EQ(Eval(Data(SYS_personality, {0})), SECCOMP_RET_ALLOW);
  EXPECT_EQ(Eval(Data(SYS_personality, {0x0040000 /* ADDR_NO_RANDOMIZE */})), RefusalAction(EPERM));
  EXPECT_EQ(Eval(Data(SYS_setpriority, {0 /* PRIO_PROCESS */, 0, 5})), SECCOMP_RET_ALLOW);
  EXPECT_EQ(Eval(Data(SYS_setpriority, {2 /* PRIO_USER */, 0, 5})), RefusalAction(EPERM));
  EXPECT_EQ(Eval(Data(SYS_ioprio_set, {1 /* IOPRIO_WHO_PROCESS */})), SECCOMP_RET_ALLOW);
  EXPECT_EQ(Eval(Data(SYS_ioprio_set, {3 /* IOPRIO_WHO_USER */})), RefusalAction(EPERM));
}

// --- the program loaded into the kernel ---

// Runs body in a forked child under the filter; returns the child's wait
// status. body returns 0 for success or the errno it saw.
int RunFiltered(const std::function<int()>& body) {
  pid_t pid = fork();
  if (pid == 0) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(250);
    sock_fprog prog{static_cast<unsigned short>(Program().size()),
                    const_cast<sock_filter*>(Program().data())};
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) _exit(251);
    _exit(body());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

// "OK", an errno's name, "exit N" or "signal NAME": what the child reported.
std::string Outcome(int status) {
  if (WIFSIGNALED(status)) return std::string("signal ") + sigabbrev_np(WTERMSIG(status));
  int code = WEXITSTATUS(status);
  if (code == 0) return "OK";
  if (code >= 250) return "setup failed " + std::to_string(code);
  const char* name = strerrorname_np(code);
  return name ? name : "exit " + std::to_string(code);
}

// Runs a raw syscall under the filter and reports its errno (or OK).
std::string Call(long nr, long a0 = 0, long a1 = 0, long a2 = 0, long a3 = 0) {
  return Outcome(RunFiltered([=] {
    long r = syscall(nr, a0, a1, a2, a3, 0, 0);
    return r < 0 ? errno : 0;
  }));
}

TEST(SeccompKernelTest, LoadsAndAllowsNativeCalls) {
  EXPECT_EQ(Outcome(RunFiltered([] {
              if (syscall(SYS_getpid) <= 0) return 1;
              if (syscall(SYS_gettid) <= 0) return 2;
              char buf[1] = {'x'};
              int p[2];
              if (pipe2(p, 0) != 0) return errno;
              if (write(p[1], buf, 1) != 1) return errno;
              return read(p[0], buf, 1) == 1 ? 0 : errno;
            })),
            "OK");
}

// Refusals worth listing go to the sentry, which answers EPERM and records
// them (e2e: SyscallWall tests); with no listener, as here, the kernel answers
// ENOSYS, which shows they left the filter for the listener. The others are
// the filter's own errno.
TEST(SeccompKernelTest, ErrnoRows) {
  EXPECT_EQ(Call(SYS_ptrace, PTRACE_TRACEME), "ENOSYS");
  io_uring_params params{};
  EXPECT_EQ(Call(SYS_io_uring_setup, 1, reinterpret_cast<long>(&params)), "ENOSYS");
  EXPECT_EQ(Call(SYS_unshare, CLONE_NEWUSER), "ENOSYS");
  EXPECT_EQ(Call(SYS_bpf, 0), "ENOSYS");
  EXPECT_EQ(Call(SYS_userfaultfd, 0), "ENOSYS");
  EXPECT_EQ(Call(SYS_pidfd_getfd, 0, 0, 0), "ENOSYS");
  EXPECT_EQ(Call(SYS_clone3, 0, 0), "ENOSYS");
  EXPECT_EQ(Call(SYS_getdents, 0, 0, 0), "ENOSYS");
  EXPECT_EQ(Call(SYS_socket, AF_NETLINK, SOCK_RAW, NETLINK_AUDIT), "EAFNOSUPPORT");
}

TEST(SeccompKernelTest, UnknownNumbersAreEnosys) {
  EXPECT_EQ(Call(1000), "ENOSYS");
  // Not 335 and 336 (uretprobe, uprobe since Linux 6.11/6.16): the kernel lets
  // them bypass seccomp, and calling them outside a probe trampoline is SIGILL.
  for (int nr : {400, 423, 457, 462, 511, 512}) EXPECT_EQ(Call(nr), "ENOSYS") << nr;
  EXPECT_EQ(Call(457), "ENOSYS");
}

TEST(SeccompKernelTest, TrapRowsWithoutAListenerAreEnosys) {
  EXPECT_EQ(Call(SYS_getcwd, 0, 0), "ENOSYS");
}

TEST(SeccompKernelTest, IoctlFilter) {
  // Without the filter this would be EBADF: the filter answers first.
  char c = 'x';
  EXPECT_EQ(Call(SYS_ioctl, -1, TIOCSTI, reinterpret_cast<long>(&c)), "ENOTTY");
  EXPECT_EQ(Call(SYS_ioctl, -1, FIONREAD, reinterpret_cast<long>(&c)), "EBADF");
  EXPECT_EQ(Outcome(RunFiltered([] {
              int p[2];
              if (pipe2(p, 0) != 0) return errno;
              if (write(p[1], "abc", 3) != 3) return errno;
              int n = -1;
              if (syscall(SYS_ioctl, p[0], FIONREAD, &n) != 0) return errno;
              return n == 3 ? 0 : 200;
            })),
            "OK");
}

TEST(SeccompKernelTest, SocketFilter) {
  EXPECT_EQ(Call(SYS_socket, AF_PACKET, SOCK_RAW, 0), "EAFNOSUPPORT");
  EXPECT_EQ(Call(SYS_socket, AF_NETLINK, SOCK_RAW, NETLINK_AUDIT), "EAFNOSUPPORT");
  EXPECT_EQ(Call(SYS_socket, AF_NETLINK, SOCK_RAW, NETLINK_ROUTE), "OK");
  EXPECT_EQ(Call(SYS_socket, AF_UNIX, SOCK_STREAM, 0), "OK");
  EXPECT_EQ(Call(SYS_socket, AF_INET, SOCK_DGRAM, 0), "OK");
}

TEST(SeccompKernelTest, PrctlFilter) {
  EXPECT_EQ(Call(SYS_prctl, PR_SET_MM, PR_SET_MM_START_CODE, 0x1000), "EINVAL");
  // A query the kernel would answer: only the filter can make it EINVAL.
  EXPECT_EQ(Call(SYS_prctl, PR_GET_SECUREBITS), "EINVAL");
  EXPECT_EQ(Call(SYS_prctl, PR_SET_NAME, reinterpret_cast<long>("filtered")), "OK");
  EXPECT_EQ(Call(SYS_prctl, PR_GET_DUMPABLE), "OK");
}

TEST(SeccompKernelTest, CloneFilter) {
  EXPECT_EQ(Outcome(RunFiltered([] {
              long r = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
              if (r == 0) _exit(0);  // only if the filter let it through
              return r < 0 ? errno : 0;
            })),
            "ENOSYS");
  EXPECT_EQ(Outcome(RunFiltered([] {
              long r = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
              if (r == 0) _exit(0);
              if (r < 0) return errno;
              int status;
              return waitpid(static_cast<pid_t>(r), &status, 0) == r ? 0 : errno;
            })),
            "OK");
}

// The gated calls with no tracer (a CLONE_UNTRACED child's): the kernel
// fails a SECCOMP_RET_TRACE with ENOSYS, so neither runs natively.
TEST(SeccompKernelTest, GatedCallsWithoutATracerAreEnosys) {
  EXPECT_EQ(Outcome(RunFiltered([] {
              long r = syscall(SYS_clone, kForkCloneFlags, 0, 0, 0, 0);
              if (r == 0) _exit(0);  // only if the filter let it through
              return r < 0 ? errno : 0;
            })),
            "ENOSYS");
  EXPECT_EQ(Outcome(RunFiltered([] {
              sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
              sock_fprog own{1, &allow};
              long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                               SECCOMP_FILTER_FLAG_NEW_LISTENER, &own);
              return r < 0 ? errno : 0;
            })),
            "ENOSYS");
  // Without a listener flag a guest still narrows its own calls.
  EXPECT_EQ(Outcome(RunFiltered([] {
              sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
              sock_fprog own{1, &allow};
              long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &own);
              if (r >= 0) close(static_cast<int>(r));
              return r < 0 ? errno : 0;
            })),
            "OK");
}

TEST(SeccompKernelTest, X32NumberKillsWithSigsys) {
  EXPECT_EQ(Outcome(RunFiltered([] { return static_cast<int>(syscall(kX32 | SYS_getpid)); })),
            "signal SYS");
}

}  // namespace
}  // namespace sentry
