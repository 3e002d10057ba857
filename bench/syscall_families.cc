// bench_syscall_families: one benchmark per family of calls the sentry traps that
// bench_native_ops does not cover, plus futex (native), for bench/coverage.sh.
//
// Run natively, as a guest under sentry and under runsc; coverage.sh turns the
// difference to native into round trips of the bare unotify floor (bench_unotify,
// same run). Each benchmark's label says how many syscalls one iteration makes, so
// that the cost per call can be read off. It touches only /usr (read), /tmp (its
// own files and directories, removed again) and 127.0.0.1.

#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace {

constexpr const char* kExistingPath = "/usr/bin/python3";

std::string ErrnoMessage(const std::string& what) { return what + ": " + strerror(errno); }

// A name under /tmp unique to this process (the benchmark's own scratch entry).
std::string TmpName(const char* what) {
  return std::string("/tmp/bench_families.") + std::to_string(getpid()) + "." + what;
}

// access(2) on a host file (trapped: it names a path).
void BM_Access(benchmark::State& state) {
  for (auto _ : state) {
    if (access(kExistingPath, R_OK) != 0) {
      state.SkipWithError(ErrnoMessage("access").c_str());
      break;
    }
  }
  state.SetLabel("1 call");
}
BENCHMARK(BM_Access);

// readlink(2) of a symlink the guest made in /tmp.
void BM_Readlink(benchmark::State& state) {
  std::string link = TmpName("link");
  unlink(link.c_str());
  if (symlink(kExistingPath, link.c_str()) != 0) {
    state.SkipWithError(ErrnoMessage("symlink").c_str());
    return;
  }
  char buf[256];
  for (auto _ : state) {
    if (readlink(link.c_str(), buf, sizeof(buf)) < 0) {
      state.SkipWithError(ErrnoMessage("readlink").c_str());
      break;
    }
  }
  unlink(link.c_str());
  state.SetLabel("1 call");
}
BENCHMARK(BM_Readlink);

// mkdir + rmdir of one directory in /tmp.
void BM_MkdirRmdir(benchmark::State& state) {
  std::string dir = TmpName("dir");
  rmdir(dir.c_str());
  for (auto _ : state) {
    if (mkdir(dir.c_str(), 0700) != 0 || rmdir(dir.c_str()) != 0) {
      state.SkipWithError(ErrnoMessage("mkdir/rmdir").c_str());
      break;
    }
  }
  state.SetLabel("2 calls");
}
BENCHMARK(BM_MkdirRmdir);

// rename there and back (two renames of one file in /tmp).
void BM_RenamePair(benchmark::State& state) {
  std::string a = TmpName("a");
  std::string b = TmpName("b");
  int fd = open(a.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) {
    state.SkipWithError(ErrnoMessage("create").c_str());
    return;
  }
  close(fd);
  for (auto _ : state) {
    if (rename(a.c_str(), b.c_str()) != 0 || rename(b.c_str(), a.c_str()) != 0) {
      state.SkipWithError(ErrnoMessage("rename").c_str());
      break;
    }
  }
  unlink(a.c_str());
  state.SetLabel("2 calls");
}
BENCHMARK(BM_RenamePair);

// Create a file, close it and unlink it (openat O_CREAT, close, unlink).
void BM_CreateUnlink(benchmark::State& state) {
  std::string f = TmpName("f");
  for (auto _ : state) {
    int fd = open(f.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0) {
      state.SkipWithError(ErrnoMessage("create").c_str());
      break;
    }
    close(fd);
    if (unlink(f.c_str()) != 0) {
      state.SkipWithError(ErrnoMessage("unlink").c_str());
      break;
    }
  }
  state.SetLabel("3 calls (2 trapped)");
}
BENCHMARK(BM_CreateUnlink);

// chdir to /tmp and getcwd.
void BM_ChdirGetcwd(benchmark::State& state) {
  char buf[4096];
  for (auto _ : state) {
    if (chdir("/tmp") != 0 || getcwd(buf, sizeof(buf)) == nullptr) {
      state.SkipWithError(ErrnoMessage("chdir/getcwd").c_str());
      break;
    }
  }
  state.SetLabel("2 calls");
}
BENCHMARK(BM_ChdirGetcwd);

// A UDP socket bound to 127.0.0.1:0 and connected to a listening one, then closed.
void BM_SocketBindConnectClose(benchmark::State& state) {
  int peer = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (peer < 0 || bind(peer, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(peer, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    state.SkipWithError(ErrnoMessage("peer socket").c_str());
    if (peer >= 0) close(peer);
    return;
  }
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (auto _ : state) {
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0 || bind(s, reinterpret_cast<sockaddr*>(&any), sizeof(any)) != 0 ||
        connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      state.SkipWithError(ErrnoMessage("socket/bind/connect").c_str());
      if (s >= 0) close(s);
      break;
    }
    close(s);
  }
  close(peer);
  state.SetLabel("4 calls (bind, connect trapped)");
}
BENCHMARK(BM_SocketBindConnectClose);

// sendto with an address to a UDP socket on 127.0.0.1, and the datagram read back.
void BM_SendtoAddrRecv(benchmark::State& state) {
  int rx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  int tx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (rx < 0 || tx < 0 || bind(rx, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(rx, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    state.SkipWithError(ErrnoMessage("udp sockets").c_str());
    if (rx >= 0) close(rx);
    if (tx >= 0) close(tx);
    return;
  }
  char buf[64] = "ping";
  for (auto _ : state) {
    if (sendto(tx, buf, 4, 0, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 4 ||
        recv(rx, buf, sizeof(buf), 0) != 4) {
      state.SkipWithError(ErrnoMessage("sendto/recv").c_str());
      break;
    }
  }
  close(rx);
  close(tx);
  state.SetLabel("2 calls (sendto trapped)");
}
BENCHMARK(BM_SendtoAddrRecv);

// kill(getpid(), 0): a pid call, native (the sandbox's pid namespace confines it).
void BM_KillSelfZero(benchmark::State& state) {
  pid_t me = getpid();
  for (auto _ : state) {
    if (kill(me, 0) != 0) {
      state.SkipWithError(ErrnoMessage("kill").c_str());
      break;
    }
  }
  state.SetLabel("1 call");
}
BENCHMARK(BM_KillSelfZero);

// FUTEX_WAKE with no waiter: the cheapest futex call (native everywhere).
void BM_FutexWakeNone(benchmark::State& state) {
  int word = 0;
  for (auto _ : state) {
    long r = syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
    benchmark::DoNotOptimize(r);
  }
  state.SetLabel("1 call");
}
BENCHMARK(BM_FutexWakeNone);

// fork, execve /bin/true and wait: one execve per iteration (and the process it makes).
void BM_ForkExecveWait(benchmark::State& state) {
  for (auto _ : state) {
    pid_t pid = fork();
    if (pid == 0) {
      char* const argv[] = {const_cast<char*>("/bin/true"), nullptr};
      char* const envp[] = {nullptr};
      execve("/bin/true", argv, envp);
      _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
      state.SkipWithError(ErrnoMessage("fork/execve/wait").c_str());
      break;
    }
  }
  state.SetLabel("1 execve (+ fork, wait, the child's start)");
}
BENCHMARK(BM_ForkExecveWait)->Iterations(50);

}  // namespace

BENCHMARK_MAIN();
