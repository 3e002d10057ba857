// --tool: what a run adds for host tools (sentry/tools/): the channel's
// thread, its node /dev/sentry-tools and the module sentry_tools.py, in
// memory only. Without tools none of them exists.
#include <sys/sysmacros.h>

#include "absl/strings/str_cat.h"
#include "sentry/run/run_internal.h"

namespace sentry::run_internal {

std::optional<RunError> Run::AdmitTools() {
  if (o_.tools.empty()) return std::nullopt;
  tools_ = std::make_unique<tools::ToolChannel>(o_.tools);
  if (!tools_->Start()) return RunError{kExitSentryError, "cannot start the tool channel"};
  vfs::Vfs& v = kernel_->vfs();
  vfs::Creds root;
  root.uid = root.gid = 0;
  auto dev = v.Lookup(v.root(), "/dev", {}, creds_);
  if (!dev.ok()) return RunError{kExitSentryError, "the sandbox has no /dev for the tool channel"};
  // A character device of no driver: stat shows it, and its only use is
  // open, which the reopen hook answers with a fresh connection.
  vfs::NodeRef node = v.NewNode(vfs::NodeKind::kDevice, S_IFCHR | 0666, 0, 0);
  node->attr().rdev = makedev(10, 242);
  tools::ToolChannel* channel = tools_.get();
  node->reopen = [channel](int flags) { return channel->Open(flags); };
  v.AddChild(dev.value(), "sentry-tools", node);
  if (absl::Status s = ReplaceInSandbox(v, root, tools::ModuleText(o_.tools), tools::kModulePath);
      !s.ok()) {
    return RunError{kExitSentryError,
                    absl::StrCat("cannot add the sentry_tools module: ", s.message())};
  }
  if (auto made = MakeSandboxDirs(v, creds_, absl::StrCat(tools::kModuleDir, "/__pycache__"));
      !made.ok()) {
    return RunError{kExitSentryError, std::string(made.status().message())};
  }
  return std::nullopt;
}

}  // namespace sentry::run_internal
