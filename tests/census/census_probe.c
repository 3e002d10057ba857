// census_probe N M: a guest whose syscalls are known, for census_test. Inside
// a census phase named "probe" it makes N getpid (native), M openat of a
// missing file (trapped: ENOENT), 3 ptrace (an errno row the sentry answers:
// EPERM), 2 socket(AF_PACKET) (refused by the filter: EAFNOSUPPORT) and one
// call of a number no kernel has (ENOSYS), then ends the phase. Linked
// statically: no dynamic loader adds calls of its own.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CENSUS_MARK 0x53454e  // loader/census_filter.h: kCensusMarkNr

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  int n = atoi(argv[1]), m = atoi(argv[2]);
  syscall(CENSUS_MARK, "probe");
  for (int i = 0; i < n; ++i) syscall(SYS_getpid);
  int enoent = 0;
  for (int i = 0; i < m; ++i) {
    if (syscall(SYS_openat, AT_FDCWD, "/no/such/file", O_RDONLY) < 0 && errno == ENOENT) ++enoent;
  }
  int eperm = 0;
  for (int i = 0; i < 3; ++i) {
    if (ptrace(PTRACE_TRACEME, 0, 0, 0) < 0 && errno == EPERM) ++eperm;
  }
  int eafnosupport = 0;
  for (int i = 0; i < 2; ++i) {
    if (socket(AF_PACKET, SOCK_RAW, 0) < 0 && errno == EAFNOSUPPORT) ++eafnosupport;
  }
  int enosys = syscall(1000) < 0 && errno == ENOSYS;
  syscall(CENSUS_MARK, "");
  printf("enoent=%d eperm=%d eafnosupport=%d enosys=%d\n", enoent, eperm, eafnosupport, enosys);
  return 0;
}
