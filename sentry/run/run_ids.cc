// The id mode of a sentry without root (subid_range.h): a subordinate range
// mapped by newuidmap where the caller has one, else the caller's single id.
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "sentry/base/log.h"
#include "sentry/run/run_internal.h"

namespace sentry::run_internal {
namespace {

constexpr const char* kRangeRecipe =
    "usermod --add-subuids 100000-165535 --add-subgids 100000-165535 USER, with newuidmap "
    "installed (Debian: uidmap)";

// Whether --userns=auto (the default) takes a range where there is one:
// yes, since the guest's own /proc files, closed to the sentry on a uid of
// the range, open through a helper in its user namespace
// (sentry/kernel/guest_proc.h).
constexpr bool kAutoPicksRange = true;

}  // namespace

void Run::UseSingleId() {
  // No other id is mapped, so no supplementary group either (the VFS
  // still checks the guest's emulated ones).
  spec_.single_id = true;
  spec_.helper_maps = false;
  spec_.groups.clear();
  range_ = false;
}

void Run::SaySingleId(const std::string& why) {
  // Said where someone reads the terminal; always kept in the result.
  log::Notice(absl::StrCat("notice: single-id user namespace (", why, "): the guest's ", tree_.uid,
                           " is uid ", getuid(),
                           " itself and other ids show as 65534; a subordinate range gives the "
                           "guest ids of its own (",
                           kRangeRecipe, "); --userns=single chooses this mode quietly"),
              isatty(STDERR_FILENO) ? log::Level::kInfo : log::Level::kDebug);
}

std::optional<RunError> Run::ChooseIdMode() {
  if (o_.namespaces == NamespaceMode::kOff || o_.userns == IdMode::kSingle ||
      (o_.userns == IdMode::kAuto && !kAutoPicksRange)) {
    UseSingleId();
    return std::nullopt;
  }
  subids_ = PlanSubids(tree_.uid, tree_.gid);
  if (subids_.usable) {
    range_ = true;
    spec_.single_id = false;
    spec_.helper_maps = true;
    // A group past the range has no id to map to (setgroups would fail).
    std::erase_if(spec_.groups, [this](gid_t g) { return g > subids_.gids.count; });
    return std::nullopt;
  }
  if (o_.userns == IdMode::kRange) {
    return RunError{kExitSentryError,
                    absl::StrCat("the user namespace wall: --userns=range, but ", subids_.why_not,
                                 "; choices: a range (", kRangeRecipe,
                                 "), --userns=single (the caller's one uid), or --no-namespaces")};
  }
  UseSingleId();
  SaySingleId(subids_.why_not);
  return std::nullopt;
}

bool Run::FallBackFromRange(const absl::Status& spawn_error) {
  if (!range_ || o_.userns != IdMode::kAuto || !absl::IsPermissionDenied(spawn_error)) return false;
  UseSingleId();
  // The helpers' own words, in the notice: what to fix for the range.
  SaySingleId(absl::StrCat("newuidmap/newgidmap refused the range: ", spawn_error.message()));
  return true;
}

std::string Run::IdModeWall() const {
  if (!rootless_ || seccomp_only()) return "";
  return range_ ? "userns-subid-range" : "userns-single-id";
}

}  // namespace sentry::run_internal
