#!/usr/bin/env python3
"""One submission at a time on an idle service: the inner loop of issue 25
(a benchmark: prints a table, asserts nothing). Starts the service as
`make run` does (tests/bench/service.py: the server, `prepare` on every GPU,
one runner per GPU), then submits each file of FILES (space-separated
paths under tests/gpu/, LAB/FILE taken from the path) REPEAT times (default
2), one at a time: the next is sent when the previous one's verdict is in.
Default files: a CUDA and a Python reduction, a CUDA matmul, a Python
pipeline, a compile error in each language.

Prints per submission: the file, the round, its status and score, which of a Python
job's runs the runner's pool had started before the claim ("warm":
check+timing when a warm child took it, "-" when none: a lab's first Python
claim is always cold; docs/python.md "The warm pool"), submit-to-verdict
(polled every 20 ms), and each phase of the result document (`phases`,
seconds; the first columns are the ones issue 25's targets name), the steps
of each timing's exclusive hold where the result has them (`hold_s`), then
the median of each file's submit-to-verdict.

    sh tests/bench/alone_bench.sh             # on the GPU host, after make dist
    FILES="solutions/reduction/fast.cu" REPEAT=5 sh tests/bench/alone_bench.sh
"""
import json, os, statistics, sys, tempfile, time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
sys.path.insert(0, os.path.join(ROOT, "tests/bench"))
import service  # noqa: E402  (the service as make run starts it)
from service import e2e  # noqa: E402

DEFAULT = ("solutions/reduction/fast.cu solutions-py/reduction/fast_numba.py solutions/matmul/fast.cu "
           "solutions-py/pipeline/cupy_port.py solutions/matmul/syntax_error.cu "
           "solutions-py/reduction/syntax_error.py")
FILES = os.environ.get("FILES", DEFAULT).split()
REPEAT = int(os.environ.get("REPEAT", "2"))
WAIT = float(os.environ.get("BENCH_TIMEOUT", "300"))  # per submission
OUT = os.environ.get("OUT") or None
# Phases shown first (the rest follow, biggest first).
FIRST = ["front", "compile", "gpu_wait", "check_run", "judge", "sanitize_wait", "hold_wait", "time_start",
         "time_run", "time_baselines", "baselines", "profile"]


def wait_verdict(svc, sid):
    """(seconds from now to a final status, the submission) or (None, last seen)."""
    t_end = time.time() + WAIT
    sub = None
    while time.time() < t_end:
        sub = svc.get(sid)
        if sub and sub.get("status") in e2e.FINAL:
            return time.time(), sub
        time.sleep(0.02)
    return None, sub


def speed_line(t):
    """The timed metric as the grade saw it: value, its 95% interval and
    sample count (3 is the budget's minimum: docs/log/2026-12-02-sample-check.md),
    the baseline's median where it was co-timed, how often it was re-timed
    ("" when the job was not timed). Shows a tier threshold inside a lab's
    noise (docs/log/2026-12-02-flat-records.md) without a full test-gpu."""
    v = t.get("metric_value")
    if not isinstance(v, (int, float)):
        return ""
    out = f"{t.get('metric')} {v:.3f}"
    if isinstance(t.get("ci_low"), (int, float)) and isinstance(t.get("median_ms"), (int, float)):
        out += f", student {t['median_ms']:.3f} ms (CI {t['ci_low']:.3f}-{t.get('ci_high') or 0:.3f}"
        out += f", {t['samples']} samples)" if isinstance(t.get("samples"), int) else ")"
    refs = {k: x for k, x in (t.get("reference_ms") or {}).items() if isinstance(x, (int, float))}
    out += "".join(f", {k} {x:.3f} ms" for k, x in sorted(refs.items()))
    return out + f", re-timed {t.get('retimed') or 0}" + (", flagged" if t.get("flagged") else "")


