#include "sentry/net/net_policy.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "sentry/net/host_resolver.h"

namespace sentry::net {
namespace {

struct Range {
  uint8_t prefix[16];
  int bits;
};

bool InRange(const uint8_t* bytes, const Range& r) {
  int full = r.bits / 8, rest = r.bits % 8;
  if (std::memcmp(bytes, r.prefix, static_cast<size_t>(full)) != 0) return false;
  if (rest == 0) return true;
  auto mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (bytes[full] & mask) == (r.prefix[full] & mask);
}

// IPv4 space that is not the public Internet (RFC 6890 and friends).
constexpr Range kV4NotPublic[] = {
    {{0}, 8},              // "this network", 0.0.0.0
    {{10}, 8},             // private
    {{100, 64}, 10},       // CGNAT
    {{127}, 8},            // loopback
    {{169, 254}, 16},      // link-local, cloud metadata (169.254.169.254)
    {{172, 16}, 12},       // private
    {{192, 0, 0}, 24},     // IETF protocol assignments
    {{192, 0, 2}, 24},     // documentation
    {{192, 88, 99}, 24},   // 6to4 relay anycast
    {{192, 168}, 16},      // private
    {{198, 18}, 15},       // benchmarking
    {{198, 51, 100}, 24},  // documentation
    {{203, 0, 113}, 24},   // documentation
    {{224}, 4},            // multicast
    {{240}, 4},            // reserved, broadcast
};

constexpr Range kV6NotPublic[] = {
    {{0}, 96},                       // unspecified, loopback, IPv4-compatible (::a.b.c.d)
    {{0x01, 0x00}, 64},              // discard
    {{0x20, 0x01, 0x00}, 23},        // IETF assignments, Teredo (embeds other addresses)
    {{0x20, 0x01, 0x0d, 0xb8}, 32},  // documentation
    {{0x00, 0x64, 0xff, 0x9b, 0x00, 0x01}, 48},  // NAT64 local use
    {{0xfc}, 7},                                 // unique local
    {{0xfe, 0x80}, 10},                          // link-local
    {{0xfe, 0xc0}, 10},                          // site-local (deprecated)
    {{0xff}, 8},                                 // multicast
};

bool V4Public(const uint8_t* b) {
  for (const Range& r : kV4NotPublic) {
    if (InRange(b, r)) return false;
  }
  return true;
}

// "*.example.com" allows every name below example.com.
bool Matches(const AllowRule& r, const std::string& name) {
  if (r.literal) return false;
  if (r.host == name) return true;
  if (r.host.size() < 3 || r.host.compare(0, 2, "*.") != 0) return false;
  size_t suffix = r.host.size() - 1;  // ".example.com"
  return name.size() > suffix && name.compare(name.size() - suffix, suffix, r.host, 1) == 0;
}

std::string Normalize(std::string name) {
  absl::AsciiStrToLower(&name);
  while (!name.empty() && name.back() == '.') name.pop_back();
  return name;
}

}  // namespace

bool IpAddr::operator<(const IpAddr& o) const {
  if (family != o.family) return family < o.family;
  return std::memcmp(bytes, o.bytes, sizeof(bytes)) < 0;
}

bool IpAddr::operator==(const IpAddr& o) const {
  return family == o.family && std::memcmp(bytes, o.bytes, sizeof(bytes)) == 0;
}

std::string IpAddr::ToString() const {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(family, bytes, buf, sizeof(buf));
  return buf;
}

std::optional<IpAddr> IpAddr::Parse(const std::string& text) {
  IpAddr a;
  if (inet_pton(AF_INET, text.c_str(), a.bytes) == 1) {
    a.family = AF_INET;
    return a;
  }
  if (inet_pton(AF_INET6, text.c_str(), a.bytes) == 1) {
    a.family = AF_INET6;
    static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(a.bytes, kMapped, 12) == 0) {
      std::memmove(a.bytes, a.bytes + 12, 4);
      std::memset(a.bytes + 4, 0, 12);
      a.family = AF_INET;
    }
    return a;
  }
  return std::nullopt;
}

std::optional<IpAddr> IpAddr::FromSockaddr(const sockaddr* sa, socklen_t len, uint16_t* port) {
  IpAddr a;
  if (sa->sa_family == AF_INET && len >= sizeof(sockaddr_in)) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    a.family = AF_INET;
    std::memcpy(a.bytes, &in->sin_addr, 4);
    *port = ntohs(in->sin_port);
    return a;
  }
  if (sa->sa_family == AF_INET6 && len >= sizeof(sockaddr_in6)) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    char text[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
    *port = ntohs(in6->sin6_port);
    return Parse(text);  // folds IPv4-mapped into IPv4
  }
  return std::nullopt;
}

