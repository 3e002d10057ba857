// The supervisor's control socket (sentry/session/FORK.md, step 2): a
// SOCK_SEQPACKET the session server holds the other end of
// (RunOptions::control_fd; a plain `sentry run` has none). One fixed-size
// message a request, the hand-off sockets of a fork with it (SCM_RIGHTS);
// one fixed-size message a reply, and one event when a fork's re-listen
// has ended. Every message is checked whole (size, magic, op, counts, the
// fds' kind); a bad one gets an error reply and changes nothing.
#ifndef SENTRY_RUN_FORK_CONTROL_H_
#define SENTRY_RUN_FORK_CONTROL_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "sentry/base/unique_fd.h"

namespace sentry {

inline constexpr uint32_t kControlMagic = 0x314b4653;  // "SFK1", little-endian
inline constexpr uint32_t kMaxForkCount = 100;

enum class ControlOp : uint32_t {
  // Grants `count` fork clones to the sandbox's thread `thread` and one
  // re-listen after them; `count` hand-off sockets (unix, SOCK_SEQPACKET or
  // SOCK_STREAM), the i-th for the i-th child, come with it. Refused (with
  // why) when the sandbox holds a process besides the thread's, its filter
  // chain is 16 deep, or a fork is prepared already.
  kForkPrepare = 1,
  // Withdraws a prepared fork not yet re-listened: grants taken back,
  // children it already made killed, hand-off sockets closed.
  kForkCancel = 2,
};

struct ControlRequest {
  uint32_t magic = kControlMagic;
  uint32_t op = 0;     // ControlOp
  uint64_t id = 0;     // echoed in the reply and the event
  uint32_t count = 0;  // kForkPrepare: 1..kMaxForkCount
  int32_t thread = 0;  // kForkPrepare: the forking thread, as the sandbox names it
};
static_assert(sizeof(ControlRequest) == 24);

enum class ControlKind : uint32_t {
  kReply = 1,  // to a request
  // A prepared fork's re-listen ended: status 0, the parent runs on its new
  // listener (children: how many were handed off; reason: what became of
  // the others); else the errno and why (refused: the parent runs on as
  // before; EBADF and others past the point of return: the sandbox ends).
  kRelistened = 2,
};

struct ControlReply {
  uint32_t magic = kControlMagic;
  uint32_t kind = 0;      // ControlKind
  uint64_t id = 0;        // the request's (a message too short to have one: 0)
  int32_t status = 0;     // 0, or an errno
  uint32_t children = 0;  // kRelistened: children handed off
  char reason[232] = {};  // why, NUL-terminated ("" when all is well)
};
static_assert(sizeof(ControlReply) == 256);

// One request read from sock (non-blocking): ok, or why not.
struct ReceivedRequest {
  bool eof = false;   // the peer is gone
  bool none = false;  // nothing to read (a spurious wake-up)
  bool ok = false;
  std::string why;  // a bad message: what is wrong with it
  ControlRequest request;
  std::vector<UniqueFd> fds;  // what came with it, owned
};
ReceivedRequest ReceiveControlRequest(int sock);

// Sends without blocking (a peer that does not read loses it).
void SendControlReply(int sock, ControlKind kind, uint64_t id, int status,
                      const std::string& reason, uint32_t children = 0);

}  // namespace sentry

#endif  // SENTRY_RUN_FORK_CONTROL_H_
