#include "tests/session/fork_probe_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/user.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace fork_probe {

int g_results = -1;

void Report(const std::string& line) {
  std::string l = line + "\n";
  (void)!write(g_results, l.data(), l.size());
  if (getenv("FORK_PROBE_VERBOSE")) (void)!write(2, l.data(), l.size());
}
void Check(bool ok, const std::string& name, const std::string& detail) {
  Report(ok ? "ok " + name
            : "FAIL " + name + ": " + detail + " (errno " + std::strerror(errno) + ")");
}

long RawClone(unsigned long flags) {
  return syscall(SYS_clone, flags, nullptr, nullptr, nullptr, 0);
}

bool WriteFile(const std::string& path, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

std::string NsId(pid_t pid, const char* ns) {
  char buf[128] = {};
  std::string path = "/proc/" + std::to_string(pid) + "/ns/" + ns;
  ssize_t n = readlink(path.c_str(), buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, n) : "?";
}

// The process group of a host pid (/proc/PID/stat's fifth field).
int Pgrp(pid_t pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/stat";
  FILE* f = std::fopen(path.c_str(), "r");
  int pgrp = -1;
  if (f != nullptr) {
    (void)!std::fscanf(f, "%*d %*s %*c %*d %d", &pgrp);  // comm is ours: no spaces
    std::fclose(f);
  }
  return pgrp;
}

// A filter: every syscall in `notify` goes to a new listener, the rest runs.
// With fork_gate (the sandbox's own filter): clone with exactly the fork's
// flags stops for the ptracer (SECCOMP_RET_TRACE), who allows it only when a
// fork was granted; clone with any other namespace flag fails EPERM, as the
// table's clone row does today.
int InstallFilter(const std::vector<int>& notify, bool fork_gate, unsigned flags) {
  std::vector<sock_filter> prog;
  prog.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
  prog.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0));
  prog.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
  prog.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
  if (fork_gate) {
    constexpr uint32_t kAll = kSandboxFlags | CLONE_NEWCGROUP;
    prog.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 8));
    prog.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0]) + 4));
    prog.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0));
    prog.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM));
    prog.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])));
    prog.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(kForkFlags), 0, 1));
    prog.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE));
    prog.push_back(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, kAll, 0, 1));
    prog.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM));
    prog.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
    // seccomp() asking for a listener stops for the ptracer too.
    prog.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_seccomp, 0, 4));
    prog.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[1])));
    prog.push_back(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, SECCOMP_FILTER_FLAG_NEW_LISTENER, 0, 1));
    prog.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE));
    prog.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
  }
  for (int nr : notify) {
    prog.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, 1));
    prog.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF));
  }
  prog.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  sock_fprog fprog{static_cast<unsigned short>(prog.size()), prog.data()};
  return static_cast<int>(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &fprog));
}

void DropCaps() {
  for (int cap = 0; cap <= CAP_LAST_CAP; ++cap) prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  syscall(SYS_capset, &hdr, data);
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

bool LoopbackUp() {
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ifreq ifr{};
  std::strcpy(ifr.ifr_name, "lo");
  bool ok = s >= 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0;
  ifr.ifr_flags |= IFF_UP;
  ok = ok && ioctl(s, SIOCSIFFLAGS, &ifr) == 0;
  close(s);
  return ok;
}

void ReadLine(int fd, char* buf, size_t n) {
  size_t i = 0;
  while (i + 1 < n && read(fd, buf + i, 1) == 1 && buf[i] != '\n') ++i;
  buf[i] = 0;
}

// At the seccomp stop of a granted seccomp(NEW_LISTENER): runs the call to
// its exit, takes the listener with pidfd_getfd, then has the stopped task
// close its own copy (its registers rewritten to close(fd), then restored),
// so the guest never runs holding a listener. Returns the supervisor's fd.
int TakeListenerAt(pid_t tid, int pidfd, int* deferred_signal) {
  *deferred_signal = 0;
  int st = 0;
  // To the next syscall stop. A signal that comes first (the guest's
  // SIGCHLD when its child stops or continues) is held back and handed to
  // the caller, which delivers it when it resumes the task.
  auto step = [&] {
    for (int i = 0; i < 8; ++i) {
      if (ptrace(PTRACE_SYSCALL, tid, 0, 0) != 0 || waitpid(tid, &st, __WALL) != tid ||
          !WIFSTOPPED(st)) {
        return false;
      }
      if (WSTOPSIG(st) == (SIGTRAP | 0x80)) return true;
      if ((st >> 16) == 0) *deferred_signal = WSTOPSIG(st);
    }
    return false;
  };
  if (!step()) return -1;  // the call's exit
  user_regs_struct regs{};
  ptrace(PTRACE_GETREGS, tid, 0, &regs);
  long fd = static_cast<long>(regs.rax);
  if (fd < 0) return -1;
  int mine = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, fd, 0));
  user_regs_struct inject = regs;
  inject.rax = SYS_close;
  inject.rdi = static_cast<unsigned long long>(fd);
  inject.rip -= 2;  // the syscall instruction again
  ptrace(PTRACE_SETREGS, tid, 0, &inject);
  bool closed = step() && step();  // the close's entry and exit
  user_regs_struct after{};
  ptrace(PTRACE_GETREGS, tid, 0, &after);
  closed = closed && after.rax == 0;
  ptrace(PTRACE_SETREGS, tid, 0, &regs);
  if (!closed && mine >= 0) close(mine);
  return closed ? mine : -1;
}

}  // namespace fork_probe
