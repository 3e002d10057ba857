// The sentry's own stub resolver, for allowlisted names only: the host's
// /etc/hosts, then the nameservers of the host's /etc/resolv.conf over UDP.
// (The sentry is a static binary: glibc's getaddrinfo would load NSS modules
// at run time, so it resolves by itself.)
#ifndef SENTRY_NET_HOST_RESOLVER_H_
#define SENTRY_NET_HOST_RESOLVER_H_

#include <string>
#include <vector>

#include "sentry/net/net_policy.h"

namespace sentry::net {

// The IPv4 and IPv6 addresses of name; empty if it has none, no server
// answered within timeout_ms (per server), or cancel_fd became readable.
std::vector<IpAddr> ResolveOnHost(const std::string& name, int timeout_ms = 2000,
                                  int cancel_fd = -1);

// Parses a DNS response to a query with this id; the A and AAAA records of
// its answer section. False if it is not such a response.
bool ParseDnsAnswers(const uint8_t* p, size_t n, uint16_t id, std::vector<IpAddr>* out);

// A standard recursive query for name and qtype.
std::vector<uint8_t> BuildDnsQuery(uint16_t id, const std::string& name, uint16_t qtype);

}  // namespace sentry::net

#endif  // SENTRY_NET_HOST_RESOLVER_H_
