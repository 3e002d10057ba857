#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sentry/base/fs_identity.h"
#include "sentry/base/log.h"
#include "sentry/run/audit_log.h"
#include "sentry/run/copy_out.h"
#include "sentry/run/denial_hint.h"
#include "sentry/run/guest_files.h"
#include "sentry/run/run_internal.h"

namespace sentry::run_internal {

UniqueFd TimeoutTimer(double seconds) {
  UniqueFd timer(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC));
  if (seconds > 0) {
    itimerspec its{};
    its.it_value.tv_sec = static_cast<time_t>(seconds);
    its.it_value.tv_nsec = static_cast<long>((seconds - its.it_value.tv_sec) * 1e9);
    if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0) its.it_value.tv_nsec = 1;
    timerfd_settime(timer.get(), 0, &its, nullptr);
  }
  return timer;
}

void Run::Supervise() {
  UniqueFd sig(signalfd(-1, &mask_, SFD_CLOEXEC | SFD_NONBLOCK));
  UniqueFd timer = TimeoutTimer(o_.timeout_sec);
  // The timeout must hold even if this thread is held up (waiting for the
  // kernel lock behind a handler that waits on the guest): a watchdog that
  // needs nothing but the init pid kills the sandbox shortly after it.
  std::mutex watchdog_mu;
  std::condition_variable watchdog_cv;
  bool supervised = false;
  std::thread watchdog;
  if (o_.timeout_sec > 0) {
    watchdog = std::thread([&] {
      constexpr double kSlackSec = 0.1;
      std::unique_lock<std::mutex> lock(watchdog_mu);
      auto deadline = std::chrono::steady_clock::now() +
                      std::chrono::duration<double>(o_.timeout_sec + kSlackSec);
      if (!watchdog_cv.wait_until(lock, deadline, [&] { return supervised; })) {
        watchdog_fired_ = true;
        KillSandbox();
      }
    });
  }
  // SIGTERM or SIGHUP to sentry goes to the guest first; the sandbox ends
  // when the guest does, or after this grace, or at a second one.
  UniqueFd grace(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC));
  constexpr time_t kGraceSec = 2;
  // The start-up pin ends when the guest traps rarely: it computes, and may
  // do it on any CPU; a guest of several tasks is followed, more often,
  // since its tasks come and go (see sentry/kernel/colocation.h).
  UniqueFd pin_check(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC));
  constexpr long kPinCheckNs = 50 * 1000 * 1000;
  constexpr uint64_t kMinTrapsPerCheck = 20;  // 400 a second
  constexpr long kFollowCheckNs = 20 * 1000 * 1000;
  constexpr uint64_t kMinTrapsPerFollowCheck = 8;  // 400 a second
  bool follow_checks = false;                      // the timer ticks every kFollowCheckNs
  uint64_t traps_seen = 0;
  {
    std::lock_guard<std::mutex> lock(kernel_->mu());
    if (kernel_->colocation().active()) {
      itimerspec its{{0, kPinCheckNs}, {0, kPinCheckNs}};
      timerfd_settime(pin_check.get(), 0, &its, nullptr);
    }
  }
  bool init_reaped = false;
  bool leader_seen_done = false;
  // A user signal (from this process's signalfd, or from a pool's client).
  // SIGINT and SIGQUIT go where a terminal sends Ctrl-C and Ctrl-\: to the
  // guest's foreground process group, every time; the run goes on as long
  // as the guest does (a REPL, a program that traps them). SIGTERM and
  // SIGHUP go to the guest and end the run: the sandbox is killed after the
  // grace, or at once at a second one. SIGWINCH: the caller's terminal was
  // resized.
  auto user_signal = [&](int signo) {
    if (signo == SIGWINCH) {
      stdio_.terminal().Resize();
    } else if (signo == SIGINT || signo == SIGQUIT) {
      SignalForeground(signo);
    } else if (user_signal_ == 0) {
      user_signal_ = signo;
      kill(spawned_->guest_pid(), user_signal_);
      itimerspec its{};
      its.it_value.tv_sec = kGraceSec;
      timerfd_settime(grace.get(), 0, &its, nullptr);
    } else {
      KillSandbox();
    }
  };
  // A pool's client waits for the guest, not for the sandbox's teardown:
  // a warm run leaves this loop once its guest is done and pid 1 killed,
  // and Conclude reaps pid 1 after it answered the client.
  while (!init_reaped && !(warm_ && leader_seen_done)) {
    // (poll skips a negative fd: no pool client, no exec socket.)
    pollfd pfd[7] = {
        {sig.get(), POLLIN, 0},
        {timer.get(), POLLIN, 0},
        {grace.get(), POLLIN, 0},
        {pin_check.get(), POLLIN, 0},
        {peer_fd_, POLLIN, 0},
        {o_.exec_listen_fd, POLLIN, 0},
        {fork_parent_ && fork_parent_->control_open() ? o_.control_fd : -1, POLLIN, 0}};
    if (poll(pfd, 7, -1) < 0 && errno != EINTR) break;
    if (pfd[6].revents) fork_parent_->OnControlMessage();  // a session's fork (fork_parent.h)
    if (pfd[5].revents & POLLIN) {
      int conn = accept4(o_.exec_listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (conn >= 0) {
        // Blocking, with the wire's timeouts: the engine's client sends at once.
        fcntl(conn, F_SETFL, 0);
        ServeExec(conn);
        close(conn);
      }
    }
    uint64_t ticks;
    if ((pfd[3].revents & POLLIN) && loop_) {  // (none while a fork's re-listen changes it)
      (void)!read(pin_check.get(), &ticks, sizeof(ticks));
      uint64_t traps = loop_->handled();
      bool often = traps - traps_seen >= kMinTrapsPerCheck * ticks;
      std::lock_guard<std::mutex> lock(kernel_->mu());
      CoLocation& pin = kernel_->colocation();
      if (pin.following()) {
        uint64_t per_tick = follow_checks ? kMinTrapsPerFollowCheck : kMinTrapsPerCheck;
        pin.FollowBusiest(kernel_->tasks(), per_tick * ticks, loop_->cpu());
        if (!follow_checks) {
          itimerspec its{{0, kFollowCheckNs}, {0, kFollowCheckNs}};
          timerfd_settime(pin_check.get(), 0, &its, nullptr);
          follow_checks = true;
        }
      } else {
        if (pin.active() && !often) pin.Pause();
        if (pin.paused() && often) pin.Resume();
        if (!pin.active() && !pin.paused() && !pin.following()) {
          itimerspec off{};  // ended for good
          timerfd_settime(pin_check.get(), 0, &off, nullptr);
        }
      }
      traps_seen = traps;
    }
    if (peer_fd_ >= 0 && pfd[4].revents) {
      // A pool's client forwards the signals it gets; when it is gone
      // (killed, or its caller hung up) nobody waits for the run: it ends.
      int32_t signo = 0;
      if (read(peer_fd_, &signo, sizeof(signo)) == sizeof(signo) && signo > 0 && signo < NSIG) {
        user_signal(signo);
      } else {
        peer_fd_ = -1;
        if (user_signal_ == 0) user_signal_ = SIGHUP;
        KillSandbox();
      }
    }
    if (pfd[1].revents & POLLIN) {
      (void)!read(timer.get(), &ticks, sizeof(ticks));
      if (!tracer_->leader_done()) timed_out_ = true;
      KillSandbox();
    }
    if (pfd[2].revents & POLLIN) {
      (void)!read(grace.get(), &ticks, sizeof(ticks));
      KillSandbox();
    }
    if (!(pfd[0].revents & POLLIN)) continue;
    signalfd_siginfo si;
    while (read(sig.get(), &si, sizeof(si)) == sizeof(si)) {
      if (si.ssi_signo != SIGCHLD) user_signal(static_cast<int>(si.ssi_signo));
    }
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, __WALL | WNOHANG)) > 0) {
      if (pid == spawned_->init_pid()) {
        if (WIFEXITED(status) || WIFSIGNALED(status)) init_reaped = true;
        continue;
      }
      tracer_->OnWaitStatus(pid, status);
      if (tracer_->leader_done() && !leader_seen_done) {
        leader_seen_done = true;
        clock_.Mark("guest");
      }
      if (tracer_->leader_done()) KillSandbox();
    }
    if (fork_parent_ && fork_parent_->init_exited())
      init_reaped = true;  // waited for during a fork's quiesce
  }
  if (watchdog.joinable()) {
    {
      std::lock_guard<std::mutex> lock(watchdog_mu);
      supervised = true;
    }
    watchdog_cv.notify_all();
    watchdog.join();
  }
  init_reaped_ = init_reaped;
  if (!leader_seen_done) clock_.Mark("guest");  // killed with the sandbox (timeout, signal)
  clock_.Mark("sandbox exit");
}

