// The audit log's line (sentry/run/audit_log.h): whatever the guest's bytes
// and the limits' numbers, one line of JSON with its keys in the documented
// order.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sentry/run/audit_log.h"

namespace sentry {
namespace {

using Json = nlohmann::ordered_json;

std::vector<std::string> Keys(const Json& object) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : object.items()) keys.push_back(key);
  return keys;
}

TEST(AuditLine, HostileTextAndNonFiniteLimitsStillMakeOneOrderedJsonLine) {
  RunOptions o;
  o.timeout_sec = std::numeric_limits<double>::quiet_NaN();
  o.cpus = std::numeric_limits<double>::infinity();
  o.memory_bytes = 1ull << 30;
  RunResult r;
  r.stdout_text = "line\n\"quoted\"\t\\";
  r.stderr_text = std::string("nul\0bell\a", 9);
  r.exit_code = 3;
  AuditRecord rec;
  rec.run_id = "1-\"2\"";
  rec.argv = {"/usr/bin/python3", "-c", "print('a\\nb')\n", "bad \xff byte", "\x01\x1f"};
  rec.code = "print(\"}\")\n# {\"runId\": 1}\n";
  rec.code_hash = "ab12";
  rec.limits = LimitsJson(o);
  rec.result = &r;
  rec.sentry_max_rss_bytes = 5 << 20;

  std::string line = AuditLine(rec, "2026-12-02T15:49:16Z");
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  Json j;
  ASSERT_NO_THROW(j = Json::parse(line)) << line;
  EXPECT_EQ(Keys(j),
            (std::vector<std::string>{"runId", "time", "argv", "code", "codeSha256", "limits",
                                      "result", "sentryMaxRssBytes", "phasesMs"}));
  EXPECT_EQ(j["runId"], rec.run_id);
  EXPECT_EQ(j["time"], "2026-12-02T15:49:16Z");
  ASSERT_EQ(j["argv"].size(), 5u);
  EXPECT_EQ(j["argv"][2], "print('a\\nb')\n");
  EXPECT_EQ(j["argv"][3], "bad \xef\xbf\xbd byte") << "a byte that is not UTF-8 is U+FFFD";
  EXPECT_EQ(j["argv"][4], "\x01\x1f");
  EXPECT_EQ(j["code"], rec.code);
  EXPECT_EQ(Keys(j["limits"]),
            (std::vector<std::string>{"timeoutSec", "memoryBytes", "pids", "cpus", "diskBytes",
                                      "maxOutputBytes", "nofile"}));
  EXPECT_TRUE(j["limits"]["timeoutSec"].is_null()) << "NaN is no JSON number";
  EXPECT_TRUE(j["limits"]["cpus"].is_null()) << "nor is infinity";
  EXPECT_EQ(j["limits"]["memoryBytes"], 1ull << 30);
  EXPECT_EQ(j["result"]["stdout"], r.stdout_text);
  EXPECT_EQ(j["result"]["stderr"], r.stderr_text);
  EXPECT_EQ(j["result"]["exitCode"], 3);
  EXPECT_EQ(Keys(j["result"]).front(), "stdout");
  EXPECT_EQ(j["sentryMaxRssBytes"], 5 << 20);
  EXPECT_TRUE(j["phasesMs"].is_null());
}

TEST(AuditLine, IntegralLimitsAreWrittenAsIntegers) {
  RunOptions o;
  o.timeout_sec = 30;
  o.cpus = 1.5;
  std::string limits = LimitsJson(o).dump();
  EXPECT_NE(limits.find("\"timeoutSec\":30,"), std::string::npos) << limits;
  EXPECT_NE(limits.find("\"cpus\":1.5,"), std::string::npos) << limits;
}

TEST(AuditLine, AResultTextThatIsNotJsonIsLoggedAsNull) {
  AuditRecord rec;
  rec.result_json = "{\"stdout\": \"cut";
  Json j = Json::parse(AuditLine(rec, "t"));
  EXPECT_TRUE(j["result"].is_null());
  rec.result_json = R"({"stdout":"x","exitCode":0})";
  j = Json::parse(AuditLine(rec, "t"));
  EXPECT_EQ(Keys(j["result"]), (std::vector<std::string>{"stdout", "exitCode"}));
}

TEST(AuditLine, PhasesInTheOrderTheyEndedToTheHundredth) {
  PhaseClock clock(MonotonicMs() - 12.3456);
  clock.Mark("prepare");
  clock.Mark("guest");
  Json phases = PhasesJson(clock);
  ASSERT_EQ(Keys(phases), (std::vector<std::string>{"prepare", "guest"}));
  double ms = phases["prepare"].get<double>();
  EXPECT_GE(ms, 12.34);
  EXPECT_DOUBLE_EQ(ms, std::round(ms * 100) / 100);
}

}  // namespace
}  // namespace sentry
