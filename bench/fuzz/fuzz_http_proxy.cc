// libFuzzer target: the credentials proxy's request-head parser
// (RewriteRequestHead, sentry/net/http_proxy.cc).
//
// The first byte picks the --secret rule (TLS or not, default or other port,
// header name); the rest is what the guest sends. It is parsed twice: as
// HttpProxy::Serve does (up to and including the first blank line), and whole.
// What the proxy would send upstream is checked:
//  - exactly one blank line, at the end: nothing is smuggled past the head;
//  - every line ends in CRLF, no bare CR, LF or NUL anywhere;
//  - the request line is "METHOD /origin-form HTTP/1.1";
//  - Host, the secret header and Connection appear once each, and as the
//    proxy set them (the guest's own copies dropped);
//  - no Transfer-Encoding; a forwarded Content-Length is digits only and is
//    the length the proxy will relay.
// A refusal says 400 or 411.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "sentry/net/http_proxy.h"

namespace {

[[noreturn]] void Fail(const char* what, const std::string& head, const std::string& out) {
  std::fprintf(stderr, "fuzz_http_proxy invariant broken: %s\nin: %s\nout: %s\n", what,
               head.c_str(), out.c_str());
  std::abort();
}

sentry::net::SecretRule Rule(uint8_t pick) {
  sentry::net::SecretRule r;
  r.host = (pick & 1) ? "api.example.com" : "example.org";
  r.tls = (pick & 2) != 0;
  r.port = (pick & 4) ? 8443 : (r.tls ? 443 : 80);
  r.header = (pick & 8) ? "Authorization" : "X-Api-Key";
  r.value = "Bearer s3cr3t";
  return r;
}

void Check(const std::string& head, const sentry::net::SecretRule& rule) {
  uint64_t length = 12345;
  int status = -1;
  std::string out = sentry::net::RewriteRequestHead(head, rule, &length, &status);
  if (out.empty()) {
    if (status != 400 && status != 411) Fail("refusal status", head, out);
    return;
  }
  if (status != 0) Fail("status set on success", head, out);
  if (out.size() < 4 || out.compare(out.size() - 4, 4, "\r\n\r\n") != 0) {
    Fail("no blank line at the end", head, out);
  }
  if (out.find("\r\n\r\n") != out.size() - 4) Fail("a blank line inside the head", head, out);
  for (size_t i = 0; i < out.size(); ++i) {
    char c = out[i];
    if (c == '\0') Fail("NUL", head, out);
    if (c == '\r' && (i + 1 >= out.size() || out[i + 1] != '\n')) Fail("bare CR", head, out);
    if (c == '\n' && (i == 0 || out[i - 1] != '\r')) Fail("bare LF", head, out);
  }
  std::vector<std::string> lines = absl::StrSplit(out.substr(0, out.size() - 4), "\r\n");
  std::vector<std::string> first = absl::StrSplit(lines[0], ' ');
  if (first.size() != 3 || first[1].empty() || first[1][0] != '/' || first[2] != "HTTP/1.1") {
    Fail("request line", head, out);
  }
  int hosts = 0, secrets = 0, connections = 0, lengths = 0;
  std::string secret = absl::AsciiStrToLower(rule.header);
  for (size_t i = 1; i < lines.size(); ++i) {
    size_t colon = lines[i].find(':');
    if (colon == std::string::npos || colon == 0) Fail("header without a name", head, out);
    std::string name = absl::AsciiStrToLower(lines[i].substr(0, colon));
    std::string value(absl::StripAsciiWhitespace(lines[i].substr(colon + 1)));
    if (name == "host") ++hosts;
    if (name == secret) {
      ++secrets;
      if (value != rule.value) Fail("the guest's secret header forwarded", head, out);
    }
    if (name == "connection") {
      ++connections;
      if (value != "close") Fail("the guest's Connection forwarded", head, out);
    }
    if (name == "transfer-encoding") Fail("Transfer-Encoding forwarded", head, out);
    if (name == "content-length") {
      ++lengths;
      uint64_t n = 0;
      if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos ||
          !absl::SimpleAtoi(value, &n) || n != length) {
        Fail("Content-Length forwarded is not the length relayed", head, out);
      }
    }
  }
  if (hosts != 1 || secrets != 1 || connections != 1)
    Fail("Host/secret/Connection count", head, out);
  if (lengths == 0 && length != 0) Fail("a body length with no Content-Length", head, out);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  sentry::net::SecretRule rule = Rule(data[0]);
  std::string buf(reinterpret_cast<const char*>(data + 1), size - 1);
  // As Serve: the head is everything up to and including the first blank line.
  size_t end = buf.find("\r\n\r\n");
  if (end != std::string::npos) Check(buf.substr(0, end + 4), rule);
  Check(buf, rule);
  return 0;
}
