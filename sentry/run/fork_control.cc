#include "sentry/run/fork_control.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace sentry {

ReceivedRequest ReceiveControlRequest(int sock) {
  ReceivedRequest out;
  out.request.magic = 0;
  // One byte more than a request: a longer message shows as MSG_TRUNC.
  char buf[sizeof(ControlRequest) + 1];
  constexpr size_t kMaxFds = kMaxForkCount + 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
  iovec iov{buf, sizeof(buf)};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
    out.none = true;
    return out;
  }
  if (n <= 0) {
    out.eof = true;
    return out;
  }
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      out.fds.emplace_back(fd);
    }
  }
  if (static_cast<size_t>(n) >= sizeof(ControlRequest)) {
    std::memcpy(&out.request, buf, sizeof(ControlRequest));
  }
  if (msg.msg_flags & MSG_CTRUNC) {
    out.why = absl::StrCat("more than ", kMaxFds, " fds came with a control message");
    return out;
  }
  if ((msg.msg_flags & MSG_TRUNC) || static_cast<size_t>(n) != sizeof(ControlRequest)) {
    out.request.id = 0;
    out.why = absl::StrCat("a control message is ", sizeof(ControlRequest), " bytes, not ",
                           (msg.msg_flags & MSG_TRUNC) ? "more" : std::to_string(n));
    return out;
  }
  const ControlRequest& r = out.request;
  if (r.magic != kControlMagic) {
    out.request.id = 0;
    out.why = "not a control message (bad magic)";
    return out;
  }
  switch (static_cast<ControlOp>(r.op)) {
    case ControlOp::kForkPrepare:
      if (r.count < 1 || r.count > kMaxForkCount) {
        out.why = absl::StrCat("a fork's count is 1 to ", kMaxForkCount, ", not ", r.count);
        return out;
      }
      if (r.thread <= 0) {
        out.why = "a fork names its thread by a positive pid";
        return out;
      }
      if (out.fds.size() != r.count) {
        out.why = absl::StrCat("a fork of ", r.count, " needs as many hand-off sockets; ",
                               out.fds.size(), " came");
        return out;
      }
      for (const UniqueFd& fd : out.fds) {
        struct stat st;
        int type = 0;
        socklen_t len = sizeof(type);
        if (fstat(fd.get(), &st) != 0 || !S_ISSOCK(st.st_mode) ||
            getsockopt(fd.get(), SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
            (type != SOCK_SEQPACKET && type != SOCK_STREAM)) {
          out.why = "a hand-off fd is not a stream or seqpacket socket";
          return out;
        }
      }
      break;
    case ControlOp::kForkCancel:
      if (!out.fds.empty()) {
        out.why = "fds came with a fork_cancel";
        return out;
      }
      break;
    default:
      out.why = absl::StrCat("unknown control op ", r.op);
      return out;
  }
  out.ok = true;
  return out;
}

void SendControlReply(int sock, ControlKind kind, uint64_t id, int status,
                      const std::string& reason, uint32_t children) {
  ControlReply r;
  r.kind = static_cast<uint32_t>(kind);
  r.id = id;
  r.status = status;
  r.children = children;
  size_t len = std::min(reason.size(), sizeof(r.reason) - 1);
  std::memcpy(r.reason, reason.data(), len);
  (void)!send(sock, &r, sizeof(r), MSG_NOSIGNAL | MSG_DONTWAIT);
}

}  // namespace sentry
