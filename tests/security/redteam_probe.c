// redteam_probe: the guest side of the red-team tests that need C (raw
// syscalls, a hostile stack pointer, a seccomp filter of the guest's own).
// Copied into the sandbox like escape_probe and run there; prints one line
// per attempt, "name=RESULT" (OK [value] or the errno's name).
//
//   rtprobe seccomp-trace HOSTPATH   the guest's own SECCOMP_RET_TRACE filter
//                                    on getpid, openat and execve, then execs
//   rtprobe exec-stack               execve with rsp unmapped, read-only, < 256
//   rtprobe exec-argv                execve with faulting/huge argv and envp
//   rtprobe vfork-exec HOSTPATH      vfork/CLONE_VM children that exec
//   rtprobe fsetown HOSTPID          F_SETOWN/O_ASYNC on stdio toward HOSTPID
//   rtprobe connect-race ITER OK BAD a thread flips a unix address during connect
//   rtprobe name-race ITER BAD       a thread flips the new name of rename, link,
//                                    symlink and mkdir between /tmp and BAD
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static void Report(const char* name, long r) {
  if (r < 0) {
    const char* e = strerrorname_np(errno);
    printf("%s=%s\n", name, e ? e : "E?");
  } else {
    printf("%s=OK %ld\n", name, r);
  }
  fflush(stdout);
}

// Forks; the child calls fn(arg) (which should exec) and reports its errno
// through a CLOEXEC pipe. "OK" when the exec happened (the pipe closed empty).
static void ExecInChild(const char* name, void (*fn)(void*), void* arg) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0) return Report(name, -1);
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    fn(arg);
    int e = errno;
    (void)!write(p[1], &e, sizeof(e));
    _exit(1);
  }
  close(p[1]);
  int e = 0;
  ssize_t n = read(p[0], &e, sizeof(e));
  close(p[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (n == (ssize_t)sizeof(e)) {
    errno = e;
    Report(name, -1);
  } else {
    printf("%s=OK exec status=%d\n", name, status);
    fflush(stdout);
  }
}

static void ExecPath(void* path) {
  char* argv[] = {(char*)path, NULL};
  char* envp[] = {NULL};
  execve((const char*)path, argv, envp);
}

// --- seccomp-trace ---

static int SeccompTrace(const char* host_path) {
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getpid, 3, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 2, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_execve, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      // Data the sentry's own exec rows might use, and more.
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE | 0x1),
  };
  struct sock_fprog prog = {sizeof(f) / sizeof(f[0]), f};
  Report("install", syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog));
  Report("getpid", syscall(SYS_getpid));
  Report("openat", syscall(SYS_openat, AT_FDCWD, "/etc/hostname", O_RDONLY));
  ExecInChild("exec sandbox", ExecPath, "/usr/bin/true");
  ExecInChild("exec host", ExecPath, (void*)host_path);
  ExecInChild("exec store", ExecPath, "/.sentry-store");
  return 0;
}

// --- exec-stack: the sentry writes the rewritten path below the caller's rsp ---

static long ExecveWithStack(const char* path, char* const* argv, uintptr_t rsp) {
  long ret;
  register long r10 __asm__("r10") = 0;
  __asm__ volatile(
      "mov %%rsp, %%r12\n\t"
      "mov %[sp], %%rsp\n\t"
      "syscall\n\t"
      "mov %%r12, %%rsp\n\t"
      : "=a"(ret)
      : "a"((long)SYS_execve), "D"(path), "S"(argv), "d"(NULL), [sp] "r"(rsp), "r"(r10)
      : "rcx", "r11", "r12", "memory");
  if (ret < 0) {
    errno = (int)-ret;
    return -1;
  }
  return ret;
}

struct StackCase {
  const char* path;
  uintptr_t rsp;
};

static void ExecStackCase(void* arg) {
  struct StackCase* c = arg;
  char* argv[] = {(char*)c->path, NULL};
  ExecveWithStack(c->path, argv, c->rsp);
}

