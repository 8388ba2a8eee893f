#!/usr/bin/python3
# suite: quiet  (tests/run.sh: its "no speed tier" check compares the owner's
# NumPy time with the port's in the simulator; beside the pool on 2 cores a
# fresh-clone run timed NumPy 3.6x slower than the port that wraps it)
"""CI (no GPU, no CuPy): the pipeline lab (labs/pipeline, Lab 1.3.4) as far as
it runs without CuPy. What runs here:

  - the lab's files: lab.json loads in the runner (every grade below), the
    rubric's cases are the lab's, the handout states the pipeline and the
    tolerances that lab.py and the judge use, starter.py parses;
  - labs/build-lab.sh builds the Python-only lab with no nvcc (a judge
    script and the Python files it imports);
  - the judge (reference/pipeline/judge.py) on channels written here: right
    outputs pass, each kind of wrong output fails with its message (poison,
    NaN, float32 statistics, a wrong bucket, an empty key's mean), a bucket
    within the edge tolerance passes, a malformed channel is an error line
    and not a crash, the timing passes the owner's cpu_ms on and is flagged
    when the re-check fails;
  - the trusted owner in Numba's CUDA simulator with a host-round-trip port
    (tests/gpu/solutions-py/pipeline/host_roundtrip.py, NumPy behind the
    simulator's arrays): every case right, and in the timing run the NumPy
    baseline is timed before the student's module is imported;
  - the runner end to end (root, the real sandbox, CUGRADE_NO_GPU=1): that
    file graded with every correctness point, the owner's NumPy time used
    for speedup_vs_cpu; a .cu file refused with the lab's message.

What does NOT run here: CuPy. The CuPy ports and the speed tiers (>= 10x)
are verified only on a GPU (make test-gpu, tests/gpu/python_smoke.sh).
Prints TAP lines."""
import functools, json, os, shutil, subprocess, sys, tempfile, threading, time
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import ROOT, RUNNER, failures, ok as suite_ok  # noqa: E402  (paths, TAP)
ok = functools.partial(suite_ok, lines=None, chars=2500)  # a failure prints 2500 characters of its detail
sys.path[:0] = [os.path.join(ROOT, "labs/common/py"), os.path.join(ROOT, "labs/pipeline")]
import gen  # noqa: E402
import pipeline_numpy as P  # noqa: E402
SEED = "00c0ffee5eed1234"
PY = "/usr/bin/python3"
SOL = os.path.join(ROOT, "tests/gpu/solutions-py/pipeline")


LAB = {}
exec(compile(open(os.path.join(ROOT, "labs/pipeline/lab.py")).read(), "lab.py", "exec"), LAB)
DOC = json.load(open(os.path.join(ROOT, "labs/pipeline/lab.json")))
CASES = {c["name"]: c["params"] for c in DOC["cases"]}

# ---------------------------------------------------------------- the lab's files
rub = json.load(open(os.path.join(ROOT, "rubrics/pipeline.json")))
ok(DOC["language"] == "python" and DOC["timing_case"] in CASES and
   CASES[DOC["timing_case"]]["n"] >= 1000000 and DOC["baselines"] == [],
   "lab.json: Python only, the timed case has at least 1M rows, no cached baselines", DOC)
ok([c["case"] for c in rub["correctness"]] == list(CASES) and
   rub["speed"][0]["metric"] == "speedup_vs_cpu" and rub["speed"][0]["tiers"][0]["threshold"] == 10,
   "the rubric lists every case and its top speed tier is 10x NumPy", rub)
readme = open(os.path.join(ROOT, "labs/pipeline/README.md")).read()
src = open(os.path.join(ROOT, "labs/pipeline/pipeline_numpy.py")).read()
body = src[src.index("def pipeline"):].split("\n", 1)[1]
body = "\n".join(l for l in body.splitlines() if not l.lstrip().startswith('"""') and "Returns (" not in l
                 and "the lab's outputs" not in l)
ok(all(l.strip() in readme for l in body.splitlines() if l.strip()),
   "the handout writes out pipeline_numpy.py's code line for line", body)
