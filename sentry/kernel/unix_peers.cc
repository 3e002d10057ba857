#include "sentry/kernel/unix_peers.h"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/sockios.h>
#include <linux/unix_diag.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "sentry/net/netns_socket.h"

namespace sentry {
namespace {

// The inode of the network namespace sock lives in (0: unknown).
ino_t NetnsInoOf(int sock) {
  int ns = ioctl(sock, SIOCGSKNS);
  if (ns < 0) return 0;
  UniqueFd owned(ns);
  struct stat st;
  return fstat(ns, &st) == 0 ? st.st_ino : 0;
}

ino_t OwnNetnsIno() {
  struct stat st;
  return stat("/proc/self/ns/net", &st) == 0 ? st.st_ino : 0;
}

}  // namespace

bool UnixPeers::EnsureDiag(int sock) {
  if (diag_.get() >= 0) return NetnsInoOf(sock) == diag_ns_ino_;
  if (diag_failed_) return false;
  ino_t want = NetnsInoOf(sock);
  if (want == 0) return false;
  SysResult<UniqueFd> fd = Errno{EINVAL};
  if (want == OwnNetnsIno()) {
    fd = net::SocketInNetns(-1, AF_NETLINK, SOCK_DGRAM, NETLINK_SOCK_DIAG);
  } else {
    UniqueFd ns(ioctl(sock, SIOCGSKNS));
    if (ns.get() >= 0) fd = net::SocketInNetns(ns.get(), AF_NETLINK, SOCK_DGRAM, NETLINK_SOCK_DIAG);
  }
  if (!fd.ok()) {
    diag_failed_ = true;  // once: a sandbox whose sentry cannot look answers as the kernel
    return false;
  }
  diag_ = std::move(*fd);
  diag_ns_ino_ = want;
  return true;
}

SysResult<ino_t> UnixPeers::PeerIno(ino_t sock_ino) {
  struct {
    nlmsghdr nlh;
    unix_diag_req req;
  } ask{};
  ask.nlh.nlmsg_len = sizeof(ask);
  ask.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  ask.nlh.nlmsg_flags = NLM_F_REQUEST;
  ask.nlh.nlmsg_seq = ++nl_seq_;
  ask.req.sdiag_family = AF_UNIX;
  ask.req.udiag_states = ~0u;
  ask.req.udiag_ino = static_cast<uint32_t>(sock_ino);
  ask.req.udiag_show = UDIAG_SHOW_PEER;
  ask.req.udiag_cookie[0] = ask.req.udiag_cookie[1] = ~0u;  // INET_DIAG_NOCOOKIE
  sockaddr_nl to{};
  to.nl_family = AF_NETLINK;
  if (sendto(diag_.get(), &ask, sizeof(ask), MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&to),
             sizeof(to)) < 0) {
    return Errno{errno};
  }
  alignas(nlmsghdr) char buf[8192];
  for (;;) {
    ssize_t n = recv(diag_.get(), buf, sizeof(buf), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno{errno};
    }
    int left = static_cast<int>(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_seq != ask.nlh.nlmsg_seq) continue;  // a late answer to an earlier question
      if (h->nlmsg_type == NLMSG_ERROR) {
        if (h->nlmsg_len < NLMSG_LENGTH(sizeof(nlmsgerr))) return Errno{EIO};
        int err = -static_cast<nlmsgerr*>(NLMSG_DATA(h))->error;
        return Errno{err > 0 ? err : EIO};
      }
      if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
          h->nlmsg_len < NLMSG_LENGTH(sizeof(unix_diag_msg))) {
        return Errno{EIO};
      }
      auto* msg = static_cast<unix_diag_msg*>(NLMSG_DATA(h));
      if (msg->udiag_ino != sock_ino) return Errno{EIO};
      int attr_len = static_cast<int>(h->nlmsg_len - NLMSG_LENGTH(sizeof(*msg)));
      for (auto* a = reinterpret_cast<rtattr*>(msg + 1); RTA_OK(a, attr_len);
           a = RTA_NEXT(a, attr_len)) {
        if (a->rta_type == UNIX_DIAG_PEER && RTA_PAYLOAD(a) >= sizeof(uint32_t)) {
          uint32_t peer;
          std::memcpy(&peer, RTA_DATA(a), sizeof(peer));
          return static_cast<ino_t>(peer);
        }
      }
      return ino_t{0};
    }
  }
}

void UnixPeers::Record(ino_t sock_ino, UnixConnector who) {
  if (records_.size() >= kMaxRecords && records_.count(sock_ino) == 0) Prune();
  who.seq = next_seq_++;
  records_[sock_ino] = std::move(who);
}

void UnixPeers::Prune() {
  if (diag_.get() >= 0) {
    std::erase_if(records_, [&](const auto& r) {
      SysResult<ino_t> peer = PeerIno(r.first);
      return !peer.ok() && peer.error() == ENOENT;
    });
  }
  while (records_.size() >= kMaxRecords * 3 / 4) {
    auto oldest = records_.begin();
    for (auto it = records_.begin(); it != records_.end(); ++it) {
      if (it->second.seq < oldest->second.seq) oldest = it;
    }
    records_.erase(oldest);
  }
}

std::optional<UnixConnector> UnixPeers::ConnectorOfPeer(int sock, ino_t sock_ino) {
  if (records_.empty() || !EnsureDiag(sock)) return std::nullopt;
  SysResult<ino_t> peer = PeerIno(sock_ino);
  if (!peer.ok() || *peer == 0) return std::nullopt;
  auto it = records_.find(*peer);
  if (it == records_.end()) return std::nullopt;
  return it->second;
}

}  // namespace sentry
