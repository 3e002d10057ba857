// The network allowlist's decisions and the DNS codec, without a sandbox.
#include "sentry/net/net_policy.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sentry/net/dns_server.h"
#include "sentry/net/host_resolver.h"
#include "sentry/net/http_proxy.h"

namespace sentry::net {
namespace {

IpAddr Ip(const std::string& s) {
  std::optional<IpAddr> a = IpAddr::Parse(s);
  EXPECT_TRUE(a.has_value()) << s;
  return a.value_or(IpAddr{});
}

TEST(IsPublicAddressTest, PrivateLocalAndSpecialRangesAreNot) {
  for (const char* s : {"0.0.0.0",
                        "0.1.2.3",
                        "10.0.0.1",
                        "10.255.255.255",
                        "100.64.0.1",
                        "100.127.255.254",
                        "127.0.0.1",
                        "127.1.2.3",
                        "169.254.169.254",
                        "169.254.0.1",
                        "172.16.0.1",
                        "172.31.255.1",
                        "192.0.0.8",
                        "192.0.2.1",
                        "192.168.1.1",
                        "198.18.0.1",
                        "198.51.100.7",
                        "203.0.113.9",
                        "224.0.0.1",
                        "239.1.1.1",
                        "240.0.0.1",
                        "255.255.255.255",
                        "::",
                        "::1",
                        "fe80::1",
                        "fc00::1",
                        "fd12:3456::1",
                        "ff02::1",
                        "2001:db8::1",
                        "::ffff:169.254.169.254",
                        "::ffff:127.0.0.1",
                        "::ffff:10.0.0.1",
                        "::169.254.169.254",
                        "64:ff9b::a9fe:a9fe",
                        "64:ff9b:1::1",
                        "2002:a9fe:a9fe::1",
                        "2001::1",
                        "fec0::1"}) {
    EXPECT_FALSE(IsPublicAddress(Ip(s))) << s;
  }
}

TEST(IsPublicAddressTest, PublicOnesAre) {
  for (const char* s : {"1.1.1.1", "8.8.8.8", "93.184.216.34", "172.32.0.1", "100.128.0.1",
                        "169.255.0.1", "2606:4700:4700::1111", "2a00:1450:4001::1",
                        "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1"}) {
    EXPECT_TRUE(IsPublicAddress(Ip(s))) << s;
  }
}

TEST(IpAddrTest, SockaddrRoundTrip) {
  for (const char* s : {"93.184.216.34", "2606:4700::1111"}) {
    sockaddr_storage ss;
    socklen_t len = Ip(s).ToSockaddr(443, &ss);
    uint16_t port = 0;
    std::optional<IpAddr> back =
        IpAddr::FromSockaddr(reinterpret_cast<const sockaddr*>(&ss), len, &port);
    ASSERT_TRUE(back.has_value()) << s;
    EXPECT_EQ(*back, Ip(s));
    EXPECT_EQ(port, 443);
  }
}

TEST(IpAddrTest, MappedFoldsToV4AndParsingIsStrict) {
  EXPECT_EQ(Ip("::ffff:1.2.3.4"), Ip("1.2.3.4"));
  EXPECT_EQ(Ip("::ffff:1.2.3.4").family, AF_INET);
  // The forms inet_aton accepts are names here, not addresses.
  for (const char* s :
       {"2852039166", "0xA9FEA9FE", "0251.0376.0251.0376", "169.254.43518", "1.2.3", ""}) {
    EXPECT_FALSE(IpAddr::Parse(s).has_value()) << s;
  }
}

TEST(AllowRuleTest, Forms) {
  AllowRule r;
  std::string why;
  ASSERT_TRUE(ParseAllowRule("API.Example.com.:443", &r, &why)) << why;
  EXPECT_EQ(r.host, "api.example.com");
  EXPECT_EQ(r.port, 443);
  EXPECT_FALSE(r.literal);
  ASSERT_TRUE(ParseAllowRule("[2606:4700::1]:8443", &r, &why)) << why;
  EXPECT_TRUE(r.literal);
  EXPECT_EQ(r.port, 8443);
  ASSERT_TRUE(ParseAllowRule("2606:4700::1", &r, &why)) << why;
  EXPECT_EQ(r.port, 0);
  ASSERT_TRUE(ParseAllowRule("*.example.com", &r, &why)) << why;
  for (const char* bad : {"", "host:0", "host:65536", "host:x", "ho st", "a/b", "[::1"}) {
    EXPECT_FALSE(ParseAllowRule(bad, &r, &why)) << bad;
  }
}

NetPolicyOptions Options(const std::vector<std::string>& rules, int* resolver_calls,
                         std::vector<IpAddr> answer) {
  NetPolicyOptions o;
  for (const std::string& s : rules) {
    AllowRule r;
    std::string why;
    EXPECT_TRUE(ParseAllowRule(s, &r, &why)) << s;
    o.allow.push_back(r);
  }
  o.resolver = [resolver_calls, answer](const std::string&) {
    ++*resolver_calls;
    return answer;
  };
  return o;
}

TEST(NetPolicyTest, ARefusedNameNeverReachesAResolver) {
  int calls = 0;
  NetPolicy p(Options({"api.example.com:443"}, &calls, {Ip("93.184.216.34")}));
  std::string why;
  // Data smuggled in labels (DNS exfiltration) is refused before any lookup.
  EXPECT_TRUE(p.Resolve("c2VjcmV0.exfil.attacker.example", AF_INET, &why).empty());
  EXPECT_NE(why.find("not on this sandbox's network allowlist"), std::string::npos) << why;
  EXPECT_EQ(calls, 0);
}

TEST(NetPolicyTest, ResolvedAddressesAndTheirPortsAreWhatMayBeReached) {
  int calls = 0;
  NetPolicy p(Options({"api.example.com:443", "*.cdn.example"}, &calls,
                      {Ip("93.184.216.34"), Ip("2606:2800:220:1::1")}));
  std::string why;
  EXPECT_FALSE(p.MayConnect(Ip("93.184.216.34"), 443).allowed) << "not resolved yet";
  std::vector<IpAddr> v4 = p.Resolve("API.example.com.", AF_INET, &why);
  ASSERT_EQ(v4.size(), 1u) << why;
  EXPECT_EQ(v4[0], Ip("93.184.216.34"));
  EXPECT_TRUE(p.MayConnect(Ip("93.184.216.34"), 443).allowed);
  EXPECT_TRUE(p.MayConnect(Ip("2606:2800:220:1::1"), 443).allowed);
  EXPECT_FALSE(p.MayConnect(Ip("93.184.216.34"), 80).allowed);
  EXPECT_FALSE(p.MayConnect(Ip("8.8.8.8"), 443).allowed);
  EXPECT_EQ(p.Resolve("img.cdn.example", AF_INET6, &why).size(), 1u) << why;
  EXPECT_TRUE(p.MayConnect(Ip("93.184.216.34"), 80).allowed) << "*.cdn.example has any port";
  why.clear();
  EXPECT_TRUE(p.Resolve("cdn.example", AF_INET, &why).empty()) << "the wildcard is below only";
}

// A wildcard rule and a DNS that answers every name with a new address: the
// policy remembers at most kMaxResolved of them, the newest still reachable.
TEST(NetPolicyTest, ResolvedAddressesStayBounded) {
  NetPolicyOptions o;
  AllowRule r;
  std::string why;
  ASSERT_TRUE(ParseAllowRule("*.attacker.example:443", &r, &why));
  o.allow.push_back(r);
  uint32_t next = 0x5db80000;  // 93.184.0.0 onwards: public
  o.resolver = [&next](const std::string&) {
    uint32_t a = next++;
    return std::vector<IpAddr>{Ip(std::to_string(a >> 24) + "." + std::to_string(a >> 16 & 255) +
                                  "." + std::to_string(a >> 8 & 255) + "." +
                                  std::to_string(a & 255))};
  };
  NetPolicy p(std::move(o));
  std::vector<IpAddr> last;
  for (int i = 0; i < 20000; ++i) {
    last = p.Resolve("n" + std::to_string(i) + ".attacker.example", AF_INET, &why);
    ASSERT_EQ(last.size(), 1u) << why;
  }
  EXPECT_TRUE(p.MayConnect(last[0], 443).allowed);
  EXPECT_FALSE(p.MayConnect(Ip("93.184.0.0"), 443).allowed) << "the oldest was forgotten";
  EXPECT_LE(p.resolved_count(), NetPolicy::kMaxResolved);
}

TEST(NetPolicyTest, NamesThatResolveToPrivateAddressesAreRefused) {
  int calls = 0;
  NetPolicy p(Options({"rebind.example"}, &calls,
                      {Ip("127.0.0.1"), Ip("169.254.169.254"), Ip("::ffff:10.1.2.3")}));
  std::string why;
  EXPECT_TRUE(p.Resolve("rebind.example", AF_INET, &why).empty());
  EXPECT_NE(why.find("loopback, private or link-local"), std::string::npos) << why;
  EXPECT_FALSE(p.MayConnect(Ip("127.0.0.1"), 80).allowed);
  EXPECT_FALSE(p.MayConnect(Ip("169.254.169.254"), 80).allowed);
}

TEST(NetPolicyTest, PrivateLiteralsOnlyWithTheUnsafeFlag) {
  int calls = 0;
  NetPolicyOptions o = Options({"127.0.0.1:8080", "169.254.169.254"}, &calls, {});
  NetPolicy strict(o);
  EXPECT_FALSE(strict.MayConnect(Ip("127.0.0.1"), 8080).allowed);
  EXPECT_FALSE(strict.MayConnect(Ip("169.254.169.254"), 80).allowed);
  o.allow_private = true;
  NetPolicy unsafe(o);
  EXPECT_TRUE(unsafe.MayConnect(Ip("127.0.0.1"), 8080).allowed);
  EXPECT_FALSE(unsafe.MayConnect(Ip("127.0.0.1"), 8081).allowed);
  // The static host is the operator's; a resolved name never is.
  o.allow = {};
  AllowRule r;
  std::string why;
  ParseAllowRule("svc.test:9000", &r, &why);
  o.allow.push_back(r);
  o.static_hosts["svc.test"] = Ip("127.0.0.1");
  NetPolicy with_host(o);
  EXPECT_EQ(with_host.Resolve("svc.test", AF_INET, &why).size(), 1u) << why;
  EXPECT_TRUE(with_host.MayConnect(Ip("127.0.0.1"), 9000).allowed);
  EXPECT_EQ(calls, 0);
}

TEST(DnsCodecTest, QueryAnswerRoundTrip) {
  std::vector<uint8_t> q = BuildDnsQuery(0x1234, "api.example.com", 1);
  DnsQuestion parsed;
  ASSERT_TRUE(ParseDnsQuery(q.data(), q.size(), &parsed));
  EXPECT_EQ(parsed.id, 0x1234);
  EXPECT_EQ(parsed.name, "api.example.com");
  EXPECT_EQ(parsed.qtype, 1);
  std::vector<uint8_t> reply =
      BuildDnsResponse(q.data(), parsed, 0, {Ip("93.184.216.34"), Ip("1.2.3.4")});
  std::vector<IpAddr> got;
  ASSERT_TRUE(ParseDnsAnswers(reply.data(), reply.size(), 0x1234, &got));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], Ip("93.184.216.34"));
  EXPECT_FALSE(ParseDnsAnswers(reply.data(), reply.size(), 0x9999, &got)) << "another id";
  std::vector<uint8_t> nx = BuildDnsResponse(q.data(), parsed, 3, {});
  EXPECT_EQ(nx[3] & 0xf, 3);
}