def main():
    tmp = tempfile.mkdtemp(prefix="cugrade-alone-")
    os.chmod(tmp, 0o755)
    svc = service.Service(tmp, OUT or tmp)
    rows = []
    try:
        svc.start()
        tok = svc.students(1)[0]
        time.sleep(2)  # the runners up and idle
        for f in FILES:
            path = os.path.join(ROOT, "tests/gpu", f)
            lab = os.path.basename(os.path.dirname(path))
            for k in range(REPEAT):
                sid, t0 = svc.submit(tok, lab, path)
                if sid is None:
                    rows.append({"file": f, "round": k + 1, "status": "not accepted", "s": None, "phases": {},
                                 "hold": {}, "speed": "", "warm": "", "score": ""})
                    continue
                t1, sub = wait_verdict(svc, sid)
                cg = ((sub or {}).get("result") or {}).get("cugrade") or {}
                ph = cg.get("phases") or {}
                hs = cg.get("hold_s")
                tm = cg.get("timing") if isinstance(cg.get("timing"), dict) else {}
                pts = [(sub or {}).get("score"), (sub or {}).get("max_score")]
                rows.append({"file": f, "round": k + 1, "status": (sub or {}).get("status", "?"),
                             "score": "/".join("%g" % x for x in pts) if all(
                                 isinstance(x, (int, float)) for x in pts) else "",
                             "s": (t1 - t0) if t1 else None, "phases": ph if isinstance(ph, dict) else {},
                             "hold": hs if isinstance(hs, dict) else {}, "speed": speed_line(tm),
                             "warm": "+".join(cg.get("warm_runs") or []) or
                             ("-" if "warm_runs" in cg else "")})
                e2e.log(f"{f} #{k + 1}: {rows[-1]['status']} in "
                        f"{rows[-1]['s'] if rows[-1]['s'] is not None else float('nan'):.2f} s")
    finally:
        svc.stop()
    if OUT:
        with open(os.path.join(OUT, "alone.json"), "w") as fo:
            json.dump({"prepare_s": svc.prepare_s, "rows": rows}, fo, indent=1)
    seen = {k for r in rows for k, v in r["phases"].items() if isinstance(v, (int, float)) and k != "total"}
    cols = [c for c in FIRST if c in seen] + sorted(seen - set(FIRST),
                                                    key=lambda c: -max(r["phases"].get(c) or 0 for r in rows))
    head = ["file", "#", "status", "score", "warm", "verdict_s"] + cols
    table = [[r["file"], str(r["round"]), r["status"], r["score"], r["warm"],
              "%.2f" % r["s"] if r["s"] is not None else "-"] +
             ["%.2f" % r["phases"][c] if isinstance(r["phases"].get(c), (int, float)) else "" for c in cols]
             for r in rows]
    w = [max(len(h), *(len(t[i]) for t in table)) if table else len(h) for i, h in enumerate(head)]
    print(f"\nalone_bench: {svc.ngpus} GPU(s), prepare {svc.prepare_s:.0f} s, {REPEAT} round(s) per file")
    print(" | ".join(h.ljust(w[i]) for i, h in enumerate(head)))
    print("-+-".join("-" * x for x in w))
    for t in table:
        print(" | ".join(v.ljust(w[i]) for i, v in enumerate(t)))
    held = [r for r in rows if r["hold"]]
    if held:  # where the timing's exclusive hold went (cugrade.hold_s: Python owners)
        print("\nthe exclusive hold's steps (cugrade.hold_s), s:")
        for r in held:
            print(f"  {r['file']} #{r['round']}: " + ", ".join(f"{k} {v:.3f}" for k, v in r["hold"].items()))
    timed = [r for r in rows if r["speed"]]
    if timed:  # the graded speed metric (its noise across rounds decides tiers)
        print("\nthe timed metric per submission:")
        for r in timed:
            print(f"  {r['file']} #{r['round']}: {r['speed']}")
    print("\nmedian submit-to-verdict per file:")
    for f in FILES:
        xs = [r["s"] for r in rows if r["file"] == f and r["s"] is not None]
        print(f"  {f}: {statistics.median(xs):.2f} s (n={len(xs)})" if xs else f"  {f}: no verdict")
    return 0


if __name__ == "__main__":
    sys.exit(main())
