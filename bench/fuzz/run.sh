#!/bin/sh
# Builds the libFuzzer targets with clang in a build directory of their own
# and runs each in turn for FUZZ_SECONDS with its seed corpus.
#
#   bench/fuzz/run.sh [TARGET...]     default: all seven targets
#
# FUZZ_SECONDS  seconds per target (default 120)
# FUZZ_BUILD    build directory (default build-fuzz, beside build-cc)
# FUZZ_ARGS     more libFuzzer flags (e.g. -max_len=4096)
# FUZZ_ONLY_BUILD=1  build, do not run
#
# New corpus entries go to $FUZZ_BUILD/corpus/TARGET (the committed seeds in
# bench/fuzz/corpus/TARGET are only read), crashes to
# $FUZZ_BUILD/crashes/TARGET-*, logs to $FUZZ_BUILD/logs/TARGET.log.
# Reproduce a crash: $FUZZ_BUILD/bench/fuzz/TARGET CRASH_FILE.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=${FUZZ_BUILD:-$src/build-fuzz}
seconds=${FUZZ_SECONDS:-120}
all="fuzz_path_walk fuzz_syscall_args fuzz_dns_query fuzz_http_proxy fuzz_mcp_line fuzz_http_head
  fuzz_vfs_snapshot"
targets=${*:-$all}

# Debian 12: clang is clang-14; libFuzzer's runtime (libclang_rt.fuzzer) is
# in libclang-rt-14-dev.
fuzzer_lib() {
  ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a 2>/dev/null | head -n 1
}
if ! command -v clang++ >/dev/null 2>&1 || [ -z "$(fuzzer_lib)" ]; then
  echo "run.sh: installing clang and libFuzzer from Debian" >&2
  apt-get update -q
  apt-get install -y -q clang libclang-rt-14-dev
fi

launcher=""
if command -v ccache >/dev/null 2>&1; then
  launcher="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache"
fi
if [ ! -f "$build/build.ninja" ]; then
  # shellcheck disable=SC2086
  cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ $launcher \
    -DSENTRY_FUZZ=ON -DSENTRY_SANITIZE=ON \
    -DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link -DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link \
    "-DSENTRY_SKIP_DIRS=tests/util;tests/unit;tests/conformance;tests/security;tests/e2e;tests/limits"
fi
# shellcheck disable=SC2086
ninja -C "$build" -j "${FUZZ_NINJA_JOBS:-2}" $targets
[ "${FUZZ_ONLY_BUILD:-0}" = 1 ] && exit 0

mkdir -p "$build/logs" "$build/crashes"
status=0
for t in $targets; do
  mkdir -p "$build/corpus/$t" "$build/tmp/$t"
  echo "== $t: $seconds s" >&2
  dict=""
  [ -f "$here/$t.dict" ] && dict="-dict=$here/$t.dict"
  # One process at a time (no -jobs/-workers): the machine's cores are shared.
  # shellcheck disable=SC2086
  if ! TMPDIR="$build/tmp/$t" "$build/bench/fuzz/$t" -max_total_time="$seconds" -print_final_stats=1 \
      -artifact_prefix="$build/crashes/$t-" $dict ${FUZZ_ARGS:-} \
      "$build/corpus/$t" "$here/corpus/$t" >"$build/logs/$t.log" 2>&1; then
    echo "$t: FOUND A CRASH, see $build/logs/$t.log and $build/crashes/" >&2
    status=1
  fi
  rm -rf "$build/tmp/$t"
  grep -E '^#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb' "$build/logs/$t.log" >&2 || true
done
exit $status
