// libFuzzer target: the DNS server's query parser (sentry/net/dns_server.cc).
//
// The bytes are one UDP datagram a guest sends to 127.0.0.1:53. The target
// runs what DnsServer::Answer runs on it: ParseDnsQuery, then
// BuildDnsResponse with no answer (NXDOMAIN, NOTIMP) and with an A and an
// AAAA answer, and checks the reply against the query:
//  - the question section copied back is exactly the query's, and ends
//    inside the datagram;
//  - the name has at most 253 characters and the reply's header says
//    "response", one question, as many answers as given;
//  - a reply never parses as a query (so a looped-back reply is dropped).
#include <arpa/inet.h>
#include <sys/socket.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "sentry/net/dns_server.h"

namespace {

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "fuzz_dns_query invariant broken: %s\n", what);
  std::abort();
}

uint16_t Get16(const std::vector<uint8_t>& v, size_t at) {
  return static_cast<uint16_t>(v[at] << 8 | v[at + 1]);
}

void CheckReply(const uint8_t* data, const sentry::net::DnsQuestion& q,
                const std::vector<uint8_t>& reply, size_t answers) {
  size_t qlen = q.question_end - 12;
  if (reply.size() < 12 + qlen) Fail("reply shorter than the question");
  if (std::memcmp(reply.data() + 12, data + 12, qlen) != 0) Fail("question not copied back");
  if (Get16(reply, 0) != q.id) Fail("id");
  if (!(reply[2] & 0x80)) Fail("reply not marked a response");
  if (Get16(reply, 4) != 1 || Get16(reply, 6) != answers) Fail("counts");
  sentry::net::DnsQuestion again;
  if (sentry::net::ParseDnsQuery(reply.data(), reply.size(), &again))
    Fail("reply parses as a query");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using sentry::net::IpAddr;
  sentry::net::DnsQuestion q;
  if (!sentry::net::ParseDnsQuery(data, size, &q)) return 0;
  if (q.question_end > size || q.question_end < 12 + 1 + 4) Fail("question_end out of the packet");
  if (q.name.size() > 253) Fail("name longer than 253");
  if (q.flags & 0x8000) Fail("a response parsed as a query");

  CheckReply(data, q, sentry::net::BuildDnsResponse(data, q, 3, {}), 0);
  IpAddr v4{AF_INET, {203, 0, 113, 7}};
  IpAddr v6{AF_INET6, {0x20, 0x01, 0x0d, 0xb8}};
  CheckReply(data, q, sentry::net::BuildDnsResponse(data, q, 0, {v4, v6}), 2);
  return 0;
}
