#include "loader/census_filter.h"

#include <linux/audit.h>
#include <stddef.h>
#include <sys/syscall.h>

#include <cstring>
#include <iterator>

namespace sentry {

std::vector<sock_filter> CensusFilter(std::span<const sock_filter> normal,
                                      UncountedWrite uncounted) {
  std::vector<sock_filter> out;
  if (uncounted.fd >= 0) {
    // Every test that fails jumps to the census program after the prefix.
    auto arg = [](int i, bool high) {
      return static_cast<uint32_t>(offsetof(seccomp_data, args) + 8 * i + (high ? 4 : 0));
    };
    const std::pair<uint32_t, uint32_t> tests[] = {
        {offsetof(seccomp_data, arch), AUDIT_ARCH_X86_64},
        {offsetof(seccomp_data, nr), SYS_write},
        {arg(0, false), static_cast<uint32_t>(uncounted.fd)},
        {arg(0, true), 0},
        {arg(2, false), static_cast<uint32_t>(uncounted.len)},
        {arg(2, true), static_cast<uint32_t>(uncounted.len >> 32)}};
    constexpr size_t kTests = std::size(tests);
    for (size_t i = 0; i < kTests; ++i) {
      out.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, tests[i].first));
      // Past the rest of the tests and the RET: 2 instructions a test left.
      uint8_t to_body = static_cast<uint8_t>(2 * (kTests - 1 - i) + 1);
      out.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, tests[i].second, 0, to_body));
    }
    out.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  }
  size_t body = out.size();
  out.insert(out.end(), normal.begin(), normal.end());
  for (size_t i = body; i < out.size(); ++i) {
    sock_filter& f = out[i];
    if (BPF_CLASS(f.code) != BPF_RET) continue;
    if (BPF_RVAL(f.code) != BPF_K) return {};
    uint32_t action = f.k & SECCOMP_RET_ACTION_FULL;
    if (action == SECCOMP_RET_ALLOW || action == SECCOMP_RET_ERRNO) f.k = SECCOMP_RET_USER_NOTIF;
  }
  return out;
}

// Classic BPF as seccomp accepts it (kernel/seccomp.c, seccomp_check_filter):
// absolute word loads from seccomp_data, the scratch memory, ALU and jumps
// with constant or X operands, RET. The filters built here use a subset.
uint32_t EvalSeccompFilter(std::span<const sock_filter> program, const seccomp_data& data) {
  constexpr uint32_t kFail = SECCOMP_RET_KILL_PROCESS;
  uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {};
  const size_t n = program.size();
  for (size_t pc = 0; pc < n; ++pc) {
    const sock_filter& f = program[pc];
    uint32_t k = f.k;
    switch (BPF_CLASS(f.code)) {
      case BPF_LD:
        if (f.code == (BPF_LD | BPF_W | BPF_ABS)) {
          if (k % 4 != 0 || k + 4 > sizeof(data)) return kFail;
          std::memcpy(&a, reinterpret_cast<const char*>(&data) + k, 4);
        } else if (f.code == (BPF_LD | BPF_IMM)) {
          a = k;
        } else if (f.code == (BPF_LD | BPF_MEM)) {
          if (k >= BPF_MEMWORDS) return kFail;
          a = mem[k];
        } else if (f.code == (BPF_LD | BPF_W | BPF_LEN)) {
          a = sizeof(data);
        } else {
          return kFail;
        }
        break;
      case BPF_LDX:
        if (f.code == (BPF_LDX | BPF_IMM)) {
          x = k;
        } else if (f.code == (BPF_LDX | BPF_MEM)) {
          if (k >= BPF_MEMWORDS) return kFail;
          x = mem[k];
        } else if (f.code == (BPF_LDX | BPF_W | BPF_LEN)) {
          x = sizeof(data);
        } else {
          return kFail;
        }
        break;
      case BPF_ST:
        if (k >= BPF_MEMWORDS) return kFail;
        mem[k] = a;
        break;
      case BPF_STX:
        if (k >= BPF_MEMWORDS) return kFail;
        mem[k] = x;
        break;
      case BPF_ALU: {
        uint32_t v = BPF_SRC(f.code) == BPF_X ? x : k;
        switch (BPF_OP(f.code)) {
          case BPF_ADD:
            a += v;
            break;
          case BPF_SUB:
            a -= v;
            break;
          case BPF_MUL:
            a *= v;
            break;
          case BPF_DIV:
            if (v == 0) return kFail;  // the kernel's BPF returns 0: never in our programs
            a /= v;
            break;
          case BPF_MOD:
            if (v == 0) return kFail;
            a %= v;
            break;
          case BPF_AND:
            a &= v;
            break;
          case BPF_OR:
            a |= v;
            break;
          case BPF_XOR:
            a ^= v;
            break;
          case BPF_LSH:
            a = v < 32 ? a << v : 0;
            break;
          case BPF_RSH:
            a = v < 32 ? a >> v : 0;
            break;
          case BPF_NEG:
            a = -a;
            break;
          default:
            return kFail;
        }
        break;
      }
      case BPF_JMP: {
        size_t skip;
        if (BPF_OP(f.code) == BPF_JA) {
          skip = k;
        } else {
          uint32_t v = BPF_SRC(f.code) == BPF_X ? x : k;
          bool taken;
          switch (BPF_OP(f.code)) {
            case BPF_JEQ:
              taken = a == v;
              break;
            case BPF_JGT:
              taken = a > v;
              break;
            case BPF_JGE:
              taken = a >= v;
              break;
            case BPF_JSET:
              taken = (a & v) != 0;
              break;
            default:
              return kFail;
          }
          skip = taken ? f.jt : f.jf;
        }
        if (skip >= n - pc - 1) return kFail;
        pc += skip;
        break;
      }
      case BPF_RET:
        return BPF_RVAL(f.code) == BPF_K ? k : (BPF_RVAL(f.code) == BPF_A ? a : kFail);
      case BPF_MISC:
        if (BPF_MISCOP(f.code) == BPF_TAX) {
          x = a;
        } else {
          a = x;
        }
        break;
      default:
        return kFail;
    }
  }
  return kFail;  // fell off the end: the kernel's checker refuses such a program
}

}  // namespace sentry
