#include "sentry/run/sandbox_net.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sentry/base/log.h"
#include "sentry/net/netns_socket.h"

namespace sentry {

void SandboxNet::Start(Kernel& kernel, pid_t init_pid, const RunOptions& o,
                       SysResult<UniqueFd> dns_socket) {
  net::NetPolicy* policy;
  // An engine's network namespace (OCI): connections leave from there, or
  // not at all. One that cannot be opened never falls back to the host's.
  UniqueFd outside;
  bool outside_ok = true;
  if (!o.outside_netns.empty()) {
    SysResult<UniqueFd> ns = net::OpenNetns(o.outside_netns);
    if (ns.ok()) {
      outside = std::move(*ns);
    } else {
      outside_ok = false;
      log::Notice(absl::StrCat("warning: cannot join the network namespace ", o.outside_netns, " (",
                               std::strerror(ns.error()), "): no connection leaves the sandbox"),
                  log::Level::kWarn);
    }
  }
  if (outside_ok && (!o.net.allow.empty() || !o.net.secrets.empty())) {
    egress_ = std::make_shared<net::Egress>(o.net, o.net_bytes, std::move(outside));
    egress_->set_guest_sockets([&kernel] {
      std::lock_guard<std::mutex> lock(kernel.mu());
      return GuestSocketInodes(kernel.tasks(), kernel.proc_opener());
    });
    kernel.egress = egress_;
    policy = &egress_->policy();
    if (!o.net.secrets.empty()) {
      UniqueFd netns(
          open(absl::StrCat("/proc/", init_pid, "/ns/net").c_str(), O_RDONLY | O_CLOEXEC));
      SysStatus st = netns ? egress_->StartProxy(netns.get()) : SysStatus(Errno{errno});
      if (!st.ok()) {
        log::Notice(absl::StrCat("warning: no credentials proxy (", std::strerror(st.error()),
                                 "): --secret hosts fail"),
                    log::Level::kWarn);
      }
    }
  } else {
    none_ = std::make_unique<net::NetPolicy>(net::NetPolicyOptions{});
    policy = none_.get();
  }
  dns_ = std::make_unique<net::DnsServer>(
      *policy, [&kernel](const std::string& call, const std::string& hint) {
        std::lock_guard<std::mutex> lock(kernel.mu());
        ++kernel.denial_count;
        if (kernel.denials.size() < Kernel::kMaxDenials) {
          kernel.denials.push_back({call, "dns", ENETUNREACH, hint});
        }
      });
  SysStatus st = dns_socket.ok() ? dns_->Start(std::move(*dns_socket)) : Errno{dns_socket.error()};
  if (!st.ok()) {
    log::Notice(
        absl::StrCat("warning: no DNS server in the sandbox (", std::strerror(st.error()), ")"),
        log::Level::kWarn);
  }
}

void SandboxNet::Conclude(RunResult* r) {
  if (!egress_) return;
  net::EgressStats s = egress_->Stats();
  r->net_connections = s.connections;
  r->net_bytes_out = s.bytes_out;
  r->net_bytes_in = s.bytes_in;
  if (s.cap_hit && !r->limit) r->limit = "network";
}

void SandboxNet::Stop() {
  if (dns_) dns_->Stop();
  if (egress_) egress_->Shutdown();
}

}  // namespace sentry
