// GuestTerminal: the guest's own terminal, relayed to the caller's, as
// `docker run -t` does.
//
// The guest never holds the caller's terminal: a TIOCSTI, TIOCSCTTY, TCSETS
// or TIOCSPGRP of the guest's reaches only a pty of the sandbox's own devpts
// instance, which the guest opens before its filter (see LoaderSpec::tty_fds)
// and whose master the sentry holds. The sentry copies the caller's terminal
// settings and window size into it at the start (and the size again at each
// SIGWINCH), puts the caller's terminal in raw mode while the run lasts (so
// that Ctrl-C, Ctrl-Z and Ctrl-\ travel as bytes to the guest's line
// discipline, which signals the guest's foreground process group as a
// terminal does), and restores it at the end, whatever ended the run.
#ifndef SENTRY_RUN_TERMINAL_H_
#define SENTRY_RUN_TERMINAL_H_

#include <sys/types.h>
#include <termios.h>

#include <string>
#include <thread>

#include "sentry/base/unique_fd.h"
#include "sentry/run/run.h"

namespace sentry {

class GuestTerminal final {
 public:
  // The guest's fds (bit i: fd i) that are its terminal. kAuto: those of 0-2
  // where the caller has a terminal (0 only when the guest reads the
  // caller's stdin), so that isatty() answers in the sandbox as it would
  // natively and a redirected stream stays a plain byte stream; kOn: all
  // three (stdin not with --stdin FILE), as `docker run -t`; none with
  // --json (output captured) or kOff.
  static int FdsFor(TtyMode mode, bool json, const std::string& stdin_path);

  GuestTerminal() = default;
  GuestTerminal(const GuestTerminal&) = delete;
  GuestTerminal& operator=(const GuestTerminal&) = delete;
  ~GuestTerminal() { Finish(); }

  // Takes the pty's master and starts the relays: the caller's stdin into it
  // when fds has bit 0, its output to the caller's stdout (else stderr, else
  // the terminal on stdin). Before the guest's execve, so that its first
  // look at the terminal finds the caller's settings and size.
  void Start(UniqueFd master, int fds);
  bool active() const { return master_.get() >= 0; }
  // The caller's window size into the guest's terminal (SIGWINCH): the
  // kernel then signals the guest's foreground process group.
  void Resize();
  // The guest terminal's foreground process group (a host pid), or -1.
  pid_t ForegroundGroup() const;
  // Waits for the output's end (every slave closed: the sandbox is gone),
  // stops the input relay and gives the caller's terminal its settings back.
  void Finish();

 private:
  void Relay();
  void RelayInput();
  void RestoreCallersTerminal();

  UniqueFd master_;
  UniqueFd stop_r_, stop_w_;  // ends the input relay
  int size_from_ = -1;        // the caller's terminal the size comes from
  int out_fd_ = -1;           // where the guest's output goes
  int raw_fd_ = -1;           // the caller's terminal put in raw mode, if any
  termios saved_{};
  std::thread output_, input_;
};

}  // namespace sentry

#endif  // SENTRY_RUN_TERMINAL_H_
