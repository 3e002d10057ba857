#include "sentry/session/kernel_source.h"

#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace sentry {

std::string_view SessionKernelSource() {
  // Made once; kept for the process's life (a function-local static's
  // destructor would run at exit while a session may still be starting).
  static const std::string* program =
      new std::string(absl::StrCat("import binascii\n"
                                   "for _b in binascii.a2b_base64(b'",
                                   absl::Base64Escape(std::string(SessionKernelFile())),
                                   "').decode().split('\\n\\n\\n'):\n"
                                   "    exec(compile(_b, '<sentry kernel>', 'exec'))\n"
                                   "del _b\n"));
  return *program;
}

}  // namespace sentry