static int ExecStack(void) {
  void* ro = mmap(NULL, 8192, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  void* none = mmap(NULL, 8192, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  char* own = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  struct StackCase cases[] = {
      {"/usr/bin/true", (uintptr_t)own + 65536 - 64},  // the control: a stack of its own
      {"/usr/bin/true", 0},
      {"/usr/bin/true", 200},  // rsp - 256 wraps around
      {"/usr/bin/true", (uintptr_t)ro + 4096},
      {"/usr/bin/true", (uintptr_t)none + 4096},
      {"/usr/bin/true", 0xffff800000001000ULL},  // a kernel address
      {"/usr/bin/true", 0x00007ffffffff000ULL},
  };
  const char* names[] = {"rsp own",       "rsp 0",      "rsp 200", "rsp read-only",
                         "rsp PROT_NONE", "rsp kernel", "rsp top"};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    ExecInChild(names[i], ExecStackCase, &cases[i]);
  }
  Report("alive", syscall(SYS_openat, AT_FDCWD, "/etc/hostname", O_RDONLY));
  return 0;
}

// --- exec-argv ---

static void ExecArgvUnterminated(void* unused) {
  (void)unused;
  // argv runs into a PROT_NONE page without a NULL.
  char* page = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  mprotect(page + 4096, 4096, PROT_NONE);
  char** argv = (char**)(page + 4096 - 2 * sizeof(char*));
  argv[0] = "/usr/bin/true";
  argv[1] = "x";
  execve("/usr/bin/true", argv, NULL);
}

static void ExecArgvBadPointer(void* unused) {
  (void)unused;
  char* argv[] = {"/usr/bin/true", (char*)0x10, NULL};
  execve("/usr/bin/true", argv, NULL);
}

static void ExecEnvpKernelPointer(void* unused) {
  (void)unused;
  char* argv[] = {"/usr/bin/true", NULL};
  char* envp[] = {(char*)0xffffffffff600000ULL, NULL};
  execve("/usr/bin/true", argv, envp);
}

static void ExecManyEmptyArgs(void* unused) {
  (void)unused;
  size_t n = 3u << 20;  // 3 Mi pointers: more than the 2 MiB ARG_MAX
  char** argv = calloc(n + 1, sizeof(char*));
  for (size_t i = 0; i < n; ++i) argv[i] = "";
  execve("/usr/bin/true", argv, NULL);
}

static void ExecPathAtPageEnd(void* unused) {
  (void)unused;
  char* page = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  mprotect(page + 4096, 4096, PROT_NONE);
  memset(page, 'a', 4096);  // no NUL before the unmapped page
  page[0] = '/';
  char* argv[] = {"x", NULL};
  execve(page, argv, NULL);
}

static int ExecArgv(void) {
  ExecInChild("argv unterminated", ExecArgvUnterminated, NULL);
  ExecInChild("argv bad pointer", ExecArgvBadPointer, NULL);
  ExecInChild("envp kernel pointer", ExecEnvpKernelPointer, NULL);
  ExecInChild("argv 3Mi empty", ExecManyEmptyArgs, NULL);
  ExecInChild("path at page end", ExecPathAtPageEnd, NULL);
  Report("alive", syscall(SYS_openat, AT_FDCWD, "/etc/hostname", O_RDONLY));
  return 0;
}

// --- vfork-exec ---

static const char* vfork_path;
static int VforkChild(void* unused) {
  (void)unused;
  char* argv[] = {(char*)vfork_path, NULL};
  execve(vfork_path, argv, NULL);
  return errno;
}

static void VforkExec(const char* name, const char* path, int flags) {
  vfork_path = path;
  size_t size = 64 << 10;
  char* stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  pid_t pid = clone(VforkChild, stack + size, flags | SIGCHLD, NULL);
  if (pid < 0) return Report(name, -1);
  int status = 0;
  waitpid(pid, &status, __WALL);
  // The child returns errno (exit code) if its exec failed, else the program's
  // code (true: 0).
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (code != 0 && code < 128) {
    errno = code;
    Report(name, -1);
  } else {
    printf("%s=OK exec status=%d\n", name, status);
    fflush(stdout);
  }
  munmap(stack, size);
}

static int VforkExecAll(const char* host_path) {
  VforkExec("vfork sandbox", "/usr/bin/true", CLONE_VM | CLONE_VFORK);
  VforkExec("vfork host", host_path, CLONE_VM | CLONE_VFORK);
  VforkExec("clone_vm sandbox", "/usr/bin/true", CLONE_VM);
  VforkExec("clone_vm host", host_path, CLONE_VM);
  VforkExec("clone_vm_files host", host_path, CLONE_VM | CLONE_FILES | CLONE_FS);
  Report("alive", syscall(SYS_openat, AT_FDCWD, "/etc/hostname", O_RDONLY));
  return 0;
}

// --- fsetown ---

static int Fsetown(pid_t host_pid) {
  char name[64];
  for (int fd = 0; fd < 3; ++fd) {
    snprintf(name, sizeof(name), "F_SETOWN %d host", fd);
    Report(name, fcntl(fd, F_SETOWN, host_pid));
    snprintf(name, sizeof(name), "F_SETOWN %d -host", fd);
    Report(name, fcntl(fd, F_SETOWN, -host_pid));
    struct f_owner_ex ex = {F_OWNER_PID, host_pid};
    snprintf(name, sizeof(name), "F_SETOWN_EX %d host", fd);
    Report(name, fcntl(fd, F_SETOWN_EX, &ex));
    snprintf(name, sizeof(name), "F_SETOWN %d 1", fd);
    Report(name, fcntl(fd, F_SETOWN, 1));
    snprintf(name, sizeof(name), "F_SETSIG %d", fd);
    Report(name, fcntl(fd, F_SETSIG, SIGKILL));
    snprintf(name, sizeof(name), "O_ASYNC %d", fd);
    Report(name, fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_ASYNC));
  }
  Report("kill host", kill(host_pid, 0));
  Report("write", write(1, "x\n", 2));
  return 0;
}

// --- connect-race ---

static _Atomic int stop_flip;
static struct sockaddr_un race_addr;
static const char* race_ok;
static const char* race_bad;

