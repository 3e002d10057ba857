// Inputs that bench/fuzz's targets found breaking a parser's rules, fed to
// the same functions the fuzzers call (see bench/fuzz/README.md). One test
// per finding; the input is the minimized one.
#include <gtest/gtest.h>

#include <string>

#include "sentry/net/http_proxy.h"

namespace sentry::net {
namespace {

SecretRule Rule() {
  SecretRule r;
  r.host = "example.org";
  r.tls = false;
  r.port = 80;
  r.header = "X-Api-Key";
  r.value = "s3cr3t";
  return r;
}

// fuzz_http_proxy: "Content-Length: +4" was taken as 4 (absl::SimpleAtoi
// accepts a sign) and forwarded as written. A server that reads "+4" as
// anything else takes the relayed body for a request of its own.
TEST(FuzzRegressionTest, HttpContentLengthIsDigitsOnly) {
  uint64_t len = 0;
  int status = 0;
  for (const char* value : {"+4", "-0", " +4", "4a", "0x4", "4 4", "99999999999999999999999"}) {
    std::string head = std::string("POST / HTTP/1.1\r\nContent-Length: ") + value + "\r\n\r\n";
    EXPECT_EQ(RewriteRequestHead(head, Rule(), &len, &status), "") << value;
    EXPECT_EQ(status, 400) << value;
  }
  std::string ok =
      RewriteRequestHead("POST / HTTP/1.1\r\nContent-Length: 004\r\n\r\n", Rule(), &len, &status);
  EXPECT_NE(ok, "");
  EXPECT_EQ(len, 4u);
}

}  // namespace
}  // namespace sentry::net