socklen_t IpAddr::ToSockaddr(uint16_t port, sockaddr_storage* ss) const {
  *ss = {};
  if (family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(ss);
    in->sin_family = AF_INET;
    in->sin_port = htons(port);
    std::memcpy(&in->sin_addr, bytes, 4);
    return sizeof(sockaddr_in);
  }
  auto* in6 = reinterpret_cast<sockaddr_in6*>(ss);
  in6->sin6_family = AF_INET6;
  in6->sin6_port = htons(port);
  std::memcpy(&in6->sin6_addr, bytes, 16);
  return sizeof(sockaddr_in6);
}

bool IsPublicAddress(const IpAddr& a) {
  if (a.family == AF_INET) return V4Public(a.bytes);
  if (a.family != AF_INET6) return false;
  for (const Range& r : kV6NotPublic) {
    if (InRange(a.bytes, r)) return false;
  }
  static constexpr Range kNat64 = {{0x00, 0x64, 0xff, 0x9b}, 96};
  if (InRange(a.bytes, kNat64)) return V4Public(a.bytes + 12);
  static constexpr Range k6to4 = {{0x20, 0x02}, 16};
  if (InRange(a.bytes, k6to4)) return V4Public(a.bytes + 2);
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(a.bytes, kMapped, 12) == 0) return V4Public(a.bytes + 12);
  return true;
}

bool ParseAllowRule(const std::string& text, AllowRule* rule, std::string* why) {
  std::string host = text, port;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos) {
      *why = "an IPv6 address in [] needs its ]";
      return false;
    }
    host = text.substr(1, close - 1);
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') {
        *why = "expected :PORT after ]";
        return false;
      }
      port = text.substr(close + 2);
    }
  } else if (std::count(text.begin(), text.end(), ':') == 1) {
    size_t colon = text.find(':');
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  rule->host = Normalize(host);
  rule->port = 0;
  if (!port.empty()) {
    uint32_t p;
    if (!absl::SimpleAtoi(port, &p) || p == 0 || p > 65535) {
      *why = "the port must be 1 to 65535";
      return false;
    }
    rule->port = static_cast<uint16_t>(p);
  }
  rule->literal = IpAddr::Parse(rule->host);
  if (rule->host.empty() || rule->host.size() > 253 ||
      (!rule->literal && rule->host.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-.*") !=
                             std::string::npos)) {
    *why = "not a host name or IP address";
    return false;
  }
  return true;
}

std::string RefusePrivateRule(const AllowRule& rule, bool allow_private) {
  if (!rule.literal || allow_private || IsPublicAddress(*rule.literal)) return "";
  const IpAddr& a = *rule.literal;
  bool loopback = a.family == AF_INET ? a.bytes[0] == 127 : a == *IpAddr::Parse("::1");
  return absl::StrCat(
      rule.host,
      loopback ? " is a loopback address, which names the sandbox's own loopback"
               : " is a private, link-local or reserved address",
      ": the sandbox never reaches it; --unsafe-allow-private-address lets an allowlisted "
      "private or loopback address out (for tests, never in production)");
}

bool ParseSecretRule(const std::string& text, SecretRule* rule, std::string* why) {
  size_t eq = text.find('=');
  if (eq == std::string::npos) {
    *why = "expected HOST=HEADER:SOURCE";
    return false;
  }
  std::string target = text.substr(0, eq), rest = text.substr(eq + 1);
  rule->tls = true;
  if (absl::StartsWith(target, "http://")) {
    rule->tls = false;
    target = target.substr(7);
  } else if (absl::StartsWith(target, "https://")) {
    target = target.substr(8);
  }
  AllowRule host;
  if (!ParseAllowRule(target, &host, why) || host.literal ||
      host.host.find('*') != std::string::npos) {
    if (why->empty()) *why = "HOST must be a name";
    return false;
  }
  rule->host = host.host;
  rule->port = host.port ? host.port : (rule->tls ? 443 : 80);
  size_t colon = rest.find(':');
  if (colon == std::string::npos || colon == 0) {
    *why = "expected HEADER:SOURCE after =";
    return false;
  }
  rule->header = rest.substr(0, colon);
  for (char c : rule->header) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-') {
      *why = "a header name is letters, digits and -";
      return false;
    }
  }
  std::string source = rest.substr(colon + 1);
  if (absl::StartsWith(source, "env:")) {
    const char* v = getenv(source.c_str() + 4);
    if (!v || !*v) {
      *why = "the environment variable " + source.substr(4) + " is not set";
      return false;
    }
    rule->value = v;
  } else if (absl::StartsWith(source, "file:")) {
    std::ifstream in(source.substr(5));
    if (!in || !std::getline(in, rule->value) || rule->value.empty()) {
      *why = "cannot read a value from " + source.substr(5);
      return false;
    }
  } else {
    *why = "SOURCE is env:VAR or file:PATH (the value itself never goes on a command line)";
    return false;
  }
  if (rule->value.find_first_of("\r\n") != std::string::npos) {
    *why = "the value holds a line break";
    return false;
  }
  return true;
}

