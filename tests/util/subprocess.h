// Runs a program to completion and captures what it printed: how the e2e and
// security tests drive the real sentry binary.
#ifndef SENTRY_TESTS_UTIL_SUBPROCESS_H_
#define SENTRY_TESTS_UTIL_SUBPROCESS_H_

#include <string>
#include <vector>

namespace sentry::testing {

struct ProcessResult {
  int exit_code = -1;  // 128+N when killed by signal N
  std::string out;
  std::string err;
  bool timed_out = false;
  size_t input_written = 0;  // bytes of `input` written before the stdin pipe broke (or all)
};

// argv[0] is a path. stdin gets `input` (a program that stops reading it
// ends the writing: EPIPE, never this process's SIGPIPE). Killed after
// timeout_sec.
ProcessResult RunProcess(const std::vector<std::string>& argv, const std::string& input = "",
                         double timeout_sec = 60);

// The sentry binary under test (set by CMake).
std::string SentryBinary();

// `sentry run [flags...] -- cmd...`
// `sentry run FLAGS -- CMD`, with $SENTRY_RUN_FLAGS first if it is set.
std::vector<std::string> SentryRunArgv(const std::vector<std::string>& flags,
                                       const std::vector<std::string>& cmd);
ProcessResult RunSentry(const std::vector<std::string>& flags, const std::vector<std::string>& cmd,
                        const std::string& input = "", double timeout_sec = 60);

// `sentry run -- /usr/bin/python3 -c code`
ProcessResult RunPython(const std::string& code, const std::vector<std::string>& flags = {});

}  // namespace sentry::testing

#endif  // SENTRY_TESTS_UTIL_SUBPROCESS_H_