ok("<= 1e-5" in readme and LAB["COLS_ATOL"] == 1e-5 and LAB["MEANS_ATOL"] == 1e-5 and
   "within 1e-5 of a whole number" in readme and LAB["EDGE"] == 1e-5,
   "the handout's tolerances are lab.py's", (LAB["COLS_ATOL"], LAB["MEANS_ATOL"], LAB["EDGE"]))
ok(all(("| %d | " % j) in readme for j in range(8)) and "1048576 (2^20) | 8" in readme,
   "the handout's column table is there (offset 2^20, scale 8 for column 6)", "")
p = subprocess.run([PY, "-c", "import ast,sys; ast.parse(open(sys.argv[1]).read())",
                    os.path.join(ROOT, "labs/pipeline/starter.py")], capture_output=True, text=True)
ok(p.returncode == 0, "starter.py parses", p.stderr)

# ---------------------------------------------------------------- build-lab.sh
tmp = tempfile.mkdtemp(prefix="cugrade-pipe-")
os.chmod(tmp, 0o755)
out = os.path.join(tmp, "built")
p = subprocess.run(["sh", os.path.join(ROOT, "labs/build-lab.sh"), "pipeline", out, "sm_90"],
                   capture_output=True, text=True, env=dict(os.environ, NVCC="/nonexistent/nvcc",
                                                             PYTHON=PY))
ok(p.returncode == 0 and os.access(os.path.join(out, "judge"), os.X_OK) and
   all(os.path.isfile(os.path.join(out, "py", f)) for f in ("gen.py", "lab.py", "lab.json", "pipeline_numpy.py")) and
   not os.path.exists(os.path.join(out, "harness.o")),
   "build-lab.sh builds the Python-only lab without nvcc: judge + its Python files, no harness",
   p.stderr)
JUDGE = os.path.join(out, "judge")

# ---------------------------------------------------------------- the judge
def inputs(case, seed=SEED):
    n = CASES[case]["n"]
    cs = gen.case_seed(gen.seed_parse_wide(seed), case)
    return (LAB["f32_features"](np, gen.stream(cs, 0), 0, n * 8).reshape(n, 8),
            gen.generate(np, "i32_keys", gen.stream(cs, 1), 0, n, CASES[case], LAB["i32_keys"]))


def right(case, seed=SEED):
    x, key = inputs(case, seed)
    c, b, m = P.pipeline(np, x, key)
    return c.astype(np.float32), b.astype(np.int32), m.astype(np.float32)


def rec(case, outs, **extra):
    c, b, m = outs
    payload = c.tobytes() + b.tobytes() + m.tobytes()
    n = CASES[case.split("@")[0]]["n"]
    r = {"type": "case", "name": case, "status": "ok", "dtype": "mixed", "count": 2 * n * 8 + 512,
         "outputs": [{"name": "cols", "dtype": "float32", "count": n * 8},
                     {"name": "buckets", "dtype": "int32", "count": n * 8},
                     {"name": "means", "dtype": "float32", "count": 512}],
         "bytes": len(payload), "inputs_modified": False, "modified_count": 0, "oob_writes": 0}
    r.update(extra)
    return json.dumps(r).encode() + b"\n" + payload


DEV = json.dumps({"type": "device", "name": "Numba CUDA simulator", "cc": "0.0"}).encode() + b"\n"
DONE = b'{"type":"done"}\n'


def judge(chan, cases=None, seed=SEED):
    f = os.path.join(tmp, "chan")
    open(f, "wb").write(chan)
    args = [JUDGE, "--seed", seed, "--channel", f] + (["--cases", cases] if cases else [])
    p = subprocess.run(args, capture_output=True, text=True, timeout=300)
    try:
        return json.loads(p.stdout), p
    except ValueError:
        return {}, p


def one(case, outs):
    d, p = judge(DEV + rec(case, outs) + DONE, case)
    c = (d.get("cases") or [{}])[0]
    return c, (d, p.stderr)