bool NetPolicy::PrivateAllowed(const IpAddr& a, bool operator_given) const {
  return IsPublicAddress(a) || (operator_given && o_.allow_private);
}

IpAddr NetPolicy::SecretAddress(size_t index) {
  IpAddr a;
  a.family = AF_INET;
  a.bytes[0] = 198;
  a.bytes[1] = 18;
  a.bytes[2] = static_cast<uint8_t>((index + 1) >> 8);
  a.bytes[3] = static_cast<uint8_t>(index + 1);
  return a;
}

const SecretRule* NetPolicy::SecretAt(const IpAddr& a) const {
  for (size_t i = 0; i < o_.secrets.size(); ++i) {
    if (SecretAddress(i) == a) return &o_.secrets[i];
  }
  return nullptr;
}

std::vector<IpAddr> NetPolicy::Lookup(const std::string& name, int cancel_fd,
                                      bool* from_operator) const {
  auto it = o_.static_hosts.find(name);
  *from_operator = it != o_.static_hosts.end();
  if (*from_operator) return {it->second};
  return o_.resolver ? o_.resolver(name) : ResolveOnHost(name, 2000, cancel_fd);
}

std::vector<IpAddr> NetPolicy::ResolveUpstream(const std::string& host, std::string* why) {
  bool from_operator;
  std::vector<IpAddr> found = Lookup(host, -1, &from_operator);
  std::vector<IpAddr> out;
  for (const IpAddr& a : found) {
    if (PrivateAllowed(a, from_operator)) out.push_back(a);
  }
  if (out.empty()) *why = host + " has no public address";
  return out;
}

std::vector<IpAddr> NetPolicy::Resolve(const std::string& raw, int family, std::string* why,
                                       int cancel_fd) {
  std::string name = Normalize(raw);
  for (size_t i = 0; i < o_.secrets.size(); ++i) {
    if (o_.secrets[i].host != name) continue;
    if (family == AF_INET) return {SecretAddress(i)};
    return {};
  }
  std::vector<uint16_t> ports;
  for (const AllowRule& r : o_.allow) {
    if (Matches(r, name)) ports.push_back(r.port);
  }
  if (ports.empty()) {
    *why = name + " is not on this sandbox's network allowlist (--allow-net)";
    return {};
  }
  bool from_operator;
  std::vector<IpAddr> found = Lookup(name, cancel_fd, &from_operator);
  if (found.empty()) {
    *why = name + " could not be resolved";
    return {};
  }
  std::vector<IpAddr> out;
  std::lock_guard<std::mutex> lock(mu_);
  bool any = false;
  for (const IpAddr& a : found) {
    if (!PrivateAllowed(a, from_operator)) continue;
    any = true;
    // A wildcard rule lets the guest resolve names without end, and a DNS it
    // controls may answer each with a new address: past kMaxResolved one
    // older address is forgotten (the guest's resolver gets it back by
    // asking again), so the set stays bounded.
    if (resolved_.size() >= kMaxResolved && !resolved_.count(a)) {
      operator_given_.erase(resolved_.begin()->first);
      resolved_.erase(resolved_.begin());
    }
    std::set<uint16_t>& allowed = resolved_[a];
    allowed.insert(ports.begin(), ports.end());
    if (from_operator) operator_given_.insert(a);
    if (a.family == family) out.push_back(a);
  }
  if (!any) {
    *why = name +
           " resolves only to loopback, private or link-local addresses, which the sandbox "
           "never reaches";
  }
  return out;
}

Verdict NetPolicy::MayConnect(const IpAddr& addr, uint16_t port) {
  std::string where = addr.family == AF_INET6 ? absl::StrCat("[", addr.ToString(), "]:", port)
                                              : absl::StrCat(addr.ToString(), ":", port);
  for (const AllowRule& r : o_.allow) {
    if (!r.literal || !(*r.literal == addr) || (r.port && r.port != port)) continue;
    if (PrivateAllowed(addr, true)) return {true, ""};
    return {false, where +
                       " is a loopback, private or link-local address: refused even when "
                       "allowlisted"};
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = resolved_.find(addr);
  if (it != resolved_.end() && (it->second.count(0) || it->second.count(port))) {
    if (PrivateAllowed(addr, operator_given_.count(addr) > 0)) return {true, ""};
  }
  if (it != resolved_.end()) {
    return {false, where + ": that port is not on this sandbox's network allowlist"};
  }
  if (!IsPublicAddress(addr)) {
    return {false, where +
                       " is a loopback, private or link-local address (such as the cloud "
                       "metadata service): the sandbox never reaches those"};
  }
  return {false, where +
                     " is not on this sandbox's network allowlist (--allow-net HOST[:PORT]); "
                     "connect by a name on the list"};
}

}  // namespace sentry::net
