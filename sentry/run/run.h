// One run of one guest program in a fresh sandbox: the whole of `sentry run`.
#ifndef SENTRY_RUN_RUN_H_
#define SENTRY_RUN_RUN_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sentry/net/net_policy.h"
#include "sentry/run/sandbox_tree.h"
#include "sentry/tools/host_tool.h"

namespace sentry {

// sentry's own exit codes, beside the guest's (0-255, 128+N for signal N).
inline constexpr int kExitTimeout = 124;      // --timeout ended the run
inline constexpr int kExitSentryError = 125;  // bad flags, or the sandbox could not start
inline constexpr int kExitCannotExec = 126;   // the program exists but cannot be run
inline constexpr int kExitNotFound = 127;     // the program is not in the sandbox

// Whether a run needs namespaces: kAuto uses them where the kernel gives them
// and else runs on the seccomp wall alone, saying so; kRequire fails instead;
// kOff never makes them (--no-namespaces).
enum class NamespaceMode { kAuto, kRequire, kOff };

// Without root, the ids of the sandbox's user namespace (subid_range.h):
// kRange maps the caller's subordinate range (an error where it has none),
// kSingle the caller's own uid and gid alone, kAuto the range where there is
// one, else the single id, saying so (--userns).
enum class IdMode { kAuto, kRange, kSingle };

// Whether the guest gets a terminal of its own (see sentry/run/terminal.h):
// kAuto where the caller's stdio has one, kOn always (-t), kOff never.
enum class TtyMode { kAuto, kOn, kOff };

// A file a request of `sentry serve`/`mcp` carries: its bytes are written into
// the guest's tree before the run; nothing of it touches the host.
struct InlineFile {
  std::string guest_path;  // absolute, checked by the caller (sentry/agent)
  std::string data;
  unsigned mode = 0644;
};

// --copy-out: a guest name (file, directory, pattern) and the host directory
// it is written into after the run.
struct CopyOutSpec {
  std::string guest;
  std::string host_dir;
};

struct RunOptions {
  std::vector<std::string> argv;                            // the guest command
  std::vector<std::string> env;                             // extra K=V
  std::vector<std::pair<std::string, std::string>> copies;  // host → guest
  std::vector<BindMount> mounts;                            // -v HOST:GUEST[:ro|:rw]
  std::vector<std::pair<std::string, std::string>> files;   // guest path → bytes (an API's)
  bool copy_script = true;  // copy a first argument that names a host file
  // How this caller puts files in, for a program not found: sentry run's
  // "copy other programs in with --copy"; "" where nothing is to be said.
  std::string copy_hint;
  bool trace = false;
  std::string trace_file;        // --trace-file: the trace there instead of stderr
  std::string trace_timestamps;  // --trace-timestamps[=s|us|unix]: "" for none
  std::string census_path;       // --census FILE: count every syscall, write them there
  bool timings = false;          // --timings: the run's phases to stderr
  bool root = false;             // the guest is uid 0 inside (still no host privilege)
  bool json = false;             // print one result object instead of streaming output
  std::string log_path;          // --log: append one JSON line per run
  std::string stdin_path;        // --stdin FILE or "-"
  TtyMode tty = TtyMode::kAuto;  // -t: kOn; --no-tty: kOff
  bool interactive = false;      // -i: stdin stays open (with --json too: as --stdin -)
  std::string workdir;           // --workdir: the guest's cwd (made if missing); default its home
  double timeout_sec = 30;       // 0: none
  uint64_t memory_bytes = 1ull << 30;
  uint64_t pids = 128;
  double cpus = 0;             // 0: no quota
  uint64_t cpu_period_us = 0;  // the CFS period of that quota (0: 100 ms); OCI's cpu.period
  uint64_t cpu_shares = 0;     // cpu.shares (0: the kernel's 1024); OCI's cpu.shares
  uint64_t disk_bytes = 512ull << 20;
  uint64_t max_output = 64 << 10;  // per stream, with --json
  uint64_t stream_max_output = 0;  // per stream, streamed (not --json); 0: none
  // The guest's stderr is its stdout's pipe (2>&1): one stream, in the order
  // written ("stdout" of the result). Streamed, this is the default where
  // the caller's stdout and stderr are one file.
  bool merge_stderr = false;
  uint64_t nofile = 1024;  // open files per process (RLIMIT_NOFILE)
  bool cgroups = true;     // false: rlimits only (--no-cgroups)
  NamespaceMode namespaces = NamespaceMode::kAuto;
  IdMode userns = IdMode::kAuto;  // without root only
  // The guest's Landlock domain where the kernel has Landlock (false:
  // --no-landlock, for measuring and debugging).
  bool landlock = true;
  // Directory, O_PATH and read-only lower-file fds identified by kcmp against a reference the
  // sentry keeps (false: --no-fast-fd-identity, for measuring; see
  // sentry/kernel/fd_holds.h).
  bool fast_fd_identity = true;
  // The trap's own host calls trimmed (false: --no-fast-trap, for measuring;
  // see KernelConfig::fast_trap).
  bool fast_trap = true;
  // Lower-layer metadata published to the guest's preload library
  // (false: --no-fast-metadata; see sentry/kernel/fast_meta.h). On by
  // default since it answers listings too: a tree walk a third faster
  // (bench/README.md, "Fast metadata"). Only where the lower layer is the
  // host's system directories (never an OCI bundle's rootfs).
  bool fast_metadata = true;
  // With it, directory listings too (false: --no-fast-listings, for
  // measuring; see KernelConfig::fast_listings).
  bool fast_listings = true;
  // With them, negative answers from listings (false: --no-fast-negatives;
  // see KernelConfig::fast_negatives).
  bool fast_negatives = true;
  // And the library's own streams for every opendir (false:
  // --no-fast-dir-streams; see KernelConfig::fast_dir_streams).
  bool fast_dir_streams = true;
  // With listings, the host listings of the subdirectories a published
  // listing names read ahead on another CPU (false: --no-listing-ahead;
  // see vfs/listing_ahead.h).
  bool listing_ahead = true;
  // And the upper layer's directories and symlinks (false: --no-fast-upper;
  // see KernelConfig::fast_upper).
  bool fast_upper = true;
  // And fd records of lower files opened read-only (false:
  // --no-fast-fd-records; see KernelConfig::fast_fd_records).
  bool fast_fd_records = true;
  // And upper regular files no writer has open (false: --no-fast-upper-files;
  // see KernelConfig::fast_upper_files).
  bool fast_upper_files = true;
  net::NetPolicyOptions net;  // --allow-net, --add-host, --unsafe-allow-private-address
  uint64_t net_bytes = 0;     // --net-bytes: cap on bytes in + out (0: none)
  // An engine's network namespace (an OCI bundle's linux.namespaces path):
  // the guest keeps its own (loopback only); the connections the policy
  // allows leave from this one instead of the sentry's. "": the sentry's.
  std::string outside_netns;

