// The filter of a census run (sentry run --census) and the interpreter that
// tells the sentry what the ordinary filter would have done with a call.
//
// A census counts every syscall, native ones too, so its filter sends every
// call the ordinary filter would allow or fail with an errno to the sentry
// (SECCOMP_RET_USER_NOTIF) instead; TRACE, USER_NOTIF and KILL stay. For each
// notification the sentry runs the ordinary program on the notification's
// seccomp_data (the same registers the kernel checked) and answers as it
// would have: ALLOW with SECCOMP_USER_NOTIF_FLAG_CONTINUE, having read no
// guest memory; ERRNO with that errno itself; USER_NOTIF through its handler.
// So a census run refuses and allows exactly what an ordinary run does.
#ifndef SENTRY_LOADER_CENSUS_FILTER_H_
#define SENTRY_LOADER_CENSUS_FILTER_H_

#include <linux/filter.h>
#include <linux/seccomp.h>

#include <cstdint>
#include <span>
#include <vector>

namespace sentry {

// A syscall number no kernel gives (ENOSYS natively and in every sandbox) by
// which a guest names the phase its next calls belong to in a census:
// syscall(kCensusMarkNr, "label") (a NUL-terminated label, at most
// kMaxCensusLabel bytes; "" ends the phase). The sentry reads the label (it
// answers the call itself: ENOSYS, as Linux does) and counts the mark as no
// call. tests/conformance marks each case this way.
inline constexpr int kCensusMarkNr = 0x53454e;  // "SEN"
inline constexpr size_t kMaxCensusLabel = 256;

// A write the census filter leaves to the ordinary one: the loader's report
// of the guest's listener, made after the filter is in force and before the
// sentry holds the listener (that write would wait for an answer forever).
// A guest's own write(fd, buf, len) with these same registers after its exec
// is not counted (its answer is the ordinary filter's: native).
struct UncountedWrite {
  int fd = -1;
  uint64_t len = 0;
};

// `normal` with every RET of ALLOW or ERRNO turned into USER_NOTIF, after a
// prefix that lets `uncounted` go as `normal` would (ALLOW). Empty if the
// program holds an instruction whose return is not a constant.
std::vector<sock_filter> CensusFilter(std::span<const sock_filter> normal,
                                      UncountedWrite uncounted = {});

// What `program` returns for `data`, as the kernel's seccomp would compute
// it (classic BPF: loads of seccomp_data words, ALU and jumps on constants,
// RET). SECCOMP_RET_KILL_PROCESS for a program it cannot run (an unknown
// instruction, a jump or load out of bounds).
uint32_t EvalSeccompFilter(std::span<const sock_filter> program, const seccomp_data& data);

}  // namespace sentry

#endif  // SENTRY_LOADER_CENSUS_FILTER_H_
