// The guest half of census_trace_test: native calls whose arguments are all
// registers (fds, sizes, flags, signals), a call the table refuses, and a
// forked child, run natively under `strace -f` and under `sentry run --census
// --trace-file`. Every fd number is fixed (close_range first), so both traces
// read the same but for what differs by design.
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
  syscall(SYS_close_range, 3, ~0U, 0);
  access("/census-probe-begin", F_OK);  // where the compared traces start
  int fd = open("/dev/null", O_WRONLY);
  write(fd, "census", 6);
  lseek(fd, 0, SEEK_END);
  dup2(fd, 10);
  fcntl(10, F_SETFD, FD_CLOEXEC);
  close(10);
  void* p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  mprotect(p, 4096, PROT_READ);
  munmap(p, 4096);
  syscall(SYS_umount2, "/census-probe-none", 0);  // a refused row under sentry
  pid_t child = fork();
  if (child == 0) {
    write(fd, "child", 5);
    kill(0, 0);
    _exit(7);
  }
  int status = 0;
  wait4(-1, &status, 0, NULL);
  close(fd);
  return WEXITSTATUS(status) == 7 ? 0 : 1;
}
