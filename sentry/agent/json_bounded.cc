#include "sentry/agent/json_bounded.h"

#include "absl/strings/str_cat.h"

namespace sentry::agent {
namespace {

struct TooDeep {};

}  // namespace

JsonRefusal ParseBoundedJson(std::string_view text, size_t max_bytes, size_t max_depth,
                             nlohmann::json* out, std::string* why) {
  using nlohmann::json;
  *out = nullptr;
  if (text.size() > max_bytes) {
    *why = absl::StrCat("larger than ", max_bytes, " bytes");
    return JsonRefusal::kTooLarge;
  }
  // depth is that of the value being started: the callback throws at the
  // first object or array below max_depth, before anything is built there.
  auto bound = [max_depth](int depth, json::parse_event_t event, json&) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        static_cast<size_t>(depth) >= max_depth) {
      throw TooDeep{};
    }
    return true;
  };
  try {
    *out = json::parse(text, bound);
  } catch (const TooDeep&) {
    *out = nullptr;
    *why = absl::StrCat("nested deeper than ", max_depth, " levels");
    return JsonRefusal::kTooDeep;
  } catch (const json::exception& e) {
    *out = nullptr;
    *why = e.what();
    return JsonRefusal::kMalformed;
  }
  return JsonRefusal::kNone;
}

}  // namespace sentry::agent
