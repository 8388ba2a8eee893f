#!/usr/bin/env python3
"""CI (no GPU): the profiling lab's speed tiers against what the lab's
solutions measured on a GPU host (tests/labs/profiling_speed.json, made with
tests/bench/profiling_noise.py, alone_bench and make test-gpu).

The speed-up of a loop bound by PyTorch's launch cost on the host moves
about 10% from run to run, so a threshold inside a solution's range decides
its tier by chance: the best solution once got 25 of 40 speed points and
the half-done one 10, 25 or 40 (docs/log/2026-12-02-profiling-tiers.md).
The rules, for the speedup_vs_naive line of rubrics/profiling.json:

  - a file meant to earn the top tier measured at or above its threshold
    in every run (noise never takes a deserved tier away);
  - a file meant to earn none has its median below the lowest threshold
    (the tier still separates the kinds of loop);
  - every measured file exists, and each kind has at least 3 runs.

Prints TAP lines."""
import json
import os
import statistics

ROOT = os.environ.get("CUGRADE_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
RUBRIC = os.environ.get("PROFILING_RUBRIC") or os.path.join(ROOT, "rubrics/profiling.json")

n = 0
failed = 0


def check(ok, what):
    global n, failed
    n += 1
    failed += not ok
    print("%sok %d - %s" % ("" if ok else "not ", n, what))


with open(os.path.join(ROOT, "tests/labs/profiling_speed.json")) as f:
    data = json.load(f)
with open(RUBRIC) as f:
    rubric = json.load(f)
lines = [s for s in rubric["speed"] if s["metric"] == "speedup_vs_naive"]
check(len(lines) == 1, "the rubric has one speedup_vs_naive line")
tiers = sorted(lines[0]["tiers"], key=lambda t: -t["threshold"]) if lines else []
check(len(tiers) >= 1, "the line has tiers")

for path, d in sorted(data["files"].items()):
    runs = [x for k, v in d.items() if k != "earns" for x in v]
    check(os.path.isfile(os.path.join(ROOT, path)), "%s exists" % path)
    check(len(runs) >= 3, "%s: %d measured runs" % (path, len(runs)))
    if not runs or not tiers:
        continue
    lo, med = min(runs), statistics.median(runs)
    if d["earns"] == "top":
        top = tiers[0]
        check(lo >= top["threshold"],
              "%s earns %r (threshold %g) in every run: lowest %.3f" % (path, top["name"], top["threshold"], lo))
    else:
        low = tiers[-1]
        check(d["earns"] is None, "%s: earns is 'top' or null" % path)
        check(med < low["threshold"],
              "%s earns no tier: median %.3f below the lowest threshold %g" % (path, med, low["threshold"]))

print("1..%d" % n)
raise SystemExit(1 if failed else 0)
