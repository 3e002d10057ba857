// GuestStdio: what the guest gets as fds 0, 1 and 2.
//
// The guest never holds a host file, socket or terminal of the caller's: the
// fds that are to be a terminal (Options::tty_fds) are a pty of the
// sandbox's own, relayed by a GuestTerminal (terminal.h); anything else is
// relayed through pipes by sentry threads. With capture (--json) stdout and
// stderr go into bounded OutputBuffers and stdin comes from a file or nothing.
#ifndef SENTRY_RUN_STDIO_H_
#define SENTRY_RUN_STDIO_H_

#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "sentry/base/unique_fd.h"
#include "sentry/run/output_buffer.h"
#include "sentry/run/run.h"
#include "sentry/run/terminal.h"

namespace sentry {

// The caller's fds 1 and 2 are one file (`>out.log 2>&1`, `2>&1 | cat`):
// the same inode, which a shared open file description implies; /dev/null,
// where order means nothing, is not.
bool SameOutput(int a, int b);

class GuestStdio final {
 public:
  struct Options {
    bool capture = false;    // --json: keep stdout/stderr instead of streaming them
    std::string stdin_path;  // --stdin FILE ("-" is the sentry's own stdin)
    size_t max_output = 64 << 10;
    // Without capture: the bytes of stdout and of stderr passed on, each (0:
    // all); the rest is dropped, and a line says how much (an OCI
    // container's dev.sentry.max-output, which caps what reaches the
    // engine's logs).
    uint64_t stream_cap = 0;
    // The host ids of the guest's user: the relay pipes are made its own, as a
    // shell's pipes are its user's, so it may reopen them (/dev/stdin).
    uid_t pipe_uid = static_cast<uid_t>(-1);
    gid_t pipe_gid = static_cast<gid_t>(-1);
    // Three relayed pipes whatever fds 0-2 are, their sources and capture
    // chosen later by Configure (a warm sandbox's, made before its caller).
    bool relay_all = false;
    // Bit i set: the guest's fd i is its terminal (GuestTerminal::FdsFor),
    // which the guest makes (LoaderSpec::tty_fds): no fd of the sentry's.
    int tty_fds = 0;
    // With relay_all: output that comes before Configure is dropped, and the
    // first byte on stdout makes ready_fd() readable (a warm interpreter's
    // "waiting for its script", see warm_bootstrap.h).
    bool drop_early = false;
    // The guest's fd 2 is its fd 1's pipe, so the two keep the order they
    // were written in (2>&1): with capture, stderr's bytes are in out().
    // Without capture Setup also does so by itself where the caller's fds 1
    // and 2 are one file (SameOutput).
    bool merge_stderr = false;
    // With capture: pipes that also get stdout's and stderr's bytes as they
    // come (made non-blocking here: a full one stops its copy, never the guest).
    std::array<int, 2> tee = {-1, -1};
  };

  // What a run's options ask of its stdio (the rest is the run's to set).
  static Options OptionsFor(const RunOptions& o);

  GuestStdio() = default;
  GuestStdio(const GuestStdio&) = delete;
  GuestStdio& operator=(const GuestStdio&) = delete;
  ~GuestStdio();

  absl::Status Setup(const Options& options);
  // The sentry's fds the guest is to receive as 0, 1, 2.
  std::array<int, 3> child_fds() const;
  // Bit i set: child_fds()[i] is a pipe of the sentry's (a relay).
  int relay_mask() const;
  // The sentry's own ends of the relayed pipes (-1 where none): a session
  // fork's hand-off finds the child's copies of the guest's by their pipe.
  // (A read end of each pipe kept from its making: the stdin relay's thread
  // owns its write end once started, and a write end kept would hide EOF.)
  std::array<int, 3> relay_ends() const {
    return {identity_[0].get(), identity_[1].get(), identity_[2].get()};
  }
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
  // With drop_early: an eventfd readable once the guest wrote on stdout.
  int ready_fd() const { return ready_.get(); }
  // Bytes the stdin relay writes before the stdin it relays (set before
  // Start): a warm interpreter's request.
  void set_stdin_prefix(std::string prefix) { stdin_prefix_ = std::move(prefix); }
  // Waits until the guest's ends are all closed and the relays are done.
  void Finish();

  int tty_fds() const { return options_.tty_fds; }
  // Relays the terminal fds through pipes instead (a sandbox without
  // namespaces has no devpts of its own).
  absl::Status DropTerminal();
  // With tty_fds, once the guest has made its terminal: relays it.
  void StartTerminal(UniqueFd master) { terminal_.Start(std::move(master), options_.tty_fds); }
  GuestTerminal& terminal() { return terminal_; }

  const OutputBuffer& out() const { return *out_; }
  const OutputBuffer& err() const { return *err_; }

 private:
  absl::Status MakeRelay(int i);
  absl::Status MergeStderr();
  absl::Status OpenStdinFile(const std::string& path);
  absl::Status SetupStdin();
  void WritePrefixNow();

  Options options_;
  std::array<UniqueFd, 3> child_;     // the guest's ends
  std::array<UniqueFd, 3> ours_;      // the sentry's ends of relayed streams
  std::array<UniqueFd, 3> identity_;  // relay_ends(): a read end of each relay's pipe
  std::array<int, 3> passthrough_ = {-1, -1, -1};
  std::unique_ptr<OutputBuffer> out_, err_;
  std::vector<std::thread> outputs_;
  bool outputs_started_ = false;
  std::atomic<bool> configured_{false};
  GuestTerminal terminal_;
  UniqueFd ready_;
  std::string stdin_prefix_;
};

}  // namespace sentry

#endif  // SENTRY_RUN_STDIO_H_
