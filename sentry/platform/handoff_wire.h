// The hand-off of a forked child from its parent's supervisor S1 to its own
// supervisor S2 (sentry/session/FORK.md steps 3 and 5), on a SOCK_SEQPACKET
// socket between them:
//
//   S1 -> S2  one packet: the header below (JSON), with two fds: a pidfd of
//             the child, and a stream socket on which S1 then writes the VFS
//             copy (vfs/vfs_snapshot.h; a stream, not packets, so that
//             ReadSnapshot's reads never cut a packet short);
//   S2 -> S1  one packet: "seized" once S2 traces the child, or "error: WHY"
//             (S2 then kills the child itself).
//
// S2 answers "seized" as soon as it traces the child (S1 may then let the
// parent run: nobody can SIGCONT the child into an untraced run any more);
// whether the adoption then succeeds is S2's to report to its own caller.
#ifndef SENTRY_PLATFORM_HANDOFF_WIRE_H_
#define SENTRY_PLATFORM_HANDOFF_WIRE_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sentry {

struct HandOffHeader {
  pid_t pid = 0;                 // the child, as the parent's sandbox names it
  std::string cwd;               // its cwd, a guest path
  std::vector<std::string> env;  // the parent's environment, as the kernel had it
  // The child's fds that are S1's relay pipes: (fd, role), role 0 stdin,
  // 1 stdout, 2 stderr. Every other fd of the child is not S1's to vouch for.
  std::vector<std::pair<int, int>> relay;
};

inline constexpr size_t kHandOffMaxBytes = 128 << 10;  // one packet
inline constexpr size_t kHandOffMaxRelay = 64;
inline constexpr std::string_view kHandOffSeized = "seized";

std::string EncodeHandOff(const HandOffHeader& h);
// nullopt (and *why) for anything malformed or out of bounds.
std::optional<HandOffHeader> DecodeHandOff(std::string_view bytes, std::string* why);

}  // namespace sentry

#endif  // SENTRY_PLATFORM_HANDOFF_WIRE_H_
