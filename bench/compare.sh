#!/usr/bin/env bash
# Compares startup and syscall costs natively, under sentry and under gVisor (runsc).
#
# usage: bench/compare.sh BUILD_DIR [OUT_MD]
#        bench/compare.sh --report RESULTS_DIR [OUT_MD]   (re-render kept results)
#
#   BUILD_DIR  a CMake build of this repo with bench_native_ops and bench_unotify built;
#              BUILD_DIR/sentry/sentry is used if it exists (sentry rows are skipped
#              otherwise).
#   OUT_MD     also write the markdown report there.
#
# The report (markdown) goes to stdout; progress and notes go to stderr. Raw results
# (hyperfine and Google Benchmark JSON, stderr of every run) are kept in a temporary
# directory whose name is printed at the end.
#
# Environment (all optional):
#   RUNSC         runsc binary (default: runsc)
#   RUNSC_FLAGS   global runsc flags (default: --rootless --network=none --platform=ptrace)
#   OPS_ARGS      extra bench_native_ops flags
#                 (default: --benchmark_repetitions=3 --benchmark_report_aggregates_only=true)
#   UNOTIFY_ARGS  extra bench_unotify flags
#                 (default: --benchmark_repetitions=5 --benchmark_report_aggregates_only=true)
#   LOOP_N        fork+exec loop length (default: 50)
#   SKIP_RUNSC=1  do not run the runsc rows
#   SKIP_UNOTIFY=1  do not run bench_unotify
set -euo pipefail

usage() {
  echo "usage: $0 BUILD_DIR [OUT_MD]" >&2
  echo "       $0 --report RESULTS_DIR [OUT_MD]   (re-render a kept results directory)" >&2
  exit 2
}
REPORT_ONLY=0
if [[ ${1:-} == --report ]]; then
  REPORT_ONLY=1
  shift
