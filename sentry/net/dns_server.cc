#include "sentry/net/dns_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "sentry/net/dns_wire.h"

namespace sentry::net {
namespace {

using dns::Get16;
using dns::kTypeA;
using dns::kTypeAAAA;

constexpr uint16_t kClassIn = 1;
constexpr int kRcodeNoError = 0;
constexpr int kRcodeFormErr = 1;
constexpr int kRcodeNxDomain = 3;
constexpr int kRcodeNotImp = 4;
constexpr uint32_t kTtl = 60;

void Put16(std::vector<uint8_t>* out, uint16_t v) {
  out->push_back(static_cast<uint8_t>(v >> 8));
  out->push_back(static_cast<uint8_t>(v));
}

std::string TypeName(uint16_t t) {
  if (t == kTypeA) return "A";
  if (t == kTypeAAAA) return "AAAA";
  return absl::StrCat("TYPE", t);
}

// A name fit to show: printable ASCII, at most 100 characters.
std::string Printable(const std::string& name) {
  std::string out;
  for (char c : name.substr(0, 100)) out += (c > 0x20 && c < 0x7f) ? c : '?';
  if (name.size() > 100) out += "...";
  return out;
}

}  // namespace

bool ParseDnsQuery(const uint8_t* p, size_t n, DnsQuestion* q) {
  if (n < 12) return false;
  q->id = Get16(p);
  q->flags = Get16(p + 2);
  if (q->flags & 0x8000) return false;  // a response, not a query
  if (Get16(p + 4) != 1) return false;  // exactly one question
  size_t i = 12;
  std::string name;
  while (true) {
    if (i >= n) return false;
    uint8_t len = p[i++];
    if (len == 0) break;
    if (len > 63 || i + len > n) return false;  // no compression in a question
    if (!name.empty()) name += '.';
    name.append(reinterpret_cast<const char*>(p + i), len);
    i += len;
    if (name.size() > 253) return false;
  }
  if (i + 4 > n) return false;
  q->name = name;
  q->qtype = Get16(p + i);
  q->qclass = Get16(p + i + 2);
  q->question_end = i + 4;
  return true;
}

std::vector<uint8_t> BuildDnsResponse(const uint8_t* query, const DnsQuestion& q, int rcode,
                                      const std::vector<IpAddr>& answers) {
  std::vector<uint8_t> out;
  Put16(&out, q.id);
  // QR, the query's opcode and RD, RA, and the rcode.
  uint16_t flags = static_cast<uint16_t>(0x8000 | (q.flags & 0x7900) | 0x0080 | (rcode & 0xf));
  Put16(&out, flags);
  Put16(&out, 1);
  Put16(&out, static_cast<uint16_t>(answers.size()));
  Put16(&out, 0);
  Put16(&out, 0);
  out.insert(out.end(), query + 12, query + q.question_end);
  for (const IpAddr& a : answers) {
    Put16(&out, 0xc00c);  // the name: a pointer to the question's
    Put16(&out, a.family == AF_INET ? kTypeA : kTypeAAAA);
    Put16(&out, kClassIn);
    Put16(&out, static_cast<uint16_t>(kTtl >> 16));
    Put16(&out, static_cast<uint16_t>(kTtl));
    size_t len = a.family == AF_INET ? 4 : 16;
    Put16(&out, static_cast<uint16_t>(len));
    out.insert(out.end(), a.bytes, a.bytes + len);
  }
  return out;
}

SysStatus DnsServer::Start(UniqueFd socket) {
  sock_ = std::move(socket);
  wake_ = UniqueFd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (wake_.get() < 0) return Errno{errno};
  thread_ = std::thread([this] { Loop(); });
  return {};
}

void DnsServer::Stop() {
  if (!thread_.joinable()) return;
  uint64_t one = 1;
  (void)!write(wake_.get(), &one, sizeof(one));
  thread_.join();
}

void DnsServer::Loop() {
  uint8_t buf[1500];
  while (true) {
    pollfd pfd[2] = {{sock_.get(), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
    if (poll(pfd, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (pfd[1].revents) return;
    sockaddr_storage from{};
    socklen_t from_len = sizeof(from);
    ssize_t n = recvfrom(sock_.get(), buf, sizeof(buf), MSG_DONTWAIT,
                         reinterpret_cast<sockaddr*>(&from), &from_len);
    if (n <= 0) continue;
    Answer(buf, static_cast<size_t>(n), reinterpret_cast<sockaddr*>(&from), from_len);
  }
}

void DnsServer::Answer(const uint8_t* p, size_t n, const sockaddr* from, socklen_t from_len) {
  DnsQuestion q;
  std::vector<uint8_t> reply;
  if (!ParseDnsQuery(p, n, &q)) {
    if (n < 12) return;
    // Header only: FORMERR, so the asker does not wait.
    reply.assign(p, p + 12);
    reply[2] = static_cast<uint8_t>(0x80 | (p[2] & 0x79));
    reply[3] = static_cast<uint8_t>(0x80 | kRcodeFormErr);
    for (int i = 4; i < 12; ++i) reply[i] = 0;
  } else if (((q.flags >> 11) & 0xf) != 0 || q.qclass != kClassIn) {
    reply = BuildDnsResponse(p, q, kRcodeNotImp, {});
  } else {
    std::string why;
    int family = q.qtype == kTypeAAAA ? AF_INET6 : AF_INET;
    std::vector<IpAddr> addrs;
    if (policy_.egress_enabled()) {
      addrs = policy_.Resolve(q.name, family, &why, wake_.get());
    } else {
      why = "network access is disabled in this sandbox: names do not resolve";
    }
    if (!why.empty()) {
      std::string call = absl::StrCat("dns ", TypeName(q.qtype), " ", Printable(q.name));
      constexpr size_t kMaxReported = 256;
      if (reported_.size() < kMaxReported && reported_.insert(call).second) on_denied_(call, why);
      reply = BuildDnsResponse(p, q, kRcodeNxDomain, {});
    } else {
      if (q.qtype != kTypeA && q.qtype != kTypeAAAA) addrs.clear();
      reply = BuildDnsResponse(p, q, kRcodeNoError, addrs);
    }
  }
  sendto(sock_.get(), reply.data(), reply.size(), MSG_DONTWAIT, from, from_len);
}

}  // namespace sentry::net
