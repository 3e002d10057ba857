/* A small C program for the gcc workload of bench/coverage.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  char buf[64];
  snprintf(buf, sizeof(buf), "%d args", argc);
  printf("%s %zu\n", buf, strlen(argv[0]));
  return EXIT_SUCCESS;
}