fi
[[ $# -ge 1 && $# -le 2 ]] || usage
[[ -d $1 ]] || {
  echo "compare.sh: $1: not a directory" >&2
  exit 2
}
OUT_MD=${2:-}
if [[ -n $OUT_MD ]]; then
  OUT_MD=$(cd "$(dirname "$OUT_MD")" && pwd)/$(basename "$OUT_MD")
fi

PY=/usr/bin/python3
RUNSC=${RUNSC:-runsc}
read -r -a RUNSC_ARGV <<<"${RUNSC_FLAGS:---rootless --network=none --platform=ptrace}"
read -r -a OPS_ARGV <<<"${OPS_ARGS:---benchmark_repetitions=3 --benchmark_report_aggregates_only=true}"
read -r -a UNOTIFY_ARGV <<<"${UNOTIFY_ARGS:---benchmark_repetitions=5 --benchmark_report_aggregates_only=true}"
LOOP_N=${LOOP_N:-50}
HYPERFINE_ARGV=(--warmup 3 --min-runs 20 --shell=none --style=basic)

# -------------------------------------------------------------------- report
report() {
  "$PY" - "$WORK" "$LOOP_N" "${envs[*]}" <<'PYEOF'
import json, os, platform, sys

work, loop_n, envs = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
ENVS = ["native", "sentry", "runsc"]
UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def load(name):
    path = os.path.join(work, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def fmt_ns(ns):
    if ns is None:
        return "–"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}" if ns / scale < 100 else f"{ns / scale:.0f} {unit}"
    return f"{ns:.3g} ns"


def ratio(a, b):
    return f"{a / b:.2f}×" if a is not None and b else "–"


def missing(env):
    return "n/a" if env not in envs else "failed"


def cell(value, env, extra=""):
    return (fmt_ns(value) + extra) if value is not None else missing(env)


out = []
p = out.append

p("## Startup (hyperfine: mean ± σ, warmup 3, ≥20 runs)")
p("")
p("| command | native | sentry | runsc | sentry/native | runsc/native | sentry/runsc |")
p("| --- | --- | --- | --- | --- | --- | --- |")
labels = {
    "python": "`python3 -c pass`",
    "true": "`/bin/true`",
    "loop": f"`sh -c 'for … {loop_n}×: /bin/true'` (per exec)",
}
for group in ("python", "true", "loop"):
    mean, cells = {}, []
    for env in ENVS:
        d = load(f"startup_{group}_{env}.json")
        if d is None:
            mean[env] = None
            cells.append(missing(env))
            continue
        r = d["results"][0]
        mean[env] = r["mean"] * 1e9
        c = f"{fmt_ns(mean[env])} ± {fmt_ns(r['stddev'] * 1e9)}"
        if group == "loop":
            c += f" ({fmt_ns(mean[env] / loop_n)})"
        cells.append(c)
    p(f"| {labels[group]} | " + " | ".join(cells) + " | "
      + " | ".join([ratio(mean["sentry"], mean["native"]), ratio(mean["runsc"], mean["native"]),
                    ratio(mean["sentry"], mean["runsc"])]) + " |")
p("")

# Bare round trip: the yardstick.
unotify = load("unotify.json")
u = {}
if unotify:
    for b in unotify["benchmarks"]:
        if b.get("error_occurred"):
            continue
        agg = b.get("aggregate_name")
        if agg not in (None, "median"):
            continue
        name = b.get("run_name", b["name"]).replace("/manual_time", "")
        if agg is None and name in u:
            continue  # plain repetitions: keep the first unless a median comes
        u[name] = (b["real_time"] * UNIT_NS[b["time_unit"]], b.get("guest_cpu"), b.get("sup_cpu"))
rt_name = "unotify/sync/recv/plain"
rt = u.get(rt_name, (None,))[0]


def ops_table(env):
    d = load(f"ops_{env}.json")
    if d is None:
        return None
    res = {}
    for b in d["benchmarks"]:
        if b.get("error_occurred"):
            res[b.get("run_name", b["name"])] = None
            continue
        agg = b.get("aggregate_name")
        if agg not in (None, "median"):
            continue
        name = b.get("run_name", b["name"])
        if agg is None and name in res:
            continue
        res[name] = b["real_time"] * UNIT_NS[b["time_unit"]]
    return res


ops = {env: ops_table(env) for env in ENVS}
OPS = [
    ("BM_Getpid", "getpid (never trapped)"),
    ("BM_StatUsrBinPython3", "stat /usr/bin/python3"),
    ("BM_OpenatCloseUsrLibOsRelease", "openat+close /usr/lib/os-release"),
    ("BM_OpenatCloseTmpFile", "openat+close a /tmp file"),
    ("BM_FstatOpenFd", "fstat on an open fd"),
    ("BM_Pread4KTmpFile", "pread 4 KiB, /tmp file"),
    ("BM_Write4KDevNull", "write 4 KiB to /dev/null"),
    ("BM_MmapTouchMunmap64KTmpFile", "mmap+touch 16 pages+munmap, 64 KiB /tmp file"),
    ("BM_GetdentsUsrBin", "open+getdents64…+close /usr/bin"),
]
p("## Guest operations (bench_native_ops: median real time per call)")
p("")
p(f"RT = bare seccomp user-notification round trip, `{rt_name}` from bench_unotify "
  f"({fmt_ns(rt)}).")
p("")
p("| operation | native | sentry | runsc | sentry/native | runsc/native | sentry/runsc "
  "| sentry ÷ RT | (sentry − native) ÷ RT |")
p("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for key, label in OPS:
    v = {env: (ops[env] or {}).get(key) for env in ENVS}
    cells = [cell(v[env], env) for env in ENVS]
    s, n = v["sentry"], v["native"]
    over = f"{(s - n) / rt:.2f}" if s is not None and n is not None and rt else "–"
    per_rt = f"{s / rt:.2f}" if s is not None and rt else "–"
    p(f"| {label} | " + " | ".join(cells) + " | "
      + " | ".join([ratio(s, n), ratio(v["runsc"], n), ratio(s, v["runsc"]), per_rt, over]) + " |")
p("")

p("## Bare seccomp user-notification round trip (bench_unotify: median per call)")
p("")
if u:
    p("| variant | time per call | guest CPU per call | supervisor CPU per notification |")
    p("| --- | --- | --- | --- |")
    for name, (t, g, s) in u.items():
        g_ns = g * 1e9 if g is not None else None
        s_ns = s * 1e9 if s is not None else None
        p(f"| `{name}` | {fmt_ns(t)} | {fmt_ns(g_ns)} | {fmt_ns(s_ns)} |")
else:
    p("(bench_unotify did not run)")
p("")

notes = open(os.path.join(work, "notes.txt")).read().strip()
p(f"Machine: {platform.node()}, Linux {platform.release()}, {os.cpu_count()} CPUs.")
if notes:
    p("")
    p("Notes:")
    p("")
    for line in notes.splitlines():
        p(f"- {line}")
print("\n".join(out))
PYEOF
}

emit() {
  if [[ -n $OUT_MD ]]; then
    report | tee "$OUT_MD"
  else
    report
  fi
}

if [[ $REPORT_ONLY == 1 ]]; then
  WORK=$(cd "$1" && pwd)
  LOOP_N=$(cat "$WORK/loop_n" 2>/dev/null || echo "$LOOP_N")
  envs=()
  for env in native sentry runsc; do
    if compgen -G "$WORK/*_$env.json" >/dev/null; then envs+=("$env"); fi
  done
  [[ -f $WORK/notes.txt ]] || : >"$WORK/notes.txt"
  emit
  exit 0
fi

BUILD=$(cd "$1" && pwd)
OPS_BIN=$BUILD/bench/bench_native_ops
UNOTIFY_BIN=$BUILD/bench/bench_unotify
SENTRY=$BUILD/sentry/sentry

log() { echo "compare.sh: $*" >&2; }

for tool in hyperfine timeout "$PY"; do
  command -v "$tool" >/dev/null || {
    log "$tool not found"
    exit 1
  }
done
for bin in "$OPS_BIN" "$UNOTIFY_BIN"; do
  [[ -x $bin ]] || {
    log "$bin missing: build it first (ninja -C $BUILD bench_native_ops bench_unotify)"
    exit 1
  }
done

WORK=$(mktemp -d /tmp/sentry-bench.XXXXXX)
NOTES=$WORK/notes.txt
: >"$NOTES"
echo "$LOOP_N" >"$WORK/loop_n"
note() {
  log "$*"
  echo "$*" >>"$NOTES"
}

# Guests run from / : the sandboxes need not show the caller's working directory.
cd /
note "load average at start: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews every figure)."

# ------------------------------------------------------------------ which environments
envs=(native)
if [[ -x $SENTRY ]]; then
  envs+=(sentry)
else
  note "sentry: $SENTRY not built yet; sentry rows skipped."
fi
if [[ ${SKIP_RUNSC:-0} == 1 ]]; then
  note "runsc: skipped (SKIP_RUNSC=1)."
elif ! command -v "$RUNSC" >/dev/null; then
  note "runsc: $RUNSC not found; runsc rows skipped."
elif ! timeout 120 "$RUNSC" "${RUNSC_ARGV[@]}" "do" /bin/true >"$WORK/runsc_probe.out" 2>"$WORK/runsc_probe.err"; then
  note "runsc: '$RUNSC ${RUNSC_ARGV[*]} do /bin/true' failed here ($(tail -n 1 "$WORK/runsc_probe.err")); runsc rows skipped."
else
  envs+=(runsc)
fi

# The argv prefix that runs a command in environment $1 (as a bash array literal).
# For sentry, extra "--copy HOST:GUEST" options may follow the environment name.
prefix() {
  local env=$1
  shift
  case $env in
    native) ;;
    sentry) printf '%q ' "$SENTRY" run "$@" -- ;;
    runsc) printf '%q ' "$RUNSC" "${RUNSC_ARGV[@]}" "do" ;;
  esac
}

