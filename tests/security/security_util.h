// Helpers for the escape-attempt suite: running attacks in the sandbox, parsing
// what they report, and checking on the host side that nothing changed.
#ifndef SENTRY_TESTS_SECURITY_SECURITY_UTIL_H_
#define SENTRY_TESTS_SECURITY_SECURITY_UTIL_H_

#include <sys/types.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tests/util/subprocess.h"

namespace sentry::security {

using sentry::testing::ProcessResult;

// --- running attacks ---

// The host path of the escape_probe binary (set by CMake).
std::string ProbePath();
// Where the probe is copied inside the sandbox.
inline constexpr const char* kGuestProbe = "/tmp/probe";

// `sentry run --copy PROBE:/tmp/probe [flags] -- /tmp/probe args...`
ProcessResult RunProbe(const std::vector<std::string>& args,
                       const std::vector<std::string>& flags = {}, double timeout_sec = 60);

// `sentry run [flags] -- python3 -c PRELUDE+body`. The prelude defines
// t(name, fn): runs fn() and prints "name=OK repr" or "name=ERRNO_NAME".
ProcessResult RunPy(const std::string& body, const std::vector<std::string>& flags = {},
                    double timeout_sec = 60);

// "name=VALUE ..." lines, by name (the last line of a name wins).
using Results = std::map<std::string, std::string>;
Results ParseResults(const std::string& out);
// The first word of a result ("OK", "ENOENT"), or "<missing>".
std::string Code(const Results& r, const std::string& name);
// Everything after "OK " for a t() line (the repr of the value).
std::string Value(const Results& r, const std::string& name);

// A Python string literal for s.
std::string PyQuote(const std::string& s);

// For diagnostics: the run's exit code and output, clipped.
std::string Describe(const ProcessResult& r);

// How many calls named name a census file (`sentry run --census`) counts as
// trapped; -1 (and a test failure) if it cannot be read.
int Trapped(const std::string& census, const std::string& name);

// Whether this run of the suite puts every sandbox on the seccomp wall alone
// (SENTRY_RUN_FLAGS=--no-namespaces, see CMakeLists.txt).
bool SeccompOnly();

// --- the host side ---

// A fresh directory (mkdtemp) removed with everything in it at destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix);  // e.g. "/tmp/sec-canary-"
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A host directory holding one file with random secret content: what no attack
// may read, change or add to.
class Canary {
 public:
  explicit Canary(const std::string& parent);  // "/tmp" or "/root"
  const std::string& dir() const { return dir_.path(); }
  const std::string& file() const { return file_; }
  const std::string& secret() const { return secret_; }
  // Empty if the directory and the file are exactly as created; else what changed.
  std::string Changes() const;

 private:
  TempDir dir_;
  std::string file_;
  std::string secret_;
  std::string snapshot_;
};

// The test's working directory if the sandbox has no such path (its first
// component is not one of the sandbox's top-level names), else "/work".
std::string HostOnlyCwd();

// A random printable token.
std::string RandomToken(size_t len = 24);

std::optional<std::string> ReadFile(const std::string& path);
void WriteFileOrDie(const std::string& path, const std::string& data, mode_t mode = 0644);

// lstat (and content for small regular files) of one path, as comparable text.
std::string FileState(const std::string& path, bool follow = false);
// FileState of every entry below root (depth-limited), one line each.
std::string TreeState(const std::string& root, int max_depth, bool with_content);
// Names in a directory (no "." or ".."), or empty if it cannot be read.
std::set<std::string> ListDir(const std::string& path);

// Host processes whose command line (arguments joined by spaces) contains
// marker, or with exact, is marker.
std::vector<pid_t> ProcessesWithCmdline(const std::string& marker, bool exact = false);

// Runs `sentry run flags -- cmd` with stdin_fd as its stdin (and, with
// make_ctty, as its controlling terminal in a new session); stdout and stderr
// are captured.
ProcessResult RunSentryWithStdin(const std::vector<std::string>& flags,
                                 const std::vector<std::string>& cmd, int stdin_fd,
                                 bool make_ctty = false, double timeout_sec = 60);

// Runs `sentry run flags -- cmd` with a new pseudo-terminal as stdin (and
// controlling terminal), stdout/stderr to pipes. Afterwards reports what the
// terminal holds: bytes pending on the slave's input side (injected keystrokes)
// and what the master received (their echo).
struct PtyRun {
  ProcessResult result;
  std::string slave_input;    // readable from the slave after the run
  std::string master_output;  // readable from the master after the run
  std::string control_input;  // the native TIOCSTI control's bytes (proves detection)
};
PtyRun RunSentryWithPty(const std::vector<std::string>& flags, const std::vector<std::string>& cmd,
                        double timeout_sec = 30);

}  // namespace sentry::security

#endif  // SENTRY_TESTS_SECURITY_SECURITY_UTIL_H_
