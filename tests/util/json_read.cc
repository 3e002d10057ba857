#include "tests/util/json_read.h"

namespace sentry::testing {

std::optional<nlohmann::json> ParseJson(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

const nlohmann::json& At(const nlohmann::json& j, std::string_view key) {
  static const nlohmann::json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

std::string Str(const nlohmann::json& j) { return j.is_string() ? j.get<std::string>() : ""; }

double Num(const nlohmann::json& j, double def) { return j.is_number() ? j.get<double>() : def; }

int64_t Int(const nlohmann::json& j, int64_t def) { return j.is_number() ? j.get<int64_t>() : def; }

}  // namespace sentry::testing