# ---------------------------------------------------------------------- startup
loop_script="for i in $(seq -s ' ' 1 "$LOOP_N"); do /bin/true; done"
declare -A startup_cmds=(
  [python]="/usr/bin/python3 -c pass"
  [true]="/bin/true"
  [loop]="/bin/sh -c '$loop_script'"
)
for group in python true loop; do
  for env in "${envs[@]}"; do
    cmd="$(prefix "$env")${startup_cmds[$group]}"
    log "hyperfine [$group/$env]: $cmd"
    if ! timeout --kill-after=10 1800 hyperfine "${HYPERFINE_ARGV[@]}" -n "$env" \
      --export-json "$WORK/startup_${group}_${env}.json" "$cmd" >"$WORK/startup_${group}_${env}.out" \
      2>"$WORK/startup_${group}_${env}.err"; then
      rm -f "$WORK/startup_${group}_${env}.json"
      note "startup $group under $env failed: $(tail -n 2 "$WORK/startup_${group}_${env}.err" | tr '\n' ' ')"
    fi
  done
done

# ---------------------------------------------------------------- guest operations
for env in "${envs[@]}"; do
  case $env in
    # On a tmpfs /tmp, as the sandbox's /tmp is (and runsc's): the data-path
    # benchmarks (pread, mmap) then compare the same filesystem. The host's
    # /tmp may be ext4, whose page faults cost ~30 % less than tmpfs's here.
    native)
      if unshare -m true 2>/dev/null; then
        argv=(unshare -m sh -c 'mount -t tmpfs -o size=256m tmpfs /tmp && exec "$0" "$@"' "$OPS_BIN")
      else
        argv=("$OPS_BIN")
        note "bench_native_ops natively: /tmp is the host's (unshare -m needs root)"
      fi
      ;;
    # --timeout 0: sentry's default 30 s wall-clock cap is shorter than this run.
    sentry) argv=("$SENTRY" run --timeout 0 --copy "$OPS_BIN:/tmp/bench_native_ops" -- /tmp/bench_native_ops) ;;
    runsc) argv=("$RUNSC" "${RUNSC_ARGV[@]}" "do" "$OPS_BIN") ;;
  esac
  log "bench_native_ops [$env]: ${argv[*]}"
  if ! timeout --kill-after=10 1800 "${argv[@]}" --benchmark_format=json "${OPS_ARGV[@]}" \
    >"$WORK/ops_$env.json" 2>"$WORK/ops_$env.err" ||
    ! "$PY" -c 'import json,sys; json.load(open(sys.argv[1]))' "$WORK/ops_$env.json" 2>/dev/null; then
    mv "$WORK/ops_$env.json" "$WORK/ops_$env.failed" 2>/dev/null || true
    note "bench_native_ops under $env failed: $(tail -n 2 "$WORK/ops_$env.err" | tr '\n' ' ')"
  fi
done

# ------------------------------------------------------------------- unotify
if [[ ${SKIP_UNOTIFY:-0} == 1 ]]; then
  note "bench_unotify: skipped (SKIP_UNOTIFY=1)."
else
  log "bench_unotify: $UNOTIFY_BIN"
  if ! timeout --kill-after=10 1800 "$UNOTIFY_BIN" --benchmark_format=json "${UNOTIFY_ARGV[@]}" \
    >"$WORK/unotify.json" 2>"$WORK/unotify.err"; then
    mv "$WORK/unotify.json" "$WORK/unotify.failed" 2>/dev/null || true
    note "bench_unotify failed: $(tail -n 2 "$WORK/unotify.err" | tr '\n' ' ')"
  fi
fi

note "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)."

emit
log "raw results kept in $WORK"
