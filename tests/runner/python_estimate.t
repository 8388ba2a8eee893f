#!/usr/bin/python3
"""CI: no cheap statistic predicts the reduction lab's answer on a timed case
within the judge's tolerance (docs/python.md, "Inputs no statistic
predicts"). For each timed case of labs/reduction/lab.json, on the inputs of
several seeds, estimators that read k of the n elements
(tests/runner/reduction_estimate.c, gen.cuh as host C: the very inputs
gen.py gives a Python submission, python_gen.t) are compared with the
judge's tolerance (gen_reduction_tolerance): n alone, n times the mean of k
elements, a model that clamps that mean to what the generator allows, and
an oracle told the case's true mean. No estimator may pass a whole timing
run (it misses on some seed) and the median miss must be wide (at least 10
tolerances). Prints the table the handout's numbers come from."""
import functools, json, os, statistics, subprocess, sys, tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import ROOT, failures, ok as suite_ok  # noqa: E402
ok = functools.partial(suite_ok, lines=None, chars=3000)
sys.path.insert(0, os.path.join(ROOT, "labs/common/py"))
import gen  # noqa: E402

tmp = tempfile.mkdtemp(prefix="cugrade-est-")
exe = os.path.join(tmp, "est")
p = subprocess.run([os.environ.get("CC", "cc"), "-std=c17", "-O2", "-I", os.path.join(ROOT, "labs/common"),
                    os.path.join(ROOT, "tests/runner/reduction_estimate.c"), "-o", exe, "-lm"],
                   capture_output=True, text=True)
ok(p.returncode == 0, "the estimators build (gen.cuh as host C)", p.stderr)

lab = json.load(open(os.environ.get("EST_LAB_JSON", os.path.join(ROOT, "labs/reduction/lab.json"))))
timed = [c for c in lab["cases"] if c.get("timing")]
ok(timed, "the lab has timed cases", lab["cases"])
# a check run's case, a timing run's samples, the re-check (its top bit flipped)
SEEDS = ["%032x" % (0x5EED0000 + 7919 * i) for i in range(6)] + \
        ["%032x" % (0x8000000000000000 + 104729 * i) for i in range(3)]
for c in timed:
    n, signs = c["params"]["n"], c["params"].get("signs", 1)
    rows = {}
    for s in SEEDS:
        st = gen.stream(gen.case_seed(gen.seed_parse_wide(s), c["name"]), 0)
        out = subprocess.run([exe, "%016x" % st, str(n), str(signs)], capture_output=True,
                             text=True).stdout
        for line in out.splitlines():
            name, k, err, tol = line.split()
            rows.setdefault((name, int(k)), []).append(abs(float(err)) / float(tol))
    print("# case %s (n = %d, signs %d): |error| / tolerance over %d seeds"
          % (c["name"], n, signs, len(SEEDS)))
    print("# %-7s %12s %10s %10s %10s %8s" % ("", "k", "min", "median", "max", "passed"))
    for (name, k), r in sorted(rows.items(), key=lambda x: (x[0][0], x[0][1])):
        print("# %-7s %12d %10.1f %10.1f %10.1f %5d/%d" % (name, k, min(r), statistics.median(r),
                                                          max(r), sum(v <= 1 for v in r), len(r)))
    ok(len(rows) >= 3 * 8, "case %s: every estimator ran (%d rows)" % (c["name"], len(rows)))
    for (name, k), r in sorted(rows.items()):
        ok(len(r) == len(SEEDS) and max(r) > 1 and statistics.median(r) >= 10,
           "case %s: the %s estimator reading %d of %d elements passes no timing run "
           "(it misses by %.0f tolerances at the median)" % (c["name"], name, k, n,
                                                              statistics.median(r)), r)
sys.exit(1 if failures() else 0)
