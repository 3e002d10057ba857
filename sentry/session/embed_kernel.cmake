# Writes OUT, a C++ file that defines sentry::SessionKernelFile() as the
# bytes of IN (sentry/session/kernel.py). Run by the build (cmake -P), so a
# change of the .py regenerates it. The bytes go in as a hex array: no raw
# string delimiter to collide with, no length limit of a string literal.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR bytes "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," body "${hex}")
string(REPEAT "'[^']+'," 16 row)
string(REGEX REPLACE "(${row})" "\\1\n" body "${body}")
file(WRITE "${OUT}.tmp" "// Generated from ${IN} by embed_kernel.cmake; do not edit.
#include \"sentry/session/kernel_source.h\"

namespace sentry {
namespace {
constexpr char kKernel[] = {
${body}
};
}  // namespace

std::string_view SessionKernelFile() { return std::string_view(kKernel, ${bytes}); }

}  // namespace sentry
")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
