// The network side of one run: the sandbox's DNS server (always: a lookup
// fails fast and is recorded, or is answered for an allowlisted name) and,
// with --allow-net, the egress that lets allowed connections out.
#ifndef SENTRY_RUN_SANDBOX_NET_H_
#define SENTRY_RUN_SANDBOX_NET_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "sentry/kernel/kernel.h"
#include "sentry/net/dns_server.h"
#include "sentry/net/egress.h"
#include "sentry/run/result.h"
#include "sentry/run/run.h"

namespace sentry {

class SandboxNet final {
 public:
  SandboxNet() = default;
  ~SandboxNet() { Stop(); }
  SandboxNet(const SandboxNet&) = delete;
  SandboxNet& operator=(const SandboxNet&) = delete;

  // Starts the DNS server on dns_socket (bound in init_pid's network
  // namespace by the loader: see loader.h) and, if the options allow any
  // egress, sets kernel.egress. A DNS server that cannot start is a warning
  // (lookups then fail with ECONNREFUSED), never a failed run.
  void Start(Kernel& kernel, pid_t init_pid, const RunOptions& o, SysResult<UniqueFd> dns_socket);
  // The run's network figures and, if --net-bytes cut it, limit "network".
  void Conclude(RunResult* r);
  void Stop();

 private:
  std::unique_ptr<net::NetPolicy> none_;  // the policy of a run with no egress
  std::shared_ptr<net::Egress> egress_;
  std::unique_ptr<net::DnsServer> dns_;
};

}  // namespace sentry

#endif  // SENTRY_RUN_SANDBOX_NET_H_
