# expect: contained
# The x32 ABI and the 32-bit syscall entry (int $0x80), used to slip past a
# filter written for x86-64 numbers: kill(-1) and mount by their x32/i386
# numbers. (Kernels without IA-32 emulation answer int $0x80 with SIGSEGV.)
cat > /tmp/c.c <<'C'
#include <stdio.h>
int main(void) {
  long r;
  setvbuf(stdout, NULL, _IONBF, 0);
  /* x32 kill(-1, SIGKILL): 62 | __X32_SYSCALL_BIT */
  __asm__ volatile("syscall" : "=a"(r) : "a"(62L | 0x40000000L), "D"(-1L), "S"(9L) : "rcx", "r11", "memory");
  printf("x32 kill %ld\n", r);
  /* i386 mount = 21 */
  __asm__ volatile("int $0x80" : "=a"(r) : "a"(21L), "b"(0L), "c"(0L), "d"(0L), "S"(0L) : "memory");
  printf("int80 mount %ld\n", r);
  return 0;
}
C
gcc -o /tmp/c /tmp/c.c && /tmp/c; echo "status $?"
