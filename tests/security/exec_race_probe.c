// The guest half of exec_race_test: races the path the sentry hands the kernel
// at an execve's ptrace stop.
//
//   exec_race_probe MODE TRIES SWAP TARGET [ARGS...]
//
// MODE: "execve" (execve(TARGET)) or "fd" (execveat(open(TARGET), "",
// AT_EMPTY_PATH)). Each try forks a child whose execve runs on a stack of the
// probe's own (so the attacker knows where the sentry writes: below the red zone
// of rsp) while a sibling thread spins on that area: as soon as a path appears
// there (the topmost NUL-terminated string starting with '/' on a 16-byte
// boundary: the sentry pushes the path first, a script's argv words below it)
// it overwrites it with SWAP, hoping the kernel reads it after the sentry's
// check. The parent classifies each child's end by its status:
//   planned  exit 0 (TARGET ran; it must exit 0)
//   swapped  exit 1 (SWAP ran: choose a SWAP that exits 1, e.g. /usr/bin/false)
//   killed   SIGKILL (the sentry saw another file run and killed it)
//   failed   exit 42 (the execve returned: a half-written path, ENOENT...)
//   other    anything else (the first one's status and stderr are printed)
// and counts the tries in which the racer wrote SWAP before the child ended.
// Prints one line: "tries=N planned=.. swapped=.. killed=.. failed=.. other=..
// raced=..".
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

enum { kStackSize = 1 << 16, kRedZone = 256, kWindow = 4096, kExecReturned = 42 };

static char stack_area[kStackSize] __attribute__((aligned(4096)));
static const char* swap_path;
static size_t swap_len;
static atomic_int go;
static atomic_int* raced;  // shared with the parent: the racer wrote in this try

// The path the sentry pushed last is the topmost string under the red zone:
// everything above it in the window is still zero.
static void* Racer(void* arg) {
  (void)arg;
  volatile char* top = (volatile char*)(stack_area + kStackSize - kRedZone);
  volatile char* lo = top - kWindow;
  while (!atomic_load(&go)) {
  }
  for (;;) {
    volatile char* e = top - 1;
    while (e >= lo && *e == 0) --e;
    if (e < lo) continue;
    volatile char* p = e;
    while (p > lo && p[-1] != 0) --p;
    if (p[0] != '/' || ((uintptr_t)p & 15)) continue;
    // The scan down is not atomic: the sentry may have pushed the path above
    // while it ran. Only if nothing is above the string now is it the path
    // (pushed first, highest); else it is an argv word of a script's exec,
    // which is the guest's own to change and not what this probe attacks.
    volatile char* q = e + 1;
    while (q < top && *q == 0) ++q;
    if (q != top) continue;
    size_t i = 0;
    while (i <= swap_len && p[i] == swap_path[i]) ++i;
    if (i > swap_len) continue;  // already ours
    for (i = 0; i <= swap_len; ++i) p[i] = swap_path[i];
    atomic_store(raced, 1);
  }
  return NULL;
}

// execveat with rsp at `stack` for the duration of the call.
static long ExecOnStack(char* stack, int dirfd, const char* path, char* const argv[],
                        char* const envp[], long flags) {
  long ret;
  register long r10 __asm__("r10") = (long)envp;
  register long r8 __asm__("r8") = flags;
  __asm__ volatile(
      "mov %%rsp, %%r12\n\t"
      "mov %[stack], %%rsp\n\t"
      "syscall\n\t"
      "mov %%r12, %%rsp\n\t"
      : "=a"(ret)
      : "a"((long)SYS_execveat), "D"((long)dirfd), "S"(path), "d"(argv), "r"(r10),
        "r"(r8), [stack] "r"(stack)
      : "rcx", "r11", "r12", "memory");
  return ret;
}

static void Child(int by_fd, char** argv) {
  static char* envp[] = {"PATH=/usr/bin:/bin", NULL};
  pthread_t t;
  if (pthread_create(&t, NULL, Racer, NULL) != 0) _exit(kExecReturned + 1);
  int dirfd = AT_FDCWD;
  const char* path = argv[0];
  long flags = 0;
  if (by_fd) {
    dirfd = open(argv[0], O_RDONLY);  // not O_CLOEXEC: a script's interpreter opens /dev/fd/N
    if (dirfd < 0) _exit(kExecReturned + 2);
    path = "";
    flags = AT_EMPTY_PATH;
  }
  atomic_store(&go, 1);
  ExecOnStack(stack_area + kStackSize, dirfd, path, argv, envp, flags);
  _exit(kExecReturned);
}

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s execve|fd TRIES SWAP TARGET [ARGS...]\n", argv[0]);
    return 2;
  }
  int by_fd = strcmp(argv[1], "fd") == 0;
  long tries = atol(argv[2]);
  swap_path = argv[3];
  swap_len = strlen(swap_path);
  raced = mmap(NULL, sizeof(*raced), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (raced == MAP_FAILED) return 2;
  int null = open("/dev/null", O_WRONLY);
  long planned = 0, swapped = 0, killed = 0, failed = 0, other = 0, won = 0;
  int first_other = -1;
  static char first_other_err[512];
  for (long i = 0; i < tries; ++i) {
    atomic_store(raced, 0);
    // The child's stderr, kept for the first try that ends in no known way.
    int err = first_other < 0 ? memfd_create("stderr", MFD_CLOEXEC) : -1;
    pid_t pid = fork();
    if (pid < 0) return 3;
    if (pid == 0) {
      dup2(null, 1);
      dup2(err >= 0 ? err : null, 2);
      Child(by_fd, argv + 4);
    }
    int st;
    if (waitpid(pid, &st, 0) < 0) return 3;
    won += atomic_load(raced);
    if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) {
      ++killed;
    } else if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
      ++planned;
    } else if (WIFEXITED(st) && WEXITSTATUS(st) == 1) {
      ++swapped;
    } else if (WIFEXITED(st) && WEXITSTATUS(st) == kExecReturned) {
      ++failed;
    } else {
      ++other;
      if (first_other < 0) {
        first_other = st;
        ssize_t n = pread(err, first_other_err, sizeof(first_other_err) - 1, 0);
        first_other_err[n > 0 ? n : 0] = 0;
        for (char* c = first_other_err; *c; ++c) {
          if (*c == '\n' || *c == ' ') *c = '_';
        }
      }
    }
    if (err >= 0) close(err);
  }
  printf("tries=%ld planned=%ld swapped=%ld killed=%ld failed=%ld other=%ld raced=%ld", tries,
         planned, swapped, killed, failed, other, won);
  if (first_other >= 0) {
    printf(" first_other_status=0x%x first_other_stderr=%s", first_other, first_other_err);
  }
  printf("\n");
  return 0;
}
