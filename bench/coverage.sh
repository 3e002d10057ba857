#!/usr/bin/env bash
# The syscall-coverage benchmark, in one command: a corpus of real workloads and
# per-syscall microbenchmarks, natively, under sentry and under runsc; the census of
# each workload when the sentry binary has `run --census`; the table's coverage by
# action and by conformance cases (tests/conformance/coverage.py). Writes bench/results/*.json, then renders docs/benchmarks.md and the plots
# in docs/img/ (bench/render_benchmarks.py).
#
# usage: bench/coverage.sh [SENTRY_BINARY]
#   Without a binary, builds sentry and the benchmarks in build-cc/ (ccache, Ninja).
#
# Environment (all optional):
#   BUILD         build directory of the benchmarks (default: build-cc)
#   RUNS          timed runs per corpus workload (default: 5; cpython_tests: 2)
#   RUNSC_RUNS    timed runs per workload under runsc (default: 3)
#   MIN_TIME      Google Benchmark --benchmark_min_time, seconds (default: 0.1)
#   SKIP_RUNSC=1  no runsc rows
#   RUNSC_FLAGS   default: --rootless --network=none --platform=ptrace
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
PY=/usr/bin/python3
BUILD=${BUILD:-build-cc}
RUNS=${RUNS:-5}
RUNSC_RUNS=${RUNSC_RUNS:-3}
MIN_TIME=${MIN_TIME:-0.1}
read -r -a RUNSC_ARGV <<<"${RUNSC_FLAGS:---rootless --network=none --platform=ptrace}"
RESULTS=$REPO/bench/results
log() { echo "coverage.sh: $*" >&2; }

