// GuestStdio: what the guest gets as fds 0, 1 and 2.
//
// The guest never holds a host file or socket of the caller's: a terminal is
// passed through (interactive use: isatty, job control), anything else is
// relayed through pipes by sentry threads. With capture (--json) stdout and
// stderr go into bounded OutputBuffers and stdin comes from a file or nothing.
// A terminal passed through gets its settings back when the run ends (as a
// shell restores them after a job): the guest may change them (TCSETS, flow
// control are native), and nothing of the run may outlive it.
#ifndef SENTRY_RUN_STDIO_H_
#define SENTRY_RUN_STDIO_H_

#include <termios.h>

#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "sentry/base/unique_fd.h"
#include "sentry/run/output_buffer.h"

namespace sentry {

class GuestStdio final {
 public:
  struct Options {
    bool capture = false;    // --json: keep stdout/stderr instead of streaming them
    std::string stdin_path;  // --stdin FILE ("-" is the sentry's own stdin)
    size_t max_output = 64 << 10;
    // The host ids of the guest's user: the relay pipes are made its own, as a
    // shell's pipes are its user's, so it may reopen them (/dev/stdin).
    uid_t pipe_uid = static_cast<uid_t>(-1);
    gid_t pipe_gid = static_cast<gid_t>(-1);
    // Three relayed pipes whatever fds 0-2 are, their sources and capture
    // chosen later by Configure (a warm sandbox's, made before its caller).
    bool relay_all = false;
    // With capture: pipes that also get stdout's and stderr's bytes as they
    // come (made non-blocking here: a full one stops its copy, never the guest).
    std::array<int, 2> tee = {-1, -1};
  };

  GuestStdio() = default;
  GuestStdio(const GuestStdio&) = delete;
  GuestStdio& operator=(const GuestStdio&) = delete;
  ~GuestStdio();

  absl::Status Setup(const Options& options);
  // The sentry's fds the guest is to receive as 0, 1, 2.
  std::array<int, 3> child_fds() const;
  // Gives the guest's ends of the relayed pipes to another owner (a run that
  // falls back to a host uid of its own after Setup).
  void SetPipeOwner(uid_t uid, gid_t gid);
  // With relay_all: what the relays carry (capture, max_output, stdin_path;
  // stdin relays fd 0 unless capture or stdin_path says otherwise).
  absl::Status Configure(const Options& options);
  // Once the loader holds its copies: closes the sentry's, starts the relays.
  void Start();
  // With relay_all, once the loader holds its copies: starts the stdout and
  // stderr relays ahead (thread starts cost ~0.3 ms each here), before
  // Configure says where they go; Start then starts stdin's alone.
  void StartOutputsEarly();
  // Waits until the guest's ends are all closed and the relays are done.
  void Finish();

  const OutputBuffer& out() const { return *out_; }
  const OutputBuffer& err() const { return *err_; }

 private:
  absl::Status MakeRelay(int i);
  absl::Status OpenStdinFile(const std::string& path);
  void SaveTerminal(int fd);
  void RestoreTerminal();

  Options options_;
  std::array<UniqueFd, 3> child_;  // the guest's ends
  std::array<UniqueFd, 3> ours_;   // the sentry's ends of relayed streams
  std::array<int, 3> passthrough_ = {-1, -1, -1};
  std::unique_ptr<OutputBuffer> out_, err_;
  std::vector<std::thread> outputs_;
  bool outputs_started_ = false;
  std::atomic<bool> configured_{false};
  int tty_fd_ = -1;  // the caller's terminal passed through (one of 0-2), if any
  termios tty_saved_{};
};

}  // namespace sentry

#endif  // SENTRY_RUN_STDIO_H_