TEST(DnsCodecTest, MalformedQueriesAreRejected) {
  DnsQuestion q;
  std::vector<uint8_t> ok = BuildDnsQuery(1, "a.b", 28);
  for (size_t cut = 0; cut < ok.size(); ++cut) {
    EXPECT_FALSE(ParseDnsQuery(ok.data(), cut, &q)) << "truncated at " << cut;
  }
  std::vector<uint8_t> pointer = ok;
  pointer[12] = 0xc0;  // compression in the question
  EXPECT_FALSE(ParseDnsQuery(pointer.data(), pointer.size(), &q));
  std::vector<uint8_t> response = ok;
  response[2] |= 0x80;
  EXPECT_FALSE(ParseDnsQuery(response.data(), response.size(), &q));
}

TEST(HttpProxyTest, RewriteDropsTheGuestsCopyOfTheHeaderAndAddsTheSecret) {
  SecretRule rule;
  rule.host = "api.example.com";
  rule.header = "Authorization";
  rule.value = "Bearer real";
  uint64_t len;
  int status;
  std::string out = RewriteRequestHead(
      "POST http://api.example.com/v1?q=1 HTTP/1.1\r\nHost: evil.example\r\n"
      "authorization: forged\r\nAUTHORIZATION: forged2\r\nContent-Length: 5\r\n"
      "Connection: keep-alive\r\nX-Other: kept\r\n\r\n",
      rule, &len, &status);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(len, 5u);
  EXPECT_EQ(out,
            "POST /v1?q=1 HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: 5\r\n"
            "X-Other: kept\r\nAuthorization: Bearer real\r\nConnection: close\r\n\r\n");
}

