// Helpers for the e2e tests: host temp dirs, running a program from a chosen
// directory with extra environment, and running one Python script both natively
// and under sentry so that their outputs can be compared.
#ifndef SENTRY_TESTS_E2E_E2E_UTIL_H_
#define SENTRY_TESTS_E2E_E2E_UTIL_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/util/subprocess.h"

namespace sentry::testing {

// A fresh host directory (under /tmp unless told), removed with everything in
// it at the end.
class TempDir final {
 public:
  explicit TempDir(const std::string& parent = "/tmp");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // Writes a file (making parent dirs) and returns its absolute path.
  std::string Write(const std::string& rel, const std::string& data, int mode = 0644) const;

 private:
  std::string path_;
};

// argv run with cwd as its working directory and env (K=V) added to the
// inherited environment; clean_env starts from an empty one instead.
ProcessResult RunIn(const std::string& cwd, const std::vector<std::string>& env,
                    const std::vector<std::string>& argv, bool clean_env = false,
                    const std::string& input = "", double timeout_sec = 60);

// `sentry run FLAGS -- CMD` started from cwd.
ProcessResult SentryIn(const std::string& cwd, const std::vector<std::string>& flags,
                       const std::vector<std::string>& cmd,
                       const std::vector<std::string>& env = {});

// `sentry ARGS` (any subcommand).
ProcessResult Sentry(const std::vector<std::string>& args, const std::string& input = "");

// A Python script run as `python3 script.py BASE` from a fresh directory that
// holds only script.py. BASE is where the script may write: /tmp in the
// sandbox, a separate fresh host directory natively (also its TMPDIR).
ProcessResult SandboxScript(const std::string& script, const std::vector<std::string>& flags = {});
ProcessResult NativeScript(const std::string& script);

// Lines of text as a map from "key=value" lines (other lines ignored).
std::map<std::string, std::string> KeyValues(const std::string& text);

// The directory holding this test binary.
std::string BinaryDir();

std::string ReadHostFile(const std::string& path);

// The sentry-* cgroups (pids hierarchy) that exist now.
std::set<std::string> SentryCgroups();

// Everything a failed run said, for test failure messages.
std::string Describe(const ProcessResult& r);

}  // namespace sentry::testing

#endif  // SENTRY_TESTS_E2E_E2E_UTIL_H_