c, why = one("1000", right("1000"))
ok(c.get("passed") and c["max_abs_err"] < 1e-7, "judge: the pipeline's own outputs pass (1000 rows)", why)
c, why = one("1", right("1"))
ok(c.get("passed"), "judge: one row (every column constant, sd 0 -> 1) passes", why)

cols, b, m = right("1000")
x, key = inputs("1000")
xs = x.astype(np.float32)
mu32, sd32 = xs.mean(0), xs.std(0)
c32 = np.clip((xs - mu32) / sd32, -4, 4)
bad = (np.sign(c32) * np.log1p(np.abs(c32))).astype(np.float32)
c, why = one("1000", (bad, b, m))
ok(not c.get("passed") and "large offsets" in c.get("message", "") and "float64" in c["message"],
   "judge: float32 statistics fail cols with the float64 hint", (c, why))

# A port whose std divides by n - 1 (ddof=1): the judge says so, and the
# hint catalogue (runner/feedback/hint.c std-ddof) keys on its "ddof=1".
x64 = x.astype(np.float64)
zd = np.clip((x64 - x64.mean(0)) / x64.std(0, ddof=1), -4, 4)
c, why = one("1000", ((np.sign(zd) * np.log1p(np.abs(zd))).astype(np.float32), b, m))
ok(not c.get("passed") and "ddof=1" in c.get("message", "") and "large offsets" not in c["message"],
   "judge: a std with ddof=1 fails case 1000 and is named (ddof=1, divided by n - 1)", (c, why))
c, why = one("1000", (bad, b, m))
ok("ddof" not in c.get("message", ""), "judge: ...float32 statistics are not called ddof=1", c)

p2 = cols.copy()
p2.view(np.uint32).reshape(-1)[5 * 8 + 3] = 0x7FDEADED
c, why = one("1000", (p2, b, m))
ok(not c.get("passed") and c.get("unwritten") == 1 and "cols[5, 3] was never written" in c.get("message", ""),
   "judge: a poisoned element is 'never written', by row and column", c)
p3 = cols.copy()
p3[7, 1] = np.nan
c, why = one("1000", (p3, b, m))
ok(not c.get("passed") and "cols[7, 1] is NaN" in c.get("message", ""), "judge: a NaN fails", c)
c, why = one("1", (np.full((1, 8), np.nan, np.float32), right("1")[1], right("1")[2]))
ok(not c.get("passed") and "constant" in c.get("message", ""),
   "judge: NaN for one row says the column is constant (std 0)", c)

b2 = b.copy()
t = (np.clip((x.astype(np.float64) - x.astype(np.float64).mean(0)) / x.astype(np.float64).std(0), -4, 4) + 4) * 2
frac = np.abs(t - np.rint(t))
i_far = np.unravel_index(np.argmax(frac), frac.shape)
b2[i_far] = (b2[i_far] + 1) % 16
c, why = one("1000", (cols, b2, m))
ok(not c.get("passed") and ("buckets[%d, %d]" % i_far) in c.get("message", ""),
   "judge: a wrong bucket fails, by row and column", c)
x1, key1 = inputs("65537")
t1 = (np.clip((x1.astype(np.float64) - x1.astype(np.float64).mean(0)) / x1.astype(np.float64).std(0), -4, 4) + 4) * 2
near = np.argwhere((np.abs(t1 - np.rint(t1)) < 1e-5) & (t1 > 1e-5) & (t1 < 16 - 1e-5))
if len(near):
    cc, bb, mm = right("65537")
    r_, j_ = near[0]
    edge = int(np.rint(t1[r_, j_]))
    bb = bb.copy()
    bb[r_, j_] = edge - 1 if bb[r_, j_] == edge else edge   # the other side of the edge
    c, why = one("65537", (cc, bb, mm))
    ok(c.get("passed"), "judge: a bucket on the other side of an edge within 1e-5 passes", (c, near[:3]))
else:
    ok(True, "judge: edge case # SKIP no value within 1e-5 of a bucket edge in case 65537")

m2 = m.copy()
m2[3, 2] += 1e-3
c, why = one("1000", (cols, b, m2))
ok(not c.get("passed") and "means[3, 2]" in c.get("message", "") and "key 3 has" in c["message"],
   "judge: a wrong group mean fails, naming the key and its rows", c)