TEST(HttpProxyTest, RewriteRefusesWhatCouldSmuggle) {
  SecretRule rule;
  rule.host = "api.example.com";
  rule.header = "Authorization";
  rule.value = "v";
  uint64_t len;
  int status;
  for (const std::string& head : {
           std::string("GET / HTTP/1.1\r\nX: a\nAuthorization: forged\r\n\r\n"),
           std::string("GET / HTTP/1.1\r\nX: a\rAuthorization: forged\r\n\r\n"),
           std::string("GET / HTTP/1.1\r\n Authorization: folded\r\n\r\n"),
           std::string("GET / HTTP/1.1\r\nNoColon\r\n\r\n"),
           std::string("GET / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"),
           std::string("GET /a b HTTP/1.1\r\n\r\n"),
           std::string("GET / HTTP/2\r\n\r\n"),
           std::string("GET relative HTTP/1.1\r\n\r\n"),
           std::string("GET / HTTP/1.1\r\nX\0Y: 1\r\n\r\n", 26),
       }) {
    EXPECT_EQ(RewriteRequestHead(head, rule, &len, &status), "") << head;
    EXPECT_EQ(status, 400) << head;
  }
  EXPECT_EQ(RewriteRequestHead("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", rule, &len,
                               &status),
            "");
  EXPECT_EQ(status, 411);
}

}  // namespace
}  // namespace sentry::net
