// NetPolicy: which destinations outside the sandbox a run may reach.
//
// Deny by default. With --allow-net HOST[:PORT] the sentry itself resolves
// HOST (the guest's resolver is answered by the sentry's DNS server, see
// dns_server.h) and remembers the addresses it handed out; a guest connect is
// let out only to such an address (or an allowed IP literal) and port, and
// never to a loopback, private, link-local, CGNAT, multicast, reserved or
// unspecified address, whatever name led there (DNS rebinding), unless the
// operator opted IP literals and --add-host entries in with the loudly named
// --unsafe-allow-private-address.
#ifndef SENTRY_NET_NET_POLICY_H_
#define SENTRY_NET_NET_POLICY_H_

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace sentry::net {

// An IPv4 or IPv6 address, v4 kept as v4 (never v4-mapped).
struct IpAddr {
  int family = 0;          // AF_INET or AF_INET6
  uint8_t bytes[16] = {};  // network order; 4 used for AF_INET
  bool operator<(const IpAddr& o) const;
  bool operator==(const IpAddr& o) const;
  std::string ToString() const;
  static std::optional<IpAddr> Parse(const std::string& text);  // strict inet_pton forms
  // From a socket address; an IPv4-mapped IPv6 address becomes IPv4.
  static std::optional<IpAddr> FromSockaddr(const sockaddr* sa, socklen_t len, uint16_t* port);
  // The socket address of this address and port; returns its length.
  socklen_t ToSockaddr(uint16_t port, sockaddr_storage* ss) const;
};

// Whether an address is one of the public Internet: not loopback, private,
// link-local, CGNAT, multicast, documentation, reserved or unspecified, and
// not such an address in an IPv4-mapped, -compatible or NAT64 form.
bool IsPublicAddress(const IpAddr& a);

// A rule of --allow-net: a name or an IP literal, and a port (0: any).
struct AllowRule {
  std::string host;  // lower case, no trailing dot
  uint16_t port = 0;
  std::optional<IpAddr> literal;
};

// Parses "HOST", "HOST:PORT", "[V6]:PORT", "V6"; false with *why if malformed.
bool ParseAllowRule(const std::string& text, AllowRule* rule, std::string* why);

// Why an allowlisted IP literal is refused where it is read (a flag, a
// limits file, a request, an annotation): a loopback, private or link-local
// one, unless allow_private (--unsafe-allow-private-address). "" if it may
// stand. Without this, such a rule would be taken and then never let out.
std::string RefusePrivateRule(const AllowRule& rule, bool allow_private);

// --secret [http://|https://]HOST[:PORT]=HEADER:SOURCE: the guest's plain
// HTTP to HOST goes through the sentry's proxy, which adds HEADER: value
// upstream (over TLS unless http://). The value never enters the sandbox.
struct SecretRule {
  std::string host;
  bool tls = true;
  uint16_t port = 443;
  std::string header;
  std::string value;
};

// Parses the flag's text; the value is read from SOURCE: env:VAR (the
// caller's environment) or file:PATH (its first line). False with *why.
bool ParseSecretRule(const std::string& text, SecretRule* rule, std::string* why);

struct NetPolicyOptions {
  std::vector<AllowRule> allow;
  std::map<std::string, IpAddr> static_hosts;  // --add-host NAME:IP
  bool allow_private = false;                  // --unsafe-allow-private-address
  // How names on the list are resolved (default: ResolveOnHost); tests count
  // the calls to prove a refused name never reaches a resolver.
  std::function<std::vector<IpAddr>(const std::string&)> resolver;
  std::vector<SecretRule> secrets;
};

// What the policy says of one destination.
struct Verdict {
  bool allowed = false;
  std::string why;  // for a refusal: the hint the model reads
};

class NetPolicy final {
 public:
  explicit NetPolicy(NetPolicyOptions options) : o_(std::move(options)) {}

  bool egress_enabled() const { return !o_.allow.empty() || !o_.secrets.empty(); }
  const std::vector<SecretRule>& secrets() const { return o_.secrets; }

  // The address the sandbox's DNS gives a --secret host: 198.18.0.N
  // (benchmarking space, never routed), which a connect turns into the proxy.
  static IpAddr SecretAddress(size_t index);
  // The --secret rule behind such an address, if it is one.
  const SecretRule* SecretAt(const IpAddr& a) const;
  // The upstream addresses of a --secret host (public ones, or the
  // operator's own with --unsafe-allow-private-address).
  std::vector<IpAddr> ResolveUpstream(const std::string& host, std::string* why);

  // The addresses the guest may be told for a name: resolved by the sentry
  // (static hosts first, then the host's resolver), private ones dropped. An
  // empty result with *why set is a refusal to record. Thread-safe.
  // cancel_fd: a lookup on the host ends when it becomes readable.
  std::vector<IpAddr> Resolve(const std::string& name, int family, std::string* why,
                              int cancel_fd = -1);

  // Whether a guest connect to addr:port may leave the sandbox. Thread-safe.
  // 4,096 resolved addresses (~100 bytes each with their ports): far more
  // than the hosts a run's allowlist names resolve to.
  static constexpr size_t kMaxResolved = 4096;
  Verdict MayConnect(const IpAddr& addr, uint16_t port);
  // How many resolved addresses the policy remembers (at most kMaxResolved).
  size_t resolved_count() {
    std::lock_guard<std::mutex> lock(mu_);
    return resolved_.size();
  }

 private:
  bool PrivateAllowed(const IpAddr& a, bool operator_given) const;
  // A name's addresses: an --add-host entry (*from_operator), else the
  // resolver's answer.
  std::vector<IpAddr> Lookup(const std::string& name, int cancel_fd, bool* from_operator) const;

  NetPolicyOptions o_;
  std::mutex mu_;
  // Addresses handed out by Resolve, with the ports their name's rules allow
  // (0: any).
  std::map<IpAddr, std::set<uint16_t>> resolved_;
  std::set<IpAddr> operator_given_;  // from --add-host: may be private with the unsafe flag
};

}  // namespace sentry::net

#endif  // SENTRY_NET_NET_POLICY_H_