cc, bb, mm = right("1")
mm = mm.copy()
empty = [k for k in range(64) if k != int(inputs("1")[1][0])][0]
mm[empty] = np.nan
c, why = one("1", (cc, bb, mm))
ok(not c.get("passed") and "a key with no rows has mean 0" in c.get("message", ""),
   "judge: NaN for an empty key says its mean is 0", c)

c, why = one("1000", right("1", ))
ok(not c.get("passed") and ("wrong size" in c.get("message", "") or "describe" in c.get("message", "")),
   "judge: a record of the wrong size fails the case", c)
d, p = judge(DEV + b'{"type":"case","name":"1000","status":"ok","bytes":99999999}\nxx', "1000")
ok(p.returncode == 0 and d.get("errors") and not d["cases"][0]["passed"],
   "judge: a payload running past the channel's end is an error, not a crash", (d, p.stderr[-800:]))
d, p = judge(DEV + b'{"type":"case",,}\n' + DONE, "1000")
ok(p.returncode == 0 and "malformed" in " ".join(d.get("errors", [])) and not d["cases"][0]["passed"],
   "judge: a malformed record is an error line", (d, p.stderr[-800:]))
d, p = judge(DEV + json.dumps({"type": "case", "name": "1000", "status": "runtime_error",
                                "error_name": "python_exception", "error": "ValueError: boom",
                                "cause": "k.py line 3 in pipeline: x", "fatal": False}).encode() + b"\n" + DONE, "1000")
ok("your code raised ValueError: boom (at k.py line 3" in d["cases"][0]["message"],
   "judge: the student's exception is the case's message", d)

s2 = "%016x" % gen.recheck_seed(gen.seed_parse_wide(SEED))
TM = {"type": "timing", "name": "1000", "samples_ms": [2.0, 2.1, 1.9, 2.0], "median_ms": 2.0,
      "n": 4, "converged": False, "seed2": s2, "wrong_samples": 0, "timed_by": "owner",
      "cpu_ms": 50.0, "cpu_samples_ms": [50.0, 51.0, 49.0]}
d, p = judge(DEV + json.dumps(TM).encode() + b"\n" + rec("1000@recheck", right("1000", s2)) + DONE)
t = d.get("timing") or {}
ok(t.get("recheck_passed") and not t.get("flagged") and t.get("cpu_ms") == 50.0 and
   abs(t.get("speedup_vs_cpu", 0) - 25.0) < 1e-9 and t.get("median_ms") == 2.0,
   "judge: the timing passes the owner's cpu_ms on (speedup 50 / 2 = 25), re-check on seed2 passes",
   (t, p.stderr[-800:]))
d, p = judge(DEV + json.dumps(TM).encode() + b"\n" + rec("1000@recheck", right("1000")) + DONE)
t = d.get("timing") or {}
ok(not t.get("recheck_passed") and t.get("flagged") and "re-check" in t.get("flag_reason", ""),
   "judge: a re-check answered with the run seed's outputs (a cached answer) is flagged", t)

# The session (judge --serve): it asks for the job's seed ("ready
# prepare"), takes "prepare --seed S" without an answer, and its verdicts are
# the one-shot judge's: the check's cases and the timed case's re-check,
# made ahead on the prepared seed, and a sanitizer's channel on another seed.
chan_check = DEV + rec("1000", right("1000")) + rec("65537", right("65537")) + DONE
chan_time = DEV + json.dumps(TM).encode() + b"\n" + rec("1000@recheck", right("1000", s2)) + DONE
chan_other = DEV + rec("1000", right("1000", "5eed")) + DONE
one_shot = []
for ch, sd in ((chan_check, SEED), (chan_time, SEED), (chan_other, "5eed")):
    one_shot.append(judge(ch, "1000", sd)[0])
