// Prints SessionKernelSource(), the program a session's sandbox runs as
// `python3 -c PROGRAM`, for kernel_test.py to run it as a session does.
#include <cstdio>

#include "sentry/session/kernel_source.h"

int main() {
  std::string_view program = sentry::SessionKernelSource();
  return std::fwrite(program.data(), 1, program.size(), stdout) == program.size() ? 0 : 1;
}
