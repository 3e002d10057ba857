#include "sentry/net/host_resolver.h"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "sentry/base/fiber_loop.h"
#include "sentry/base/unique_fd.h"
#include "sentry/net/dns_wire.h"

namespace sentry::net {
namespace {

using dns::Get16;
using dns::kTypeA;
using dns::kTypeAAAA;

// Skips a (possibly compressed) name at *i; false if malformed.
bool SkipName(const uint8_t* p, size_t n, size_t* i) {
  for (int labels = 0; labels < 128; ++labels) {
    if (*i >= n) return false;
    uint8_t len = p[*i];
    if ((len & 0xc0) == 0xc0) {
      *i += 2;
      return *i <= n;
    }
    *i += 1 + len;
    if (len == 0) return *i <= n;
  }
  return false;
}

void AddUnique(std::vector<IpAddr>* out, const IpAddr& a) {
  if (std::find(out->begin(), out->end(), a) == out->end()) out->push_back(a);
}

std::vector<IpAddr> FromHostsFile(const std::string& name) {
  std::vector<IpAddr> out;
  std::ifstream in("/etc/hosts");
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    std::vector<std::string> words =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (words.size() < 2) continue;
    std::optional<IpAddr> a = IpAddr::Parse(words[0]);
    if (!a) continue;
    for (size_t i = 1; i < words.size(); ++i) {
      if (absl::AsciiStrToLower(words[i]) == name) AddUnique(&out, *a);
    }
  }
  return out;
}

std::vector<IpAddr> Nameservers() {
  std::vector<IpAddr> out;
  std::ifstream in("/etc/resolv.conf");
  std::string line;
  while (std::getline(in, line) && out.size() < 3) {
    std::vector<std::string> words =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (words.size() >= 2 && words[0] == "nameserver") {
      if (auto a = IpAddr::Parse(words[1])) out.push_back(*a);
    }
  }
  if (out.empty()) out.push_back(*IpAddr::Parse("127.0.0.1"));  // as glibc assumes
  return out;
}

// Asks one server for A and AAAA; appends what it answered. False when
// cancel_fd woke it.
bool AskServer(const IpAddr& server, const std::string& name, int timeout_ms, int cancel_fd,
               std::vector<IpAddr>* out) {
  sockaddr_storage ss;
  socklen_t len = server.ToSockaddr(53, &ss);
  UniqueFd fd(socket(server.family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (fd.get() < 0 || connect(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) < 0) return true;
  uint16_t ids[2];
  if (getrandom(ids, sizeof(ids), 0) != sizeof(ids)) return true;
  for (int k = 0; k < 2; ++k) {
    std::vector<uint8_t> q = BuildDnsQuery(ids[k], name, k == 0 ? kTypeA : kTypeAAAA);
    if (send(fd.get(), q.data(), q.size(), 0) < 0) return true;
  }
  int pending = 2;
  uint8_t buf[1500];
  while (pending > 0) {
    pollfd pfd[2] = {{fd.get(), POLLIN, 0}, {cancel_fd, POLLIN, 0}};
    if (WaitPoll(pfd, 2, timeout_ms) <= 0) return true;
    if (pfd[1].revents) return false;
    ssize_t n = recv(fd.get(), buf, sizeof(buf), 0);
    if (n <= 0) return true;
    for (uint16_t id : ids) {
      if (ParseDnsAnswers(buf, static_cast<size_t>(n), id, out)) --pending;
    }
  }
  return true;
}

}  // namespace

std::vector<uint8_t> BuildDnsQuery(uint16_t id, const std::string& name, uint16_t qtype) {
  std::vector<uint8_t> q = {
      static_cast<uint8_t>(id >> 8), static_cast<uint8_t>(id), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
  for (absl::string_view label : absl::StrSplit(name, '.', absl::SkipEmpty())) {
    if (label.size() > 63) return {};
    q.push_back(static_cast<uint8_t>(label.size()));
    q.insert(q.end(), label.begin(), label.end());
  }
  q.push_back(0);
  q.push_back(static_cast<uint8_t>(qtype >> 8));
  q.push_back(static_cast<uint8_t>(qtype));
  q.push_back(0);
  q.push_back(1);  // class IN
  return q;
}

bool ParseDnsAnswers(const uint8_t* p, size_t n, uint16_t id, std::vector<IpAddr>* out) {
  if (n < 12 || Get16(p) != id || !(p[2] & 0x80)) return false;
  size_t qd = Get16(p + 4), an = Get16(p + 6);
  size_t i = 12;
  for (size_t k = 0; k < qd; ++k) {
    if (!SkipName(p, n, &i) || i + 4 > n) return false;
    i += 4;
  }
  for (size_t k = 0; k < an; ++k) {
    if (!SkipName(p, n, &i) || i + 10 > n) return true;
    uint16_t type = Get16(p + i), cls = Get16(p + i + 2), rdlen = Get16(p + i + 8);
    i += 10;
    if (i + rdlen > n) return true;
    if (cls == 1 && type == kTypeA && rdlen == 4) {
      IpAddr a;
      a.family = AF_INET;
      std::memcpy(a.bytes, p + i, 4);
      AddUnique(out, a);
    } else if (cls == 1 && type == kTypeAAAA && rdlen == 16) {
      char text[INET6_ADDRSTRLEN];
      inet_ntop(AF_INET6, p + i, text, sizeof(text));
      if (auto a = IpAddr::Parse(text)) AddUnique(out, *a);
    }
    i += rdlen;
  }
  return true;
}

std::vector<IpAddr> ResolveOnHost(const std::string& name, int timeout_ms, int cancel_fd) {
  std::vector<IpAddr> out = FromHostsFile(name);
  if (!out.empty()) return out;
  for (const IpAddr& server : Nameservers()) {
    if (!AskServer(server, name, timeout_ms, cancel_fd, &out)) break;
    if (!out.empty()) break;
  }
  return out;
}

}  // namespace sentry::net