sv = subprocess.Popen([JUDGE, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
first, got = sv.stdout.readline().strip(), []
try:
    sv.stdin.write("prepare\t--seed\t%s\t--cases\t1000,65537\n" % SEED)
    for k, (ch, sd) in enumerate(((chan_check, SEED), (chan_time, SEED), (chan_other, "5eed"))):
        f = os.path.join(tmp, "chan%d" % k)
        open(f, "wb").write(ch)
        sv.stdin.write("--seed\t%s\t--channel\t%s\t--cases\t1000\n" % (sd, f))
        sv.stdin.flush()
        got.append(json.loads(sv.stdout.readline() or "{}"))
    sv.stdin.close()
except (OSError, ValueError) as e:   # a judge that took "prepare" for a verdict's arguments
    got.append(repr(e))
sv.kill()
sv.wait(timeout=60)
ok(first == "ready prepare", "judge --serve: its first line asks for the seed ('ready prepare')", first)
ok(got == one_shot and all(c["passed"] for c in got[0]["cases"]) and got[1]["timing"]["recheck_passed"]
   and got[2]["cases"][0]["passed"],
   "judge --serve: after prepare, the check's, the re-check's and another seed's verdicts are the one-shot "
   "judge's", (got, one_shot))

# Prepared references are the ones handed out (in-process, the built judge.py):
# none is made again for the verdict, and each is handed out once.
JM = {"__name__": "judge_mod", "__file__": os.path.join(out, "judge.py")}
exec(compile(open(os.path.join(out, "judge.py")).read(), "judge.py", "exec"), JM)
if "Prepared" not in JM:
    ok(False, "judge: prepare makes every case's reference ahead (judge.py has no Prepared)", "")
else:
    # the cases up to 65537 rows, timed on 65537 (the bigger ones cost CI 7 s)
    JM["CASES"] = {k: v for k, v in JM["CASES"].items() if v["n"] <= 65537}
    JM["DOC"] = dict(JM["DOC"], timing_case="65537")
    pr = JM["Prepared"]()
    sw = gen.seed_parse_wide(SEED)
    pr.start(sw)
    pr.join(timeout=300)
    cs65 = gen.case_seed(sw, "65537")
    csre = gen.case_seed(gen.recheck_seed(sw), "65537")
    made = {k for k, v in pr.slots.items() if v[1] is not None}
    ok({("65537", cs65), ("65537", csre)} <= made and len(made) == len(JM["CASES"]) + 1,
       "judge: prepare makes every case's reference and the timed case's re-check", sorted(made))
    real, calls = JM["reference"], []
    JM["reference"] = lambda *a: calls.append(a) or real(*a)
    x_, key_, rc_, rb_, rm_, near_ = pr.get("65537", CASES["65537"], cs65)
    ok(not calls and np.array_equal(rc_, P.pipeline(np, x_, key_)[0]) and pr.slots[("65537", cs65)][1] is None,
       "judge: the verdict takes the prepared reference (none made again) and it is dropped once handed out",
       calls)
    pr.get("65537", CASES["65537"], cs65)
    ok(len(calls) == 1, "judge: asked again, the same case is made afresh (each is handed out once)", calls)
    JM["reference"] = real
    pr3 = JM["Prepared"]()
    pr3.start(sw, ["1000"])
    pr3.join(timeout=300)
    ok(set(pr3.slots) == {("1000", gen.case_seed(sw, "1000")), ("65537", csre)},
       "judge: prepare with --cases makes those cases' references and the re-check only", sorted(pr3.slots))
    pr2 = JM["Prepared"]()
    pr2.seed, pr2.recheck = sw, ("65537", csre)
    pr2.judged(sw)   # the check's verdict is out before the thread gets going
    pr2._make([("1000", gen.case_seed(sw, "1000")), ("65537", csre)])
    ok(set(pr2.slots) == {("65537", csre)},
       "judge: once the check's verdict is out, only the re-check is still made", sorted(pr2.slots))
    # Two references at once: the biggest case is made beside the others,
    # not after them (a stand-in reference that takes 0.3 s and counts how
    # many run together).
    busy, peak, blk = [0], [0], threading.Lock()

    def slow_reference(*a):
        with blk:
            busy[0] += 1
            peak[0] = max(peak[0], busy[0])
        time.sleep(0.3)
        with blk:
            busy[0] -= 1
        return ("made",)
    JM["reference"] = slow_reference
    pr4 = JM["Prepared"]()
    t0 = time.monotonic()
    pr4.start(sw)
    pr4.join(timeout=60)
    took = time.monotonic() - t0
    made = [k for k, v in pr4.slots.items() if v[1] == ("made",)]
    ok(peak[0] == 2 and len(made) == len(JM["CASES"]) + 1,
       "judge: prepare makes two references at once (every case and the re-check made)",
       "peak %d, made %d, %.2f s" % (peak[0], len(made), took))
    pr5 = JM["Prepared"]()
    pr5.seed, pr5.recheck = sw, ("65537", csre)
    # the check's verdict comes out while the first reference is being made
    JM["reference"] = lambda *a: (None if pr5.checked else pr5.judged(sw)) or ("made",)
    pr5._make([("1000", gen.case_seed(sw, "1000")), ("65537", csre)])
    ok(pr5.slots[("1000", gen.case_seed(sw, "1000"))][1] is None and
       pr5.slots[("65537", csre)][1] == ("made",),
       "judge: a reference finished after the check's verdict came out without it is dropped, "
       "the re-check's kept", {k: v[1] for k, v in pr5.slots.items()})
    JM["reference"] = real

# ---------------------------------------------------------------- the owner (simulator)
def owner(mode, case, f, seed=SEED):
    chan = os.path.join(tmp, "ochan")
    args = ["--cases", case] if mode == "check" else ["--case", case, "--max-ms", "300"]
    with open(chan, "wb") as c:
        p = subprocess.run([PY, "-I", "-B", os.path.join(ROOT, "labs/common/py/owner.py"), "pipeline", mode]
                           + args + ["--file", f], pass_fds=(3,), preexec_fn=lambda: os.dup2(c.fileno(), 3),
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=600,
                           env=dict(os.environ, NUMBA_ENABLE_CUDASIM="1", CUGRADE_SEED=seed))
    return p, open(chan, "rb").read()


p, chan = owner("check", "1,1000,65537", os.path.join(SOL, "host_roundtrip.py"))
d, jp = judge(chan, "1,1000,65537")
ok(p.returncode == 0 and d.get("complete") and len(d["cases"]) == 3 and all(c["passed"] for c in d["cases"]),
   "owner (simulator) + judge: host_roundtrip.py passes cases 1, 1000, 65537",
   (d, p.stderr.decode()[-1500:], jp.stderr[-800:]))
recs = [json.loads(l) for l in chan.split(b"\n") if l.startswith(b'{"type": "case"') or l.startswith(b'{"type":"case"')]
ok(recs and all(r.get("dtype") == "mixed" and [o["name"] for o in r["outputs"]] == ["cols", "buckets", "means"]
               for r in recs), "owner: a case record carries the three outputs, described", recs[:1])

# bincount without minlength=64 (tests/gpu/solutions-py/pipeline/
# groupby_minlength.py, in NumPy here) has max(key) + 1 bins, and its
# (k, 8) sums go into means (64, 8): a shape error, except for k == 1,
# which NumPy and CuPy broadcast to every row. Case "1" (one row) draws its
# key from 0..31 (lab.json "keys": 32), so k < 64 every time; but when that
# key is 0 the broadcast row is the right answer for every group (one row:
# sd = 0, every column 0), and the bug passed case "1" in 1 grade of 32: a
# wrong file graded 100/100 in a burst of 100 on the H200 (2026-12-02).
# Case "1000" draws its keys from 0..31 too: k == 32 but for a seed whose
# thousand keys are all 0 ((1/32)^1000), so the bug fails it whatever the seed.
def case1_key(seed):
    return int(inputs("1", seed)[1][0])


zero = next((s for s in ("%016x" % (0xc0ffee0000 + i) for i in range(4096)) if case1_key(s) == 0), None)
keys1000 = inputs("1000", zero or SEED)[1]
ok(zero is not None and CASES["1"].get("keys") == 32 and CASES["1000"].get("keys") == 32 and
   int(keys1000.max()) == 31 and len(np.unique(keys1000)) == 32,
   "cases 1 and 1000 draw their keys from 0..31 (a seed whose case-1 key is 0: %s)" % zero,
   (CASES["1"], CASES["1000"], zero, np.unique(keys1000)))
cols1, _, means1 = right("1", zero or SEED)
key1 = inputs("1", zero or SEED)[1]
cnt = np.bincount(key1)
lucky = np.zeros((64, 8), np.float32)
lucky[...] = (np.stack([np.bincount(key1, weights=cols1[:, j]) for j in range(8)], axis=1)
              / np.maximum(cnt, 1)[:, None])   # groupby_minlength.py's lines, in NumPy
ok(len(cnt) == 1 and np.array_equal(lucky, means1),
   "why case 1 cannot catch it: with that seed the bug's broadcast row gives case 1's right means",
   (cnt, lucky[:2], means1[:2]))
mf = os.path.join(tmp, "minlength.py")
open(mf, "w").write(open(os.path.join(SOL, "host_roundtrip.py")).read().replace(", minlength=64", ""))
p, chan = owner("check", "1,1000", mf, seed=zero or SEED)
d, jp = judge(chan, "1,1000", seed=zero or SEED)
by = {c["name"]: c for c in d.get("cases") or []}
ok(p.returncode == 0 and "1000" in by and not by["1000"]["passed"],
   "owner (simulator) + judge: bincount without minlength fails case 1000 with that seed",
   (d, p.stderr.decode()[-1500:], jp.stderr[-800:]))

stamp = os.path.join(tmp, "imported-at")
LATE = ("import time\nopen(%r, 'w').write(repr(time.time()))\n" % stamp) + \
    open(os.path.join(SOL, "host_roundtrip.py")).read()
lf = os.path.join(tmp, "late.py")
open(lf, "w").write(LATE)
t0 = time.time()
p, chan = owner("time", "65537", lf)
d, jp = judge(chan)
t = d.get("timing") or {}
tm = [json.loads(l) for l in chan.split(b"\n") if b'"type":"timing"' in l or b'"type": "timing"' in l]
cpu = (tm[0].get("cpu_samples_ms") if tm else None) or []
imported = float(open(stamp).read()) if os.path.exists(stamp) else 0
ok(p.returncode == 0 and t.get("recheck_passed") and t.get("cpu_ms", 0) > 0 and len(cpu) >= 3 and
   tm[0].get("cpu_timed_by") == "owner" and tm[0].get("wrong_samples") == 0,
   "owner time: NumPy timed by the owner (cpu_ms, >= 3 samples), the port's samples right, re-check passed",
   (t, tm[:1], p.stderr.decode()[-1500:]))
ok(imported - t0 >= sum(cpu) / 1e3,
   "owner time: the student's module was imported only after the NumPy samples (%.2f s after the start, "
   "NumPy samples %.2f s)" % (imported - t0, sum(cpu) / 1e3), (imported, t0, cpu))

# ---------------------------------------------------------------- the runner
if os.geteuid() != 0 or not os.access(RUNNER, os.X_OK):
    ok(True, "runner: # SKIP needs root (the sandbox) and build/cugrade-runner")
else:
    root = os.path.join(tmp, "root")
    os.makedirs(os.path.join(root, "rubrics"))
    for d_ in ("labs/common", "labs/pipeline", "reference/pipeline"):
        shutil.copytree(os.path.join(ROOT, d_), os.path.join(root, d_))
    shutil.copy(os.path.join(ROOT, "labs/build-lab.sh"), os.path.join(root, "labs/build-lab.sh"))
    # The root's judge keeps each line the runner sends it (judge.h: the
    # seed comes first, as "prepare", before any verdict is asked for).
    jlog = os.path.join(tmp, "judge-stdin.log")
    jp = os.path.join(root, "reference/pipeline/judge.py")
    js_ = open(jp).read()
    assert "        for line in sys.stdin:\n" in js_
    open(jp, "w").write(js_.replace("        for line in sys.stdin:\n", "        for line in sys.stdin:\n"
                                    "            open(%r, 'a').write(line)\n" % jlog))
    # The simulator is slow: time case 65537 instead of 2^20, grade the small cases.
    lj = json.load(open(os.path.join(root, "labs/pipeline/lab.json")))
    for c_ in lj["cases"]:
        c_["timing"] = c_["name"] == "65537"
    lj["timing_case"] = "65537"
    json.dump(lj, open(os.path.join(root, "labs/pipeline/lab.json"), "w"))
    rb = dict(rub)
    rb["correctness"] = [c_ for c_ in rub["correctness"] if c_["case"] in ("1", "1000", "65537")]
    json.dump(rb, open(os.path.join(root, "rubrics/pipeline.json"), "w"))
    for dd, _, files in os.walk(tmp):
        os.chmod(dd, 0o755)
        for x_ in files:
            os.chmod(os.path.join(dd, x_), 0o755)

    def grade(path):
        env = dict(os.environ, CUGRADE_NO_GPU="1", CUGRADE_PYTHON=PY, PYTHON=PY)
        p = subprocess.run([RUNNER, "grade", "--root", root, "--lab", "pipeline", "--file", path,
                            "--cache", os.path.join(tmp, "cache"), "--work", os.path.join(tmp, "work"),
                            "--arch", "sm_90", "--seed", "0123456789abcdef0123456789abcdef"],
                           capture_output=True, text=True, timeout=900, env=env)
        try:
            return json.loads(p.stdout), p.stderr
        except ValueError:
            return {"status": "unparsable", "result": {}}, p.stderr + p.stdout

    f = os.path.join(tmp, "port.py")
    shutil.copy(os.path.join(SOL, "host_roundtrip.py"), f)
    os.chmod(f, 0o644)
    doc, err = grade(f)
    r = doc.get("result", {})
    cg = r.get("cugrade", {})
    cs = {c_["name"]: c_ for c_ in cg.get("cases", [])}
    ok(doc.get("status") == "graded" and set(cs) == {"1", "1000", "65537"} and all(c_["passed"] for c_ in cs.values()),
       "runner (simulator): host_roundtrip.py is graded, every case passed", str(doc)[:2000] + err[-2000:])
    tg = cg.get("timing") or {}
    sp = [s for s in cg.get("speed", []) if s.get("metric") == "speedup_vs_cpu"]
    ok(tg.get("cpu_ms") and tg.get("student_ms") and sp and sp[0].get("value") and
       abs(sp[0]["value"] - tg["cpu_ms"] / tg["student_ms"]) < 1e-6 * sp[0]["value"] + 1e-9,
       "runner: speedup_vs_cpu is the owner's NumPy time in this job over the port's median",
       (tg, sp, err[-1500:]))
    ok(r.get("score") == 25 and sp and sp[0].get("tier") in (None, "none", ""),
       "runner: 25 of 25 correctness points, no speed tier (a host round trip is not faster than NumPy)",
       (r.get("score"), r.get("max_score"), sp))
    sent = open(jlog).read().splitlines() if os.path.exists(jlog) else []
    ok(sent[:1] == ["prepare\t--seed\t0123456789abcdef0123456789abcdef\t--cases\t1,1000,65537"] and
       len(sent) >= 3 and
       all(l.startswith("--seed\t") for l in sent[1:]) and
       any(l.startswith("--seed\t0123456789abcdef0123456789abcdef\t") for l in sent[1:]),
       "runner: the judge session gets the job's seed and the rubric's cases first ('prepare'), then the "
       "check's and the timing's verdicts", sent)
    cu = os.path.join(tmp, "port.cu")
    open(cu, "w").write('extern "C" void pipeline() {}\n')
    os.chmod(cu, 0o644)
    doc, err = grade(cu)
    rej = doc.get("result", {}).get("cugrade", {}).get("rejection") or {}
    txt = json.dumps(doc)
    ok(doc.get("status") == "compile_error" and "takes a Python file (.py" in txt and not rej,
       "runner: a .cu file in the Python-only lab is refused before nvcc, with a message",
       str(doc)[:1500] + err[-800:])

shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if failures() else 0)
