// What a run puts into the sandbox before its guest runs, shared by the cold
// path (Admit, run.cc) and the warm one (AdmitPython, pool/warm_python_run.cc).
#include "absl/strings/str_cat.h"
#include "sentry/run/run_internal.h"
#include "sentry/run/sandbox_tree.h"

namespace sentry::run_internal {

std::optional<RunError> Run::CopyIn() {
  for (const auto& [host, guest] : o_.copies) {
    if (absl::Status s = CopyIntoSandbox(kernel_->vfs(), creds_, host, guest); !s.ok()) {
      return RunError{kExitSentryError,
                      absl::StrCat("--copy ", host, ":", guest, ": ", s.message())};
    }
  }
  return std::nullopt;
}

std::optional<RunError> Run::MakeGuestCwd(std::string* cwd) {
  *cwd = tree_.home;
  if (o_.workdir.empty()) return std::nullopt;
  *cwd = o_.workdir;
  if (auto made = MakeSandboxDirs(kernel_->vfs(), creds_, *cwd); !made.ok()) {
    return RunError{kExitSentryError,
                    absl::StrCat("--workdir ", *cwd, ": ", made.status().message())};
  }
  return std::nullopt;
}

}  // namespace sentry::run_internal
