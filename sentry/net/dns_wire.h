// What the sandbox's DNS server (dns_server.cc) and the sentry's own
// resolver (host_resolver.cc) share of DNS's wire format (RFC 1035).
#ifndef SENTRY_NET_DNS_WIRE_H_
#define SENTRY_NET_DNS_WIRE_H_

#include <cstdint>

namespace sentry::net::dns {

constexpr uint16_t kTypeA = 1;
constexpr uint16_t kTypeAAAA = 28;

// A big-endian 16-bit field at p (the caller has checked the length).
inline uint16_t Get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }

}  // namespace sentry::net::dns

#endif  // SENTRY_NET_DNS_WIRE_H_
