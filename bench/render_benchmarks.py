#!/usr/bin/python3
"""Turns the raw output of bench/coverage.sh into bench/results/*.json, and those
into docs/benchmarks.md and its plots.

usage: render_benchmarks.py collect RAW_DIR RESULTS_DIR
       render_benchmarks.py render RESULTS_DIR OUT_MD IMG_DIR [--check]

--check writes nothing and exits 1 if OUT_MD differs from what RESULTS_DIR renders
(the benchmarks_doc test: docs/benchmarks.md is never edited by hand).

`render` reads only bench/results/*.json, so the document can be regenerated from
the committed results without rerunning anything. Plots are SVG, drawn with
matplotlib if it imports, else with gnuplot, else skipped (said in the document).
"""

import json
import os
import shutil
import statistics
import subprocess
import sys

ENVS = ["native", "sentry", "runsc"]
FLOOR = "unotify/sync/recv/plain/manual_time"  # the sentry sets SYNC_WAKE_UP and waits in RECV
UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}

# Microbenchmark -> (what one iteration does, calls the sentry traps per iteration,
# calls traced per iteration). Trapped counts follow `sentry syscalls` (trap rows);
# getdents64's count is read from the benchmark's own getdents_calls counter.
MICRO = {
    "BM_Getpid": ("getpid", 0, 0),
    "BM_KillSelfZero": ("kill(getpid(), 0)", 0, 0),
    "BM_FutexWakeNone": ("futex FUTEX_WAKE, no waiter", 0, 0),
    "BM_Pread4KTmpFile": ("pread 4 KiB of a /tmp file", 0, 0),
    "BM_Write4KDevNull": ("write 4 KiB to /dev/null", 0, 0),
    "BM_MmapTouchMunmap64KTmpFile": ("mmap 64 KiB of a /tmp file, touch, munmap", 0, 0),
    "BM_StatUsrBinPython3": ("stat /usr/bin/python3", 1, 0),
    "BM_FstatOpenFd": ("fstat of an open fd", 1, 0),
    "BM_OpenatCloseUsrLibOsRelease": ("openat + close, a /usr file", 1, 0),
    "BM_OpenatCloseTmpFile": ("openat + close, a /tmp file", 1, 0),
    "BM_GetdentsUsrBin": ("open /usr/bin, getdents64 to the end, close", None, 0),
    "BM_Access": ("access /usr/bin/python3", 1, 0),
    "BM_Readlink": ("readlink of a /tmp symlink", 1, 0),
    "BM_MkdirRmdir": ("mkdir + rmdir in /tmp", 2, 0),
    "BM_RenamePair": ("rename there and back in /tmp", 2, 0),
    "BM_CreateUnlink": ("openat O_CREAT + close + unlink in /tmp", 2, 0),
    "BM_ChdirGetcwd": ("chdir /tmp + getcwd", 2, 0),
    "BM_SocketBindConnectClose": ("UDP socket + bind + connect 127.0.0.1 + close", 2, 0),
    "BM_SendtoAddrRecv": ("sendto with an address + recv, UDP 127.0.0.1", 1, 0),
    "BM_ForkExecveWait": ("fork + execve /bin/true + wait", 0, 1),
}


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def gbench_medians(doc):
    """{run_name: {"ns": median real time, "label": ..., "counters": {...}}}"""
    out = {}
    if not doc:
        return out
    for b in doc.get("benchmarks", []):
        name = b.get("run_name", b["name"]).split("/iterations:")[0]
        if b.get("error_occurred"):
            out[name] = {"ns": None, "error": b.get("error_message", "error")}
            continue
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        skip = {"name", "run_name", "run_type", "aggregate_name", "aggregate_unit", "iterations",
                "real_time", "cpu_time", "time_unit", "family_index", "per_family_instance_index",
                "repetitions", "repetition_index", "threads", "label"}
        counters = {k: v for k, v in b.items() if k not in skip and isinstance(v, (int, float))}
        out[name] = {"ns": b["real_time"] * UNIT_NS[b.get("time_unit", "ns")],
                     "label": b.get("label", ""), "counters": counters}
    return out