  // What an OCI bundle asks for (sentry/oci): its rootfs as the lower layer
  // (TreeConfig::rootfs), the guest's ids, its exact environment, small
  // files the engine provides (/etc/hosts, /run/.containerenv), written into
  // the sandbox, and a pause between the sandbox's making and the guest's go.
  std::string rootfs;
  std::string hostname;  // "": "sandbox"
  // A listening unix socket (the container's exec socket, see
  // sentry/run/exec_wire.h) served while the guest runs; -1: none.
  int exec_listen_fd = -1;
  // Fds the guest gets as 3, 4, ... besides its stdio (an engine's
  // --preserve-fds, at most kMaxExtraFds): the objects themselves, not
  // relayed (a listening socket must stay one), trusted as stdio is.
  std::vector<int> extra_fds;
  int64_t uid = -1;    // -1: 1000, or 0 with root
  mode_t umask = 022;  // the guest's first umask (process.user.umask)
  int64_t gid = -1;
  // Supplementary groups (process.user.additionalGids), at most
  // kMaxGuestGroups: mapped in the sandbox's user namespace, so getgroups
  // shows them and the VFS's permission checks count them.
  std::vector<gid_t> groups;
  // The guest's own rlimits (process.rlimits), soft and hard, each within the
  // host's hard limit: where sentry sets one too (RLIMIT_NOFILE, NPROC, AS,
  // CPU, FSIZE, CORE) the lower of the two holds.
  struct Rlimit {
    int resource;
    uint64_t hard, soft;  // soft at most hard
  };
  std::vector<Rlimit> rlimits;
  bool exact_env = false;  // env is the whole environment (no defaults)
  // Small files an engine binds in (/etc/hosts, /run/.containerenv): guest
  // path and content, replacing what the tree holds there.
  std::vector<std::pair<std::string, std::string>> engine_files;
  std::vector<std::string> dirs;  // made if missing (an OCI tmpfs mount's destination)
  // Called once the guest waits at its execve (the sandbox's pid 1 and the
  // guest's host pids given); 0 lets it go, anything else ends the run with
  // that exit code before the guest ran (a container deleted unstarted).
  std::function<int(pid_t init_pid, pid_t guest_pid)> before_go;
  // For `sentry serve` and `mcp` (sentry/agent/): files written into the
  // guest's tree before the run; guest files read back into the result after
  // it (absolute paths, as the guest may read them, each capped at
  // return_file_max bytes); and pipes that get a copy of the captured output
  // as it comes, written without blocking (a reader that falls behind loses
  // the rest of the copy; the result keeps it).
  std::vector<InlineFile> inline_files;
  std::vector<std::string> return_files;
  // --copy-out GUEST:HOST_DIR (copy_out.h), with caps on all of them together.
  std::vector<CopyOutSpec> copy_out;
  uint64_t copy_out_max_bytes = 1ull << 30;
  size_t copy_out_max_files = 10000;
  uint64_t return_file_max = 1 << 20;
  // All the returned files' bytes and names (each file counted at most
  // return_file_max), and at most kMaxReturnedEntries entries: names, patterns and directories
  // end where either is reached, and the result says so ("filesLimit").
  uint64_t return_total_max = 32 << 20;
  static constexpr size_t kMaxReturnedEntries = 1000;
  int stdout_tee_fd = -1, stderr_tee_fd = -1;
  // A session's sandbox: the supervisor's control socket (SOCK_SEQPACKET;
  // sentry/run/fork_control.h), through which the session server prepares
  // a fork (sentry/session/FORK.md); -1: none (`sentry run` offers none).
  int control_fd = -1;
  // --tool NAME=HOST_COMMAND: host tools the guest may call through the
  // sentry's channel (sentry/tools/); none: no channel, no module.
  std::vector<tools::HostTool> tools;
  // Adopt mode (adopt.h): this run is the supervisor of a forked child that
  // its parent's supervisor hands over on this SOCK_SEQPACKET socket
  // (platform/handoff_wire.h); argv is then not used. -1: an ordinary run.
  int adopt_fd = -1;
};

int RunSandbox(const RunOptions& options);

// RunSandbox for a process that ends with its run (`sentry run`): once the
// result is out and the sandbox torn down, the process exits with the run's
// code, leaving the run's memory, its fds and its idle threads to the
// kernel's exit (a cold run's destructors were 0.3-0.6 ms of the caller's
// wait here).
[[noreturn]] void RunSandboxThenExit(const RunOptions& options);

// A sandbox made before its command is known, for `sentry pool`: namespaces,
// mount view, cgroups, VFS, the guest process waiting at its execve. Made
// with the pool's shape (the options a request cannot change: --root, --disk,
// namespaces, cgroups, network); Serve runs one request in it, exactly once,
// with the caller's stdio already on fds 0-2.
class WarmSandbox {
 public:
  // nullptr, with *error saying why, if the sandbox cannot be made.
  static std::unique_ptr<WarmSandbox> Make(const RunOptions& shape, std::string* error);
  ~WarmSandbox();
  // Runs request, which must have the shape the sandbox was made with
  // (pool::TakeShape); a signal number read from peer_fd goes to the guest as
  // sentry's own would, and peer_fd's end ends the run. The exit code (also
  // returned) is sent on peer_fd as an int32 once the output is written.
  int Serve(const RunOptions& request, int peer_fd);
  // Takes the sandbox down unused (instead of Serve).
  void Abandon();

  // A warm interpreter (warm_bootstrap.h): the sandbox with python3 started
  // in it, preload imported, waiting for its script. Serve runs a request
  // that WarmPythonCanServe accepts.
  static std::unique_ptr<WarmSandbox> MakePython(const RunOptions& shape,
                                                 const std::vector<std::string>& preload,
                                                 std::string* error);
  bool python() const;
  // While it waits for a client, a warm interpreter's guest must be answered
  // (ptrace events): this does so until fd is readable (true), or the guest
  // died (false). For a sandbox whose guest has not started, polls fd alone.
  bool IdleUntilReadable(int fd);
  // Gives every thread of the sandbox (this process's, pid 1's, the guest's)
  // the normal priority: a pool makes its sandboxes at a lower one (its
  // --refill-nice), so that the refill takes the CPU runs leave. The
  // teardown after the run goes back to the lower one.
  void Prioritize();

 private:
  WarmSandbox() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sentry

#endif  // SENTRY_RUN_RUN_H_