# ---------------------------------------------------------------- what it needs
need_pkgs=()
command -v runsc >/dev/null || [[ ${SKIP_RUNSC:-0} == 1 ]] || need_pkgs+=(runsc)
command -v gnuplot >/dev/null || "$PY" -c 'import matplotlib' 2>/dev/null || need_pkgs+=(gnuplot-nox)
command -v gcc >/dev/null || need_pkgs+=(gcc)
if ((${#need_pkgs[@]})); then
  log "installing from Debian: ${need_pkgs[*]}"
  SUDO=""
  [[ $(id -u) == 0 ]] || SUDO=sudo
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${need_pkgs[@]}" >&2
fi

targets=(bench_unotify bench_native_ops bench_syscall_families conformance_test)
if [[ $# -ge 1 ]]; then
  SENTRY=$(realpath "$1")
else
  SENTRY=$REPO/$BUILD/sentry/sentry
  targets+=(sentry)
fi
if [[ ! -f $BUILD/build.ninja ]]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache >&2
fi
ninja -C "$BUILD" -j2 "${targets[@]}" >&2
BENCH=$REPO/$BUILD/bench
[[ -x $SENTRY ]] || {
  log "$SENTRY: no sentry binary"
  exit 1
}

RAW=$(mktemp -d /tmp/coverage-bench.XXXXXX)
log "raw output in $RAW"
{
  echo "{"
  echo "\"date\": \"$(date -u +%FT%TZ)\","
  echo "\"commit\": \"$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- sentry || echo +dirty)\","
  echo "\"kernel\": \"$(uname -r)\","
  echo "\"cpus\": $(nproc),"
  echo "\"cpu\": \"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')\","
  echo "\"loadavg_start\": \"$(cut -d' ' -f1-3 /proc/loadavg)\","
} >"$RAW/meta.part"

envs=(native sentry)
if [[ ${SKIP_RUNSC:-0} != 1 ]]; then
  if timeout 120 runsc "${RUNSC_ARGV[@]}" "do" /bin/true >"$RAW/runsc_probe.err" 2>&1; then
    envs+=(runsc)
  else
    log "runsc does not run here ($(tail -n1 "$RAW/runsc_probe.err")): no runsc rows"
  fi
fi
# The help is read whole before it is searched: `run --help | grep -q` under
# pipefail fails whenever grep exits before sentry has written the rest
# (SIGPIPE), which measured 13 times in 30, and left the census table empty.
CENSUS=0
run_help=$("$SENTRY" run --help 2>&1 || true)
if [[ $run_help == *--census* ]]; then CENSUS=1; fi
log "environments: ${envs[*]}; census: $CENSUS"

# Native runs of the small-files workload use a tmpfs (/dev/shm), as the sandbox's
# /tmp is one: like is compared with like.
SHM=$(mktemp -d /dev/shm/coverage.XXXXXX)
trap 'rm -rf "$SHM"' EXIT

# The corpus (bench/corpus/run_corpus.py: what each workload runs), interleaved.
census_args=()
[[ $CENSUS == 1 ]] && census_args=(--census-dir "$RAW")
# One more census run with the fast paths off, where the binary has them: the
# share of calls answered without a trap is the difference.
[[ $CENSUS == 1 && $run_help == *--no-fast-metadata* ]] && census_args+=(--census-slow=--no-fast-metadata)
"$PY" bench/corpus/run_corpus.py --sentry "$SENTRY" --envs "${envs[*]}" --shm "$SHM" \
  --runs "$RUNS" --runsc-runs "$RUNSC_RUNS" --runsc-flags "${RUNSC_ARGV[*]}" --out "$RAW/corpus.json" "${census_args[@]}"

# ------------------------------------------------------------ microbenchmarks
GB=(--benchmark_format=json --benchmark_min_time="$MIN_TIME" --benchmark_repetitions=3
  --benchmark_report_aggregates_only=true)
for bin in bench_native_ops bench_syscall_families; do
  for env in "${envs[@]}"; do
    case $env in
      # Natively on a tmpfs /tmp of its own (a mount namespace), as the sandbox's /tmp
      # is a tmpfs: the host's /tmp may be ext4, where mkdir+rmdir alone take ms.
      native)
        if unshare -m true 2>/dev/null; then
          # shellcheck disable=SC2016 # $0 and $@ are the inner sh's
          argv=(unshare -m sh -c 'mount -t tmpfs -o size=256m tmpfs /tmp && exec "$0" "$@"' "$BENCH/$bin")
        else
          argv=("$BENCH/$bin")
          log "  $bin natively on the host's /tmp (unshare -m needs root)"
        fi
        ;;
      # Without fast metadata: each row measures the trapped call itself
      # (the preload library would answer stat and access of /usr at once).
      sentry)
        fm=()
        grep -q -- --no-fast-metadata <<<"$run_help" && fm=(--no-fast-metadata)
        argv=("$SENTRY" run --timeout 0 "${fm[@]}" --copy "$BENCH/$bin:/tmp/$bin" -- "/tmp/$bin")
        ;;
      runsc) argv=(runsc "${RUNSC_ARGV[@]}" "do" "$BENCH/$bin") ;;
    esac
    log "[$bin/$env] ${argv[*]}"
    timeout --kill-after=10 600 "${argv[@]}" "${GB[@]}" >"$RAW/micro_${bin}_${env}.json" \
      2>"$RAW/micro_${bin}_${env}.err" || log "  $bin under $env: exit $? ($(tail -n1 "$RAW/micro_${bin}_${env}.err"))"
  done
done
# The same calls as programs make them, through the preload library (fast metadata
# on, the default): stat, access and readlink of published paths, fstat of a
# directory, a published listing, are answered without a trap.
if grep -q -- --no-fast-metadata <<<"$run_help"; then
  argv=("$SENTRY" run --timeout 0 --copy "$BENCH/bench_native_ops:/tmp/bench_native_ops" -- /tmp/bench_native_ops)
  log "[bench_native_ops/sentry, fast metadata on] ${argv[*]}"
  timeout --kill-after=10 600 "${argv[@]}" "${GB[@]}" >"$RAW/micro_bench_native_ops_sentry_fast.json" \
    2>"$RAW/micro_bench_native_ops_sentry_fast.err" || log "  exit $? ($(tail -n1 "$RAW/micro_bench_native_ops_sentry_fast.err"))"
fi
log "[bench_unotify] the floor"
"$BENCH/bench_unotify" "${GB[@]}" --benchmark_filter='^unotify/(filtered_native|sync/recv/plain|sync/epoll/plain|default/recv/plain)/manual_time$' >"$RAW/unotify.json" 2>"$RAW/unotify.err" ||
  log "  bench_unotify: exit $?"

# ------------------------------------------------------------ coverage by action
"$SENTRY" syscalls --json >"$RAW/syscalls.json" 2>/dev/null || rm -f "$RAW/syscalls.json"
"$SENTRY" syscalls >"$RAW/syscalls.txt" 2>&1 || true
# ... and by conformance cases: which trapped rows a case calls and passes, natively
# and under sentry (with namespaces and without), as docs/syscalls.md shows them.
log "[conformance] natively, under sentry and under sentry --no-namespaces"
if "$PY" tests/conformance/coverage.py "$SENTRY" "$REPO/$BUILD/tests/conformance/conformance_test" \
  "$RAW/conformance.json" 2>"$RAW/conformance.err"; then
  "$SENTRY" syscalls --json --conformance "$RAW/conformance.json" >"$RAW/syscalls_cases.json" || true
  "$SENTRY" syscalls --json --no-namespaces --conformance "$RAW/conformance.json" \
    >"$RAW/syscalls_cases_alone.json" || true
else
  log "  coverage.py: exit $? ($(tail -n1 "$RAW/conformance.err"))"
fi

{
  cat "$RAW/meta.part"
  echo "\"loadavg_end\": \"$(cut -d' ' -f1-3 /proc/loadavg)\","
  echo "\"census\": $CENSUS,"
  echo "\"small_files_native_dir\": \"$SHM (tmpfs)\","
  echo "\"envs\": \"${envs[*]}\""
  echo "}"
} >"$RAW/meta.json"

cd "$REPO"
mkdir -p "$RESULTS" docs/img
"$PY" bench/render_benchmarks.py collect "$RAW" "$RESULTS"
"$PY" bench/render_benchmarks.py render "$RESULTS" docs/benchmarks.md docs/img
log "wrote $RESULTS/*.json, docs/benchmarks.md, docs/img/*.svg (raw: $RAW)"