static void* Flip(void* unused) {
  (void)unused;
  size_t n = sizeof(race_addr.sun_path) - 1;
  while (!atomic_load(&stop_flip)) {
    strncpy(race_addr.sun_path, race_bad, n);
    strncpy(race_addr.sun_path, race_ok, n);
  }
  return NULL;
}

static void* AcceptAll(void* arg) {
  int l = *(int*)arg;
  while (1) {
    int c = accept(l, NULL, NULL);
    if (c < 0) return NULL;
    close(c);
  }
}

// The guest listens on OK itself; a thread flips the address between OK and
// BAD while the main thread connects: connected counts the OK side won,
// refused the BAD side (both must happen for the race to have run).
static int ConnectRace(int iterations, const char* ok, const char* bad) {
  int l = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un la = {.sun_family = AF_UNIX};
  strncpy(la.sun_path, ok, sizeof(la.sun_path) - 1);
  unlink(ok);
  if (bind(l, (struct sockaddr*)&la, sizeof(la)) < 0 || listen(l, 512) < 0) {
    Report("listen", -1);
    return 1;
  }
  pthread_t acceptor;
  pthread_create(&acceptor, NULL, AcceptAll, &l);
  race_ok = ok;
  race_bad = bad;
  race_addr.sun_family = AF_UNIX;
  strncpy(race_addr.sun_path, ok, sizeof(race_addr.sun_path) - 1);
  pthread_t t;
  pthread_create(&t, NULL, Flip, NULL);
  int connected = 0, refused = 0, other = 0;
  for (int i = 0; i < iterations; ++i) {
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    if (connect(s, (struct sockaddr*)&race_addr, sizeof(race_addr)) == 0) {
      ++connected;
    } else if (errno == ENOENT || errno == ECONNREFUSED) {
      ++refused;
    } else {
      ++other;
    }
    close(s);
  }
  atomic_store(&stop_flip, 1);
  pthread_join(t, NULL);
  printf("connected=%d\nrefused=%d\nother=%d\n", connected, refused, other);
  return 0;
}

// --- name-race ---

static char name_buf[256];
static const char* name_ok;
static const char* name_bad;

static void* FlipName(void* unused) {
  (void)unused;
  while (!atomic_load(&stop_flip)) {
    strcpy(name_buf, name_bad);
    strcpy(name_buf, name_ok);
  }
  return NULL;
}

// Whether the sentry reads the new name once: a check on /tmp/... and an
// act on BAD (which uid 1000 may not create) would leave BAD behind.
static int NameRace(int iterations, const char* bad) {
  static const char* ops[] = {"rename", "link", "symlink", "mkdir"};
  name_ok = "/tmp/race-new";
  name_bad = bad;
  for (int op = 0; op < 4; ++op) {
    atomic_store(&stop_flip, 0);
    strcpy(name_buf, name_ok);
    pthread_t t;
    pthread_create(&t, NULL, FlipName, NULL);
    int ok = 0, denied = 0, other = 0, leaked = 0;
    for (int i = 0; i < iterations; ++i) {
      int fd = open("/tmp/race-src", O_CREAT | O_WRONLY, 0644);
      if (fd >= 0) close(fd);
      int r = -1;
      switch (op) {
        case 0:
          r = rename("/tmp/race-src", name_buf);
          break;
        case 1:
          r = link("/tmp/race-src", name_buf);
          break;
        case 2:
          r = symlink("/tmp/race-src", name_buf);
          break;
        case 3:
          r = mkdir(name_buf, 0755);
          break;
      }
      if (r == 0) {
        ++ok;
      } else if (errno == EACCES || errno == EPERM || errno == EROFS || errno == ENOENT) {
        ++denied;
      } else {
        ++other;
      }
      struct stat st;
      if (lstat(bad, &st) == 0) ++leaked;
      if (op == 3) {
        rmdir("/tmp/race-new");
      } else {
        unlink("/tmp/race-new");
      }
    }
    atomic_store(&stop_flip, 1);
    pthread_join(t, NULL);
    printf("%s=ok:%d denied:%d other:%d leaked:%d\n", ops[op], ok, denied, other, leaked);
    fflush(stdout);
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const char* cmd = argv[1];
  if (!strcmp(cmd, "seccomp-trace") && argc == 3) return SeccompTrace(argv[2]);
  if (!strcmp(cmd, "exec-stack")) return ExecStack();
  if (!strcmp(cmd, "exec-argv")) return ExecArgv();
  if (!strcmp(cmd, "vfork-exec") && argc == 3) return VforkExecAll(argv[2]);
  if (!strcmp(cmd, "fsetown") && argc == 3) return Fsetown(atoi(argv[2]));
  if (!strcmp(cmd, "name-race") && argc == 4) return NameRace(atoi(argv[2]), argv[3]);
  if (!strcmp(cmd, "connect-race") && argc == 5) {
    return ConnectRace(atoi(argv[2]), argv[3], argv[4]);
  }
  fprintf(stderr, "rtprobe: unknown command\n");
  return 2;
}