void Run::SignalForeground(int signo) {
  // The guest terminal's foreground group, else the guest's own group (its
  // job: see LoaderSpec::tty_fds). Both are groups of the guest's session,
  // which holds only sandbox processes; never pid 1's.
  pid_t group = stdio_.terminal().ForegroundGroup();
  if (group <= 0) group = getpgid(spawned_->guest_pid());
  if (group > 0 && group != spawned_->init_pid() && group != getpgrp()) {
    kill(-group, signo);
  } else {
    kill(spawned_->guest_pid(), signo);
  }
}

int Run::Conclude(std::optional<RunError> error) {
  RunResult r;
  // The guest is gone or going: this thread works for the operator again
  // (cgroups to remove, the log to write).
  DropFsIdentity(0, 0);
  if (error) log::Debug(absl::StrCat("run: ended before the guest's end: ", error->message));
  if (error) EndSandboxProcesses();  // before the drain, which waits for them
  StopLoops();
  if (kernel_ && kernel_->vfs().listing_ahead()) {
    vfs::ListingAhead::Counts c = kernel_->vfs().listing_ahead()->counts();
    log::Debug(absl::StrCat("run: listings read ahead ", c.read, ", taken ", c.hits,
                            ", asked for before read ", c.late));
  }
  if (tools_) {
    // A tool still running for a guest that is gone is killed.
    tools_->Stop();
    r.tool_calls = tools_->Calls();
  }
  stdio_.Finish();
  if (census_) {
    // As the operator, once no call is left to count.
    if (std::string why = census_->Write(o_.census_path, o_.argv); !why.empty()) {
      log::Error(absl::StrCat("--census ", o_.census_path, ": ", why));
    }
  }
  clock_.Mark("drain");
  r.duration_ms = static_cast<uint64_t>(MonotonicMs() - start_ms_);
  r.stdout_text = stdio_.out().Text();
  r.stderr_text = stdio_.err().Text();
  r.stdout_dropped = stdio_.out().dropped();
  r.stderr_dropped = stdio_.err().dropped();
  // A failed read is 0: never a wrapped difference (seen as cpuMs 1.8e13).
  uint64_t cpu_ns = cgroups_.CpuNanos();
  r.cpu_ms = cpu_ns > cpu_base_ns_ ? (cpu_ns - cpu_base_ns_) / 1000000 : 0;
  r.sentry_cpu_ms = cpu_share_.spent_ns() / 1000000;
  r.sentry_throttled_ms = cpu_share_.throttled_ns() / 1000000;
  r.peak_memory_bytes = cgroups_.PeakMemoryBytes();
  r.walls = {"seccomp"};
  if (!seccomp_only()) r.walls.push_back("namespaces");
  if (std::string ids = IdModeWall(); !ids.empty()) r.walls.push_back(ids);
  if (spec_.landlock.abi > 0) r.walls.push_back(LandlockWallName(spec_.landlock.abi));
  for (const std::string& w : cgroups_.enforced()) r.walls.push_back(w);
  if (!cgroups_.has_memory() && o_.memory_bytes) r.walls.push_back("rlimit-as");
  if (o_.pids) r.walls.push_back("rlimit-nproc");
  if (o_.cpus > 0 && !cgroups_.has_cpu() && o_.timeout_sec > 0) r.walls.push_back("rlimit-cpu");
  r.limits = EnforcedLimits();

  int code;
  if (error) {
    code = error->code;
    r.error = error->message;
  } else if (fork_parent_ && !fork_parent_->fatal().empty()) {
    code = kExitSentryError;
    r.error = fork_parent_->fatal();
  } else if (tracer_ && !tracer_->violation().empty()) {
    code = kExitSentryError;
    r.error = tracer_->violation();
  } else if (timed_out_ || (watchdog_fired_ && !(tracer_ && tracer_->leader_done()))) {
    code = kExitTimeout;
    r.timed_out = true;
    r.limit = "timeout";
    r.signal = "SIGKILL";
  } else if (user_signal_) {
    code = 128 + user_signal_;
    r.signal = SignalName(user_signal_);
    r.error = absl::StrCat("sentry received ", SignalName(user_signal_));
  } else if (tracer_ && tracer_->leader_done()) {
    int s = tracer_->leader_status();
    if (WIFEXITED(s)) {
      code = WEXITSTATUS(s);
    } else {
      code = 128 + WTERMSIG(s);
      r.signal = SignalName(WTERMSIG(s));
      if (WTERMSIG(s) == SIGKILL && cgroups_.MemoryLimitHit()) r.limit = "memory";
    }
  } else {
    code = kExitSentryError;
    r.error = "the guest ended without an exit status";
  }
  r.exit_code = code;
  if (kernel_) {
    std::lock_guard<std::mutex> lock(kernel_->mu());
    DenialPlace place{o_.mounts, o_.workdir.empty() ? tree_.home : o_.workdir, tree_.home};
    for (const Denial& d : kernel_->denials) r.denied.push_back(ExplainDenial(d, place));
  }
  if (!r.limit && cgroups_.PidsLimitHit()) r.limit = "pids";
  net_.Conclude(&r);
  // The guest is done; its tree is whole until the kernel goes (the store's
  // files stay open through the sentry's own fd of it).
  if (!o_.return_files.empty() && kernel_) {
    std::lock_guard<std::mutex> lock(kernel_->mu());
    r.files = ReadGuestFiles(kernel_->vfs(), creds_, cwd_, o_.return_files, o_.return_file_max,
                             RunOptions::kMaxReturnedEntries, o_.return_total_max, &r.files_limit);
  }
  if (!o_.copy_out.empty() && kernel_) {
    std::lock_guard<std::mutex> lock(kernel_->mu());
    r.copy_out = CopyOut(kernel_->vfs(), creds_, cwd_, o_);
    // A copy that failed fails a run that did not (a script's `&&`).
    bool whole = o_.json ? std::all_of(r.copy_out.begin(), r.copy_out.end(),
                                       [](const CopyOutReport& c) { return c.error.empty(); })
                         : PrintCopyOut(r.copy_out);
    if (!whole && code == 0) r.exit_code = code = kExitSentryError;
  }
  // A pool's client is answered before the sandbox is taken down: nothing of
  // what follows is its concern (a cold run's caller waits for this process).
  if (warm_) {
    Report(r);
    int32_t c = code;
    if (client_fd_ >= 0) (void)!send(client_fd_, &c, sizeof(c), MSG_NOSIGNAL);
    // The teardown is the pool's refill work: with what CPU runs leave.
    if (refill_nice_) setpriority(PRIO_PROCESS, 0, refill_nice_);
  }
  EndSandboxProcesses();
  ReleaseSandbox();
  clock_.Mark("cleanup");
  if (!o_.log_path.empty()) {
    LogRun(o_, absl::StrFormat("%d-%d", getpid(), static_cast<int>(start_ms_)), script_, r, clock_);
  }
  if (!warm_) Report(r);
  return code;
}

