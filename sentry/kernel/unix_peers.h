// Who connected each unix stream and seqpacket socket the sentry connected on
// a guest's behalf.
//
// connect() on a unix socket is trapped (its address is a file-system name)
// and made by the sentry, so the kernel records the sentry as the connecting
// task: the accepted socket's SO_PEERCRED and SO_PEERPIDFD would name it
// (af_unix.c, unix_stream_connect: init_peercred(newsk) is current's). The
// sentry keeps, by the connecting socket's inode, the guest task that asked;
// getsockopt(SO_PEERCRED, SO_PEERPIDFD) traps and answers from it. The
// accepted socket's peer (the connecting socket) is found with sock_diag
// (UNIX_DIAG_PEER), in the socket's own network namespace.
#ifndef SENTRY_KERNEL_UNIX_PEERS_H_
#define SENTRY_KERNEL_UNIX_PEERS_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>

#include "sentry/base/sys_result.h"
#include "sentry/base/unique_fd.h"

namespace sentry {

struct Process;

// The guest task that connected a socket, as the sandbox names it, at connect
// time (what the kernel keeps: the pid, and the euid and egid of the caller).
struct UnixConnector {
  pid_t ns_pid = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::weak_ptr<Process> process;  // SO_PEERPIDFD: the process while it lives
  uint64_t seq = 0;                // order of recording (the oldest go first)
};

class UnixPeers final {
 public:
  // At most this many records per sandbox (the sentry's memory for a guest is
  // bounded): past it, records of sockets that no longer exist go, then the
  // oldest. A socket whose record went answers as the kernel does.
  static constexpr size_t kMaxRecords = 8192;

  UnixPeers() = default;
  UnixPeers(const UnixPeers&) = delete;
  UnixPeers& operator=(const UnixPeers&) = delete;

  // sock_ino: the connecting socket, made by the guest.
  void Record(ino_t sock_ino, UnixConnector who);

  // Who the sentry recorded as connecting the peer of sock (inode sock_ino),
  // or nullopt: no record (a socketpair, the accepting side seen from the
  // connecting one, a socket connected natively), or no way to look.
  std::optional<UnixConnector> ConnectorOfPeer(int sock, ino_t sock_ino);

  size_t size() const { return records_.size(); }

 private:
  // The inode of sock_ino's peer (0: none); ENOENT: no such socket.
  SysResult<ino_t> PeerIno(ino_t sock_ino);
  // A NETLINK_SOCK_DIAG socket in sock's network namespace, made once.
  bool EnsureDiag(int sock);
  void Prune();

  UniqueFd diag_;
  ino_t diag_ns_ino_ = 0;
  bool diag_failed_ = false;
  uint32_t nl_seq_ = 0;
  uint64_t next_seq_ = 0;
  std::map<ino_t, UnixConnector> records_;
};

}  // namespace sentry

#endif  // SENTRY_KERNEL_UNIX_PEERS_H_
