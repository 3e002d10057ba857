// DnsServer: the sandbox's resolver, answered by the sentry.
//
// It listens on 127.0.0.1:53 inside the sandbox's network namespace (the
// guest's /etc/resolv.conf names it). A name on the allowlist is resolved by
// the sentry (NetPolicy::Resolve) and answered with its public addresses;
// every other query is answered NXDOMAIN at once and recorded as a denial, so
// a lookup fails fast, says why, and no query (nor data smuggled in its
// labels) ever leaves the machine.
#ifndef SENTRY_NET_DNS_SERVER_H_
#define SENTRY_NET_DNS_SERVER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "sentry/base/sys_result.h"
#include "sentry/base/unique_fd.h"
#include "sentry/net/net_policy.h"

namespace sentry::net {

// One DNS query, parsed.
struct DnsQuestion {
  uint16_t id = 0;
  uint16_t flags = 0;
  std::string name;  // dotted, as asked
  uint16_t qtype = 0;
  uint16_t qclass = 0;
  size_t question_end = 0;  // offset just past the question in the packet
};

// Parses a standard query with one question; false if it is not one.
bool ParseDnsQuery(const uint8_t* p, size_t n, DnsQuestion* q);
// The response: rcode and the addresses (A or AAAA, matching qtype).
std::vector<uint8_t> BuildDnsResponse(const uint8_t* query, const DnsQuestion& q, int rcode,
                                      const std::vector<IpAddr>& answers);

class DnsServer final {
 public:
  // on_denied(query description, hint) records a refused lookup.
  using DeniedFn = std::function<void(const std::string&, const std::string&)>;

  DnsServer(NetPolicy& policy, DeniedFn on_denied)
      : policy_(policy), on_denied_(std::move(on_denied)) {}
  ~DnsServer() { Stop(); }
  DnsServer(const DnsServer&) = delete;
  DnsServer& operator=(const DnsServer&) = delete;

  // Starts answering on `socket`, bound to 127.0.0.1:53 in the sandbox's
  // network namespace (by its loader: see loader.h).
  SysStatus Start(UniqueFd socket);
  void Stop();

 private:
  void Loop();
  void Answer(const uint8_t* p, size_t n, const sockaddr* from, socklen_t from_len);

  NetPolicy& policy_;
  DeniedFn on_denied_;
  UniqueFd sock_;
  UniqueFd wake_;                   // an eventfd: Stop's signal to the loop
  std::set<std::string> reported_;  // refused lookups already recorded (a resolver retries)
  std::thread thread_;
};

}  // namespace sentry::net

#endif  // SENTRY_NET_DNS_SERVER_H_