std::vector<std::pair<std::string, std::string>> Run::EnforcedLimits() const {
  std::vector<std::pair<std::string, std::string>> out;
  if (o_.timeout_sec > 0) out.emplace_back("timeout", "sentry-clock");
  if (o_.memory_bytes) {
    out.emplace_back("memory", cgroups_.has_memory() ? "cgroup" : "rlimit-as");
  }
  // The tracer fails a fork past the cap, and RLIMIT_NPROC counts the
  // sandbox's tasks in its own user namespace (with a pids cgroup too).
  if (o_.pids) {
    out.emplace_back("pids", cgroups_.has_pids() ? "cgroup+sentry-count+rlimit-nproc"
                                                 : "sentry-count+rlimit-nproc");
  }
  if (o_.cpus > 0) {
    if (cgroups_.has_cpu()) {
      out.emplace_back("cpus", "cgroup");
    } else if (o_.timeout_sec > 0) {
      out.emplace_back("cpus", "rlimit-cpu (a total, not a rate)");
    }
  }
  // Without root: whose ids the guest's are, and who is charged for the
  // counts the kernel keeps per user namespace (subid_range.h).
  if (std::string ids = IdModeWall(); !ids.empty()) {
    out.emplace_back("ids", range_ ? absl::StrCat("subid-range: guest uid ", tree_.uid,
                                                  " is host uid ", GuestHostUid(),
                                                  "; processes, inotify and mqueues count "
                                                  "against uid ",
                                                  getuid(), ", the user namespace's maker")
                                   : absl::StrCat("single-id: guest uid ", tree_.uid,
                                                  " is host uid ", getuid(), ", the caller"));
  }
  if (o_.disk_bytes)
    out.emplace_back("disk", seccomp_only() && !host_store_.capped() ? "rlimit-fsize (per file)"
                                                                     : "store-tmpfs");
  return out;
}