def conformance_coverage(raw):
    """How many trapped and traced rows of each table have conformance cases that
    all pass natively and under sentry (`sentry syscalls --json --conformance`)."""
    cases = (load(os.path.join(raw, "conformance.json")) or {}).get("cases", {})
    out = {"available": bool(cases), "cases": len(cases), "tables": []}
    for table, fname in (("with namespaces", "syscalls_cases.json"),
                         ("without namespaces", "syscalls_cases_alone.json")):
        rows = load(os.path.join(raw, fname))
        if not isinstance(rows, list):
            continue
        trapped = [r for r in rows if r.get("action") in ("trap", "trace")]
        uncovered = [r["name"] for r in trapped
                     if not r.get("cases", {}).get("count")
                     or r["cases"].get("passBoth") != r["cases"]["count"]]
        out["tables"].append({"table": table, "trapped": len(trapped),
                              "covered": len(trapped) - len(uncovered),
                              "uncovered": uncovered})
    return out


def collect(raw, results):
    os.makedirs(results, exist_ok=True)
    meta = load(os.path.join(raw, "meta.json")) or {}
    envs = meta.get("envs", "native").split()

    # Corpus.
    corpus_raw = load(os.path.join(raw, "corpus.json")) or {}
    corpus = []
    for name, res in corpus_raw.items():
        med = {e: statistics.median(res[e]["samples_s"]) for e in envs
               if e in res and res[e]["samples_s"]}
        for e in envs:
            if e not in res:
                continue
            m = med.get(e)
            corpus.append({
                "workload": name, "command": res["command"], "mode": e,
                "argv": res[e]["argv"], "samples_s": res[e]["samples_s"],
                "exit_codes": res[e]["exit_codes"], "median_s": m,
                "ratio_to_native": m / med["native"] if m and med.get("native") else None,
                "ratio_to_runsc": m / med["runsc"] if m and med.get("runsc") else None,
            })
    with open(os.path.join(results, "corpus.json"), "w") as f:
        json.dump(corpus, f, indent=1)

    # Census (only when the binary has `run --census`).
    census = {"available": bool(meta.get("census")), "workloads": []}
    for name in corpus_raw:
        doc = load(os.path.join(raw, f"census_{name}.json"))
        if not doc:
            continue
        t = doc.get("totals", {})
        top = sorted(doc.get("syscalls", []), key=lambda r: -r.get("trapped", 0))[:8]
        census["workloads"].append({
            "workload": name, "totals": t, "counting": doc.get("counting"),
            "top_trapped": [{k: r.get(k) for k in ("name", "calls", "trapped", "trapNs",
                                                     "maxTrapNs")} for r in top if r.get("trapped")],
            "census_run": corpus_raw[name].get("census_run"),
        })
        slow = load(os.path.join(raw, f"census_slow_{name}.json"))
        if slow:
            census["workloads"][-1]["slow"] = {
                "flag": (corpus_raw[name].get("census_slow_run") or {}).get("flag"),
                "totals": slow.get("totals", {}),
                "by_name": {r["name"]: r.get("trapped", 0) for r in slow.get("syscalls", [])
                            if r.get("trapped")},
            }
            census["workloads"][-1]["by_name"] = {
                r["name"]: r.get("trapped", 0) for r in doc.get("syscalls", []) if r.get("trapped")}
    with open(os.path.join(results, "census.json"), "w") as f:
        json.dump(census, f, indent=1)

    # Floor.
    floor_all = gbench_medians(load(os.path.join(raw, "unotify.json")))
    floor = {"floor_variant": FLOOR, "variants": {
        k: {"median_ns": v["ns"], **{c: v["counters"][c] * 1e9 for c in ("guest_cpu", "sup_cpu")
                                     if c in v.get("counters", {})}}
        for k, v in floor_all.items()}}
    with open(os.path.join(results, "floor.json"), "w") as f:
        json.dump(floor, f, indent=1)
    floor_ns = floor_all.get(FLOOR, {}).get("ns")

    # Microbenchmarks.
    per_env = {e: {} for e in envs}
    for e in envs:
        for binary in ("bench_native_ops", "bench_syscall_families"):
            for k, v in gbench_medians(load(os.path.join(raw, f"micro_{binary}_{e}.json"))).items():
                v["binary"] = binary
                per_env[e][k] = v
    micro = []
    for bm, (what, trapped, traced) in MICRO.items():
        nat = per_env.get("native", {}).get(bm, {})
        if trapped is None:  # getdents: open + the getdents64 calls
            calls = nat.get("counters", {}).get("getdents_calls")
            trapped = 1 + round(calls) if calls else None
        for e in envs:
            v = per_env[e].get(bm)
            if v is None:
                continue
            ns, n_ns = v.get("ns"), nat.get("ns")
            row = {"benchmark": bm, "binary": v.get("binary"), "what": what, "mode": e,
                   "median_ns": ns, "error": v.get("error"), "trapped_per_iter": trapped,
                   "traced_per_iter": traced,
                   "ratio_to_native": ns / n_ns if ns and n_ns else None}
            r = per_env.get("runsc", {}).get(bm, {}).get("ns")
            row["ratio_to_runsc"] = ns / r if ns and r else None
            if e == "sentry" and ns and n_ns and trapped and floor_ns:
                extra = (ns - n_ns) / trapped
                row["extra_ns_per_trapped_call"] = extra
                row["round_trips_per_trapped_call"] = extra / floor_ns
            micro.append(row)
    with open(os.path.join(results, "micro.json"), "w") as f:
        json.dump(micro, f, indent=1)
    # The same calls through the preload library (fast metadata on).
    fast = gbench_medians(load(os.path.join(raw, "micro_bench_native_ops_sentry_fast.json")))
    micro_fast = []
    for bm, (what, trapped, traced) in MICRO.items():
        if trapped == 0 or traced:  # nothing the library could answer
            continue
        v, nat = fast.get(bm), per_env.get("native", {}).get(bm, {})
        trapped_row = per_env.get("sentry", {}).get(bm, {})
        if v and v.get("ns"):
            micro_fast.append({
                "benchmark": bm, "what": what, "median_ns": v["ns"], "native_ns": nat.get("ns"),
                "trapped_ns": trapped_row.get("ns"),
                "ratio_to_native": v["ns"] / nat["ns"] if nat.get("ns") else None})
    path = os.path.join(results, "micro_fast.json")
    if micro_fast:
        with open(path, "w") as f:
            json.dump(micro_fast, f, indent=1)
    elif os.path.exists(path):
        os.remove(path)

    # Coverage by action.
    table = load(os.path.join(raw, "syscalls.json"))
    cov = {"source": "sentry syscalls --json", "by_action": {}}
    if isinstance(table, dict):
        table = table.get("syscalls") or table.get("rows") or []
    cov["by_detail"] = {}
    for row in table or []:
        a = row.get("action", "?")
        cov["by_detail"][a] = cov["by_detail"].get(a, 0) + 1
        # The four actions: "native (filtered; else E...)" and "native; trap with an
        # address" count as native (their first word), "errno EPERM" as errno.
        kind = a.replace(";", " ").split()[0] if a.strip() else "?"
        cov["by_action"][kind] = cov["by_action"].get(kind, 0) + 1
    cov["conformance"] = conformance_coverage(raw)
    with open(os.path.join(results, "coverage.json"), "w") as f:
        json.dump(cov, f, indent=1)

    meta["floor_ns"] = floor_ns
    with open(os.path.join(results, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


# ------------------------------------------------------------------- render
def fmt_s(s):
    if s is None:
        return "–"
    return f"{s * 1e3:.0f} ms" if s < 10 else f"{s:.1f} s"


def fmt_ns(ns):
    if ns is None:
        return "–"
    for unit, scale in (("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            v = ns / scale
            return f"{v:.3g} {unit}" if v < 100 else f"{v:.0f} {unit}"
    return f"{ns:.3g} ns"


def fmt_x(r):
    return "–" if r is None else f"{r:.2f}×"


def plot(results, img, micro, cov, floor_ns):
    os.makedirs(img, exist_ok=True)
    rows = {}
    for r in micro:
        rows.setdefault(r["benchmark"], {})[r["mode"]] = r["median_ns"]
    names = [b for b in MICRO if b in rows]
    envs = [e for e in ENVS if any(e in rows[b] for b in names)]
    actions = sorted(cov.get("by_action", {}).items(), key=lambda kv: -kv[1])
    made = []
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        plt = None
    if not names and not actions:
        return None
    if plt:
        plt.rcParams["svg.hashsalt"] = "sentry-bench"  # the same SVG for the same data
        fig, ax = plt.subplots(figsize=(9, 7))
        h = 0.8 / max(1, len(envs))
        for i, e in enumerate(envs):
            ax.barh([j + i * h for j in range(len(names))],
                    [(rows[b].get(e) or 0) / 1e3 for b in names], height=h, label=e)
        if floor_ns:
            ax.axvline(floor_ns / 1e3, color="k", ls="--", label="unotify floor")
        ax.set_yticks([j + h for j in range(len(names))], [b[3:] for b in names])
        ax.set_xscale("log")
        ax.set_xlabel("µs per iteration (median)")
        ax.invert_yaxis()
        ax.set_title("Per-syscall microbenchmarks (log scale)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(img, "syscall_cost.svg"), metadata={"Date": None})
        fig, ax = plt.subplots(figsize=(5, 3))
        ax.bar([a for a, _ in actions], [n for _, n in actions])
        ax.set_ylabel("syscall table rows")
        ax.set_title("sentry syscalls: rows by action")
        fig.tight_layout()
        fig.savefig(os.path.join(img, "coverage_by_action.svg"), metadata={"Date": None})
        return "matplotlib"
    if shutil.which("gnuplot"):
        dat = os.path.join(img, ".syscall_cost.dat")
        with open(dat, "w") as f:
            f.write("name " + " ".join(envs) + "\n")
            for b in names:
                f.write(b[3:] + " " + " ".join(
                    f"{rows[b][e] / 1e3:.4g}" if rows[b].get(e) else "NaN" for e in envs) + "\n")
        floor_line = (f"set arrow from graph 0, first {floor_ns / 1e3:.4g} to graph 1, first "
                      f"{floor_ns / 1e3:.4g} nohead dt 2 lw 2\n"
                      f"set label 'unotify floor {floor_ns / 1e3:.3g} µs' at graph 0.01, first "
                      f"{floor_ns / 1e3 * 1.25:.4g}\n") if floor_ns else ""
        script = (
            "set terminal svg size 1000,560 dynamic font 'sans,11'\n"
            f"set output '{os.path.join(img, 'syscall_cost.svg')}'\n"
            "set style data histograms\nset style histogram clustered gap 1\n"
            "set style fill solid 0.9 border -1\nset logscale y\n"
            "set ylabel 'µs per iteration (median, log scale)'\n"
            "set xtics rotate by -40 font ',9'\nset key top left\nset grid ytics\n"
            "set title 'Per-syscall microbenchmarks: native, sentry, runsc'\n" + floor_line +
            "plot " + ", ".join(f"'{dat}' using {i + 2}:xtic(1) title '{e}'"
                                for i, e in enumerate(envs)) + "\n")
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
        dat2 = os.path.join(img, ".coverage.dat")
        with open(dat2, "w") as f:
            for a, n in actions:
                f.write(f"{a} {n}\n")
        script = (
            "set terminal svg size 520,340 dynamic font 'sans,11'\n"
            f"set output '{os.path.join(img, 'coverage_by_action.svg')}'\n"
            "set style data histograms\nset style fill solid 0.9 border -1\nset boxwidth 0.7\n"
            "set ylabel 'rows of the syscall table'\nset yrange [0:*]\nunset key\n"
            "set title 'sentry syscalls: rows by action'\n"
            f"plot '{dat2}' using 2:xtic(1), '' using 0:2:2 with labels offset 0,0.7 notitle\n")
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
        os.remove(dat)
        os.remove(dat2)
        return "gnuplot"
    return None


STAT_FAMILY = ("stat", "lstat", "newfstatat", "statx", "access", "faccessat", "faccessat2",
               "readlink", "readlinkat", "fstat")


def render_fast_share(p, rows):
    """The census with the fast paths on against one with them off: what the guest's
    library answered without a trap (fastmeta/, issue 29)."""
    if not rows:
        return
    p("")
    flag = rows[0]["slow"].get("flag") or "the fast paths off"
    p("### Answered without a trap")
    p("")
    p(f"Each workload's census once more with `{flag}`: every call the guest's "
      "library (fastmeta/) answers from the shared region then traps. *Answered without a "
      "trap* is the difference between the two runs' trapped calls, as a share of the "
      "calls that trap without the fast paths; the stat family is stat, lstat, fstat, "
      "newfstatat, statx, access, faccessat(2), readlink(at); getdents64 goes with "
      "the published listings. One run each, so a few calls of noise.")
    p("")
    p("| workload | trapped, fast paths off | trapped, on | answered without a trap | "
      "stat family off / on | getdents64 off / on |")
    p("| --- | --- | --- | --- | --- | --- |")
    for c in rows:
        off, on = c["slow"]["totals"].get("trapped", 0), c["totals"].get("trapped", 0)
        so, sn = c["slow"]["by_name"], c.get("by_name", {})
        fam_off = sum(v for k, v in so.items() if k in STAT_FAMILY)
        fam_on = sum(v for k, v in sn.items() if k in STAT_FAMILY)
        saved = off - on
        share = f"{saved} ({100 * saved / off:.0f} %)" if off else "–"
        p(f"| {c['workload']} | {off} | {on} | {share} | {fam_off} / {fam_on} | "
          f"{so.get('getdents64', 0)} / {sn.get('getdents64', 0)} |")


def render_micro_fast(p, rows):
    p("### The same calls as programs make them")
    p("")
    p("The table above runs with `--no-fast-metadata`, so that each row measures the trapped "
      "call itself. Programs run with the preload library (the default), which answers stat, "
      "access and readlink of published paths, fstat of a directory and a published listing "
      "from the shared region without a trap (fastmeta/README.md); a row it cannot answer "
      "traps as above. The same binary, the same run of `bench/coverage.sh`:")
    p("")
    p("| benchmark | native | sentry, trapped | sentry, with the library | with the library/native |")
    p("| --- | --- | --- | --- | --- |")
    for r in rows:
        p(f"| {r['benchmark'][3:]} | {fmt_ns(r.get('native_ns'))} | {fmt_ns(r.get('trapped_ns'))} | "
          f"{fmt_ns(r['median_ns'])} | {fmt_x(r.get('ratio_to_native'))} |")
    p("")


def render(results, out_md, img, check=False):
    meta = load(os.path.join(results, "meta.json")) or {}
    corpus = load(os.path.join(results, "corpus.json")) or []
    micro = load(os.path.join(results, "micro.json")) or []
    census = load(os.path.join(results, "census.json")) or {"available": False, "workloads": []}
    floor = load(os.path.join(results, "floor.json")) or {"variants": {}}
    cov = load(os.path.join(results, "coverage.json")) or {"by_action": {}}
    floor_ns = meta.get("floor_ns")
    envs = meta.get("envs", "native").split()
    if check:  # no drawing: the plots are there or not
        tool = all(os.path.exists(os.path.join(img, f))
                   for f in ("syscall_cost.svg", "coverage_by_action.svg"))
    else:
        tool = plot(results, img, micro, cov, floor_ns)
    img_rel = os.path.relpath(img, os.path.dirname(os.path.abspath(out_md)))

    L = []
    p = L.append
    p("# Benchmarks: coverage, corpus and per-syscall cost")
    p("")
    p("<!-- Generated by bench/render_benchmarks.py from bench/results/*.json: do not edit. -->")
    p("")
    p("**Generated; do not edit.** Rerun everything with `bench/coverage.sh` (builds sentry "
      "and the benchmarks, installs what is missing, writes `bench/results/*.json`, this "
      "file and the plots), or only re-render the committed results with "
      "`python3 bench/render_benchmarks.py render bench/results docs/benchmarks.md docs/img`. "
      "How to read the figures: [bench/README.md](../bench/README.md).")
    p("")
    p(f"Run of {meta.get('date', '?')} at commit `{meta.get('commit', '?')}`; kernel "
      f"{meta.get('kernel', '?')}, {meta.get('cpus', '?')} CPUs ({meta.get('cpu', '?')}). "
      f"Load average {meta.get('loadavg_start', '?')} at the start, "
      f"{meta.get('loadavg_end', '?')} at the end: **the machine was shared with other "
      "engineers' builds and tests**, so every wall time carries their load; the runs of "
      "the three environments were interleaved so that the load falls on all of them alike, "
      "but single figures can be off by tens of per cent. Environments: "
      f"{', '.join(envs)}. runsc: `runsc --rootless --network=none --platform=ptrace do`.")
    p("")

    # Corpus.
    p("## Corpus: wall time of real workloads")
    p("")
    p("Median wall time of each workload, from the start of the sandbox to its end "
      "(sentry's and runsc's start-up included). Natively, the scratch directory of "
      f"small_files_1000 and gcc_compile is a tmpfs ({meta.get('small_files_native_dir', '/dev/shm')}); "
      "under sentry it is the sandbox's in-memory /tmp, under runsc its own /tmp. "
      "Targets (issue 17): sentry/native ≤ 2×, runsc/sentry ≥ 8×.")
    p("")
    by = {}
    for r in corpus:
        by.setdefault(r["workload"], {})[r["mode"]] = r
    hdr = "| workload | " + " | ".join(envs) + " | sentry/native | runsc/sentry | runs | exit codes |"
    p(hdr)
    p("|" + " --- |" * (hdr.count("|") - 1))
    for w, m in by.items():
        cells = [fmt_s(m[e]["median_s"]) if e in m else "–" for e in envs]
        s = m.get("sentry", {})
        rs = (m["runsc"]["median_s"] / s["median_s"]
              if "runsc" in m and s.get("median_s") and m["runsc"]["median_s"] else None)
        runs = "/".join(str(len(m[e]["samples_s"])) for e in envs if e in m)
        codes = "; ".join(f"{e}: {','.join(str(c) for c in sorted(set(m[e]['exit_codes']), key=str))}"
                          for e in envs if e in m)
        p(f"| {w} | " + " | ".join(cells) + f" | {fmt_x(s.get('ratio_to_native'))} | "
          f"{fmt_x(rs)} | {runs} | {codes} |")
    p("")
    slow = [w for w, m in by.items() if (m.get("sentry", {}).get("ratio_to_native") or 0) > 2]
    if slow:
        # Per file, from this run's census (1,000 files).
        per_file = next((w["totals"].get("trapped", 0) / 1000 for w in census.get("workloads", [])
                         if w.get("workload") == "small_files_1000"), None)
        files = (f"; the 1,000-small-files workload makes {per_file:.1f} trapped calls per file"
                 if per_file else "")
        p("Above 2× native in this run: " + ", ".join(f"**{w}**" for w in slow) + ". "
          "Metadata-heavy workloads are nearly all trapped calls (openat, newfstatat, "
          f"getdents64, unlinkat), each a round trip plus host work{files}. Which of them "
          "must trap, and what each fast path saved, is in bench/README.md (\"Fast paths, "
          "A/B\"). On a loaded machine every round trip also waits "
          "for the scheduler, which inflates these ratios further.")
        p("")
    p("What each workload runs:")
    p("")
    for w, m in by.items():
        p(f"- **{w}**: {next(iter(m.values()))['command']}")
    p("")

    # Census.
    p("## Calls trapped per workload (census)")
    p("")
    if not census.get("available") or not census.get("workloads"):
        p("n/a (no census in this binary): `sentry run --census` was not in the binary "
          "that ran. Rerun `bench/coverage.sh` with a sentry that has it to fill this table.")
    else:
        p("From one more run of each workload under `sentry run --census` (every native call "
          "then costs a round trip too, so these runs are slower than the timed ones). "
          "Time per trapped call is the sentry's own time answering it (receive to reply, "
          "the round trip itself not included; census mode inflates it, as the sentry "
          "also lets every native call go), "
          "in round trips of the floor below.")
        p("")
        p("| workload | calls | native | trapped | traced | refused | trapped share | "
          "sentry time per trapped call | the same, in floors | most trapped |")
        p("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for c in census["workloads"]:
            t = c["totals"]
            calls, tr = t.get("calls", 0), t.get("trapped", 0)
            per = t.get("trapNs", 0) / tr if tr else None
            rt = f"{per / floor_ns:.2f}" if per and floor_ns else "–"
            top = ", ".join(f"{x['name']} {x['trapped']}" for x in c["top_trapped"][:4])
            p(f"| {c['workload']} | {calls} | {t.get('native', 0)} | {tr} | {t.get('traced', 0)} | "
              f"{t.get('refused', 0)} | {100 * tr / calls:.1f} % | {fmt_ns(per)} | {rt} | {top} |"
              if calls else f"| {c['workload']} | 0 | | | | | | | | |")
        render_fast_share(p, [c for c in census["workloads"] if c.get("slow")])
    p("")

    # Floor.
    p("## The floor: a bare seccomp user-notification round trip")
    p("")
    p("bench_unotify, in the same run: a guest whose one trapped call is answered by a "
      "supervisor that does nothing else. `sync/recv/plain` (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, "
      "blocking in NOTIF_RECV, a plain reply) is how the sentry waits, and is the unit of "
      "\"round trips\" below.")
    p("")
    p("| variant | time per call | guest CPU | supervisor CPU |")
    p("| --- | --- | --- | --- |")
    for k, v in floor.get("variants", {}).items():
        mark = " (**floor**)" if k == floor.get("floor_variant") else ""
        p(f"| `{k}`{mark} | {fmt_ns(v.get('median_ns'))} | {fmt_ns(v.get('guest_cpu'))} | "
          f"{fmt_ns(v.get('sup_cpu'))} |")
    p("")

    # Micro.
    p("## Per-syscall cost")
    p("")
    p("Median time of one iteration (Google Benchmark, 3 repetitions); *trapped* is how many "
      "of an iteration's calls the sentry answers (its `trap` rows); *round trips* is "
      "(sentry − native) / trapped calls / floor: what one trapped call costs over the "
      "native call, in floors. Rows with no trapped call show what the seccomp filter "
      "(and, for execve, ptrace) adds to a native call.")
    p("")
    mb = {}
    for r in micro:
        mb.setdefault(r["benchmark"], {})[r["mode"]] = r
    hdr = ("| benchmark | what one iteration does | trapped | " + " | ".join(envs) +
           " | sentry/native | runsc/sentry | round trips per trapped call |")
    p(hdr)
    p("|" + " --- |" * (hdr.count("|") - 1))
    for b in MICRO:
        if b not in mb:
            continue
        m = mb[b]
        any_ = next(iter(m.values()))
        s = m.get("sentry", {})
        rs = (m["runsc"]["median_ns"] / s["median_ns"]
              if "runsc" in m and s.get("median_ns") and m["runsc"].get("median_ns") else None)
        rt = s.get("round_trips_per_trapped_call")
        rt_cell = "–" if rt is None else (f"{rt:.2f}" if rt >= 0 else "< 0: faster than native")
        trapped = any_["trapped_per_iter"]
        trapped = "execve traced" if any_["traced_per_iter"] else ("?" if trapped is None else trapped)
        cells = [fmt_ns(m[e]["median_ns"]) if e in m and m[e]["median_ns"] else
                 ("error" if e in m else "–") for e in envs]
        p(f"| {b[3:]} | {any_['what']} | {trapped} | " + " | ".join(cells) +
          f" | {fmt_x(s.get('ratio_to_native'))} | {fmt_x(rs)} | "
          f"{rt_cell} |")
    p("")
    if any((r.get("round_trips_per_trapped_call") or 0) < 0 for r in micro):
        p("*Faster than native*: the sentry answers getdents64 of a host directory from "
          "the listing it read once (names, inode numbers, types), and /tmp is its "
          "in-memory store; a native run reads the host's directory each time.")
        p("")
    if tool:
        p(f"![per-syscall cost, log scale]({img_rel}/syscall_cost.svg)")
        p("")
    else:
        p("(No plots: neither matplotlib nor gnuplot was installed.)")
        p("")

    micro_fast = load(os.path.join(results, "micro_fast.json")) or []
    if micro_fast:
        render_micro_fast(p, micro_fast)

    # Where above 2 round trips.
    over = [r for r in micro if r["mode"] == "sentry" and (r.get("round_trips_per_trapped_call") or 0) > 2]
    p("### Trapped calls above 2 round trips, and why")
    p("")
    if not over:
        p("None in this run.")
    else:
        why = {
            "BM_StatUsrBinPython3": "a path walk in the sentry (each component opened with "
            "O_PATH|O_NOFOLLOW under the sandbox root) and a statx on the host, then the "
            "struct written into guest memory: three to five host syscalls besides the round trip",
            "BM_FstatOpenFd": "the fd's identity: the sentry reads the guest's fd via "
            "pidfd_getfd (or /proc) to stat the object the guest really holds",
            "BM_OpenatCloseUsrLibOsRelease": "the path walk, the open on the host and the new "
            "fd handed to the guest with SECCOMP_IOCTL_NOTIF_ADDFD (an extra wake-up of the "
            "guest, see the addfd rows of bench/README.md)",
            "BM_OpenatCloseTmpFile": "as for /usr, plus the overlay lookup of the in-memory /tmp",
            "BM_GetdentsUsrBin": "each getdents64 reads the directory on the host and writes "
            "the entries into guest memory (process_vm_writev)",
            "BM_ChdirGetcwd": "chdir walks and checks the path; getcwd writes into guest memory",
            "BM_SocketBindConnectClose": "bind and connect read the sockaddr from guest memory, "
            "check it, and act on the guest's socket through a duplicate of its fd (pidfd_getfd)",
            "BM_Readlink": "the path walk (the link itself is not followed), then the "
            "target written into guest memory",
            "BM_CreateUnlink": "the create walks the path in the in-memory store, makes the "
            "file and donates it with ADDFD; the unlink walks the path again",
            "BM_MkdirRmdir": "each walks the path in the in-memory store and changes it",
            "BM_RenamePair": "two path walks per rename, and the store's change",
            "BM_Access": "a path walk and a permission check on the object",
            "BM_SendtoAddrRecv": "the address is read and checked, then the send is done on a "
            "duplicate of the guest's fd",
        }
        for r in over:
            p(f"- **{r['benchmark'][3:]}**: {r['round_trips_per_trapped_call']:.2f} round trips: "
              + why.get(r["benchmark"], "a path walk and host calls besides the round trip "
                        "(see bench/README.md, \"Where a trapped call's time goes\")") + ".")
        p("")
        p("Beyond each call's own work, the machine's load makes every round trip dearer than "
          "the floor measured alone: a trapped call needs the sentry's thread scheduled, and "
          "on a busy 2-CPU machine it often is not at once; a wake-up on the other CPU alone "
          "costs about ten floors on this VM (bench/README.md, \"The machine\"). The same "
          "calls measured on a quiet machine are 1.8-2.5 round trips (bench/README.md, "
          "\"Where a trapped call's time goes\").")
    p("")

    # Coverage.
    p("## Coverage by action")
    p("")
    total = sum(cov.get("by_action", {}).values())
    if total:
        p(f"Rows of `sentry syscalls --json` ({total} rows) by action:")
        p("")
        p("| action | rows |")
        p("| --- | --- |")
        for a, n in sorted(cov["by_action"].items(), key=lambda kv: -kv[1]):
            p(f"| {a} | {n} |")
        p("")
        if cov.get("by_detail"):
            p("In detail (a filtered native row is native when its argument filter passes, "
              "else the errno shown; sendto is native without an address, trapped with one):")
            p("")
            p("| action | rows |")
            p("| --- | --- |")
            for a, n in sorted(cov["by_detail"].items(), key=lambda kv: -kv[1]):
                p(f"| {a} | {n} |")
            p("")
        if tool:
            p(f"![syscall table rows by action]({img_rel}/coverage_by_action.svg)")
            p("")
    else:
        p("n/a: this binary has no `sentry syscalls --json`.")
        p("")
    # Results from before coverage.sh ran the conformance suite have no such key.
    conf = cov.get("conformance")
    if conf is not None:
        p("## Coverage by conformance cases")
        p("")
        if conf.get("available") and conf.get("tables"):
            p(f"The {conf['cases']} cases of tests/conformance, run natively and under sentry "
              "in this run (tests/conformance/coverage.py: a census counts each case's calls "
              "apart; the table without namespaces is tied to a run under `--no-namespaces`). "
              "A row is covered when at least one case calls it and every case that calls it "
              "passes in both runs; docs/syscalls.md lists the cases of each row.")
            p("")
            p("| table | trapped and traced rows | covered | not covered |")
            p("| --- | --- | --- | --- |")
            for t in conf["tables"]:
                missing = ", ".join(t["uncovered"]) if t["uncovered"] else "none"
                p(f"| {t['table']} | {t['trapped']} | {t['covered']} | {missing} |")
            p("")
        else:
            p("n/a: tests/conformance/coverage.py did not run (see the raw output's "
              "conformance.err).")
            p("")
    text = "\n".join(L)
    if check:
        try:
            with open(out_md) as f:
                same = f.read() == text
        except OSError:
            same = False
        if not same:
            print(f"{out_md} differs from what {results} renders: rerun "
                  f"render_benchmarks.py render {results} {out_md} {img}", file=sys.stderr)
            sys.exit(1)
        return
    with open(out_md, "w") as f:
        f.write(text)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "collect":
        collect(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 5 and sys.argv[1] == "render":
        render(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) == 6 and sys.argv[1] == "render" and sys.argv[5] == "--check":
        render(sys.argv[2], sys.argv[3], sys.argv[4], check=True)
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