void Run::Abandon() {
  EndSandboxProcesses();
  StopLoops();
  ReleaseSandbox();
}

void Run::StopLoops() {
  for (ExecLoop& l : exec_loops_) l.loop->Stop();
  if (loop_) loop_->Stop();
}

void Run::EndSandboxProcesses() {
  if (!spawned_ || init_reaped_) return;
  KillSandbox();
  kill(spawned_->init_pid(), SIGKILL);
  // Every child, not pid 1 alone: a traced guest (a warm sandbox's is traced
  // before its command comes) is reaped by this tracer first, and pid 1 is
  // not gone before it is.
  int status;
  while (true) {
    pid_t pid = waitpid(-1, &status, __WALL);
    if (pid == spawned_->init_pid() || (pid < 0 && errno != EINTR)) break;
  }
  init_reaped_ = true;
}

void Run::ReleaseSandbox() {
  net_.Stop();
  cgroups_.Remove();
  if (seccomp_only()) {
    // A process that outlived the sandbox's end (without root none can: the
    // loader's tree was empty before the loader was killed).
    if (!rootless_) KillEveryProcessOf(guest_host_uid_);
    ReapOrphans();
    host_store_.Remove();
  }
}

// What the caller reads at the end: the phases (--timings), then the result
// (--json) or the line that says why sentry ended the run.
void Run::Report(const RunResult& r) {
  if (o_.timings) {
    clock_.Mark("log");
    std::fputs(clock_.Text().c_str(), stderr);
  }
  if (!o_.json) return PrintOutcome(r, false, o_.timeout_sec);
  RunResult with_notices = r;  // what stderr showed of this run, for an agent
  with_notices.notices = log::TakeNotices();
  PrintOutcome(with_notices, true, o_.timeout_sec);
}

}  // namespace sentry::run_internal
