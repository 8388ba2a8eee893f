"""reference/pipeline/judge.py - the pipeline lab's trusted judge (docs/labs.md,
docs/python.md "The CuPy pipeline lab"). The lab has no CUDA judge: its
reference is the NumPy pipeline itself (labs/pipeline/pipeline_numpy.py) in
float64 on this host's CPU, on the inputs regenerated from the seed with the
owner's generators (labs/pipeline/lab.py GEN, labs/common/py/gen.py).

    judge --seed S --channel F [--cases a,b] [--device D]     one verdict (JSON) on stdout
    judge --serve                                             "ready prepare", then one verdict
                                                              per stdin line (tab-separated args)
                                                              and none for "prepare --seed S
                                                              [--cases a,b]"

Installed by labs/build-lab.sh into the lab's build directory beside a copy
of the Python files it needs (py/), with `judge` a wrapper that runs it with
the Python that has NumPy. Runs outside the sandbox; reads the channel as
hostile data (the owner writes it, but a bug of ours must not crash us into
a verdict): a malformed record is an error line, never an exception.

The verdict document is judge_common.cu's: {"lab","complete","fatal",
"device","cases":[{name,passed,max_abs_err,max_rel_err,first_bad_index,
unwritten,message}],"timing":{...}|null,"errors":[...]}; the timing object
also carries cpu_ms (the owner's NumPy time, from the channel), which the
runner uses for speedup_vs_cpu.
"""
import json
import math
import os
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
for d in (os.path.join(HERE, "py"),                                  # the built lab
          os.path.join(HERE, "..", "..", "labs", "common", "py"),   # the source tree
          os.path.join(HERE, "..", "..", "labs", "pipeline")):
    if os.path.isdir(d):
        sys.path.insert(0, d)
from owner_tenant import one_blas_thread  # noqa: E402
one_blas_thread()   # before NumPy's import: its BLAS threads would spin at its start, unused here
import numpy as np  # noqa: E402
import gen  # noqa: E402
import pipeline_numpy as P  # noqa: E402

POISON = 0x7FDEADED
MAX_CHANNEL = 1 << 31
MAX_BANDWIDTH_SHARE = 1.5


def lab_files():
    """lab.json and lab.py: beside us in the build (py/), else the tree."""
    for d in (os.path.join(HERE, "py"), os.path.join(HERE, "..", "..", "labs", "pipeline")):
        if os.path.isfile(os.path.join(d, "lab.json")):
            with open(os.path.join(d, "lab.json")) as f:
                doc = json.load(f)
            ns = {}
            with open(os.path.join(d, "lab.py")) as f:
                exec(compile(f.read(), os.path.join(d, "lab.py"), "exec"), ns)
            return doc, ns
    raise SystemExit("judge: no lab.json")


DOC, LAB = lab_files()
CASES = {c["name"]: c["params"] for c in DOC["cases"]}
NC, NK = LAB["NCOLS"], LAB["NKEYS"]


def inputs(params, cs):
    """The case's inputs as the owner made them (gen.generate: a chunk at a
    time, 7 s less than whole arrays for the 3000017-row case)."""
    n = params["n"]
    x = gen.generate(np, "f32_features", gen.stream(cs, 0), 0, n * NC, params,
                     LAB["f32_features"]).reshape(n, NC)
    key = gen.generate(np, "i32_keys", gen.stream(cs, 1), 0, n, params, LAB["i32_keys"])
    return x, key


def fin(v):
    return float(v) if v is not None and math.isfinite(v) else None


def result(passed, message, abs_err=None, rel_err=None, bad=-1, unwritten=0):
    return {"passed": bool(passed), "max_abs_err": fin(abs_err), "max_rel_err": fin(rel_err),
            "first_bad_index": int(bad), "unwritten": int(unwritten), "message": message}


def split_payload(rec, payload, n):
    """The three outputs from a case record's payload (owner.py Case.record),
    or a sentence saying why not."""
    want = [("cols", "float32", n * NC), ("buckets", "int32", n * NC), ("means", "float32", NK * NC)]
    desc = rec.get("outputs")
    if rec.get("dtype") != "mixed" or not isinstance(desc, list) or len(desc) != 3 or \
            [(d.get("name"), d.get("dtype"), d.get("count")) for d in desc if isinstance(d, dict)] != want:
        return None, "the channel record of this case does not describe the lab's three outputs"
    if len(payload) != 4 * sum(w[2] for w in want):
        return None, "the channel record of this case has the wrong size"
    out, pos = {}, 0
    for name, dt, cnt in want:
        out[name] = np.frombuffer(payload, dtype=dt, count=cnt, offset=pos)
        pos += 4 * cnt
    return out, None


COL_HINT = {2: "offset 65536", 4: "offset 250000", 6: "offset 2^20"}


def sample_std_cols(x):
    """The columns a port computes with the sample std (ddof=1, divided by
    n - 1) instead of the population one: a common slip whose error shrinks
    with n (a factor sqrt(n / (n - 1))), so only the small cases fail. None
    for one row (ddof=1 has no std there)."""
    n = x.shape[0]
    if n < 2:
        return None
    x64 = x.astype(np.float64)
    sd = x64.std(axis=0, ddof=1)
    sd = np.where(sd > 0, sd, 1.0)
    c = np.clip((x64 - x64.mean(axis=0)) / sd, -P.CLIP, P.CLIP)
    return np.sign(c) * np.log1p(np.abs(c))


def reference(params, cs):
    """A case's inputs and what the float64 NumPy pipeline makes of them:
    (x, key, cols, buckets, means, near the bucket edge)."""
    x, key = inputs(params, cs)
    rc, rb, rm = P.pipeline(np, x, key)
    return x, key, rc, rb, rm, LAB["_near_edge"](np, x)


# Threads that make the prepared references. Two: the biggest case (3000017
# rows, about 60% of the NumPy work) is made beside the others instead of
# after them, so a warm check run (2.4 s on an H200) no longer waits for the
# sum (its verdict waited 1.9-3.1 s in alone_bench, 2026-12-02). More would
# not help: the biggest case is one reference. NumPy's array work lets go of
# the GIL, so the two run at once (about 1.5x on this lab's two biggest cases
# on a 2-core CI machine); the CPU spent is the same.
PREPARE_WORKERS = 2


class Prepared:
    """References made ahead. The runner's session sends "prepare --seed S"
    (the job's seed) as it starts, before the check run; PREPARE_WORKERS
    threads then make every case's reference, taking them small cases
    first, and the timed case's re-check's, while the student's code runs:
    the verdict waits for the comparisons, not for NumPy (5.6 s of a CuPy
    port's 15-18 s alone on an H200). A reference the verdict wants first is
    made there and the threads skip it; one a thread is making is waited
    for; each is handed out once, then dropped (a job's channels name each
    case once). A thread that fails leaves its case to the verdict."""

    def __init__(self):
        self.lock = threading.Lock()
        self.slots = {}   # (case, case seed) -> [made (Event), reference or None]
        self.seed, self.recheck, self.checked = None, None, False
        self.threads = []

    def _claim(self, k):
        with self.lock:
            if k in self.slots:
                return None
            slot = self.slots[k] = [threading.Event(), None]
            return slot

    def start(self, seed, cases=None):
        """Make the references of seed's cases (those named, else every
        one) and of the timed case's re-check, in PREPARE_WORKERS threads
        taking them in that order."""
        keys = [(n, gen.case_seed(seed, n)) for n in sorted(CASES, key=lambda n: CASES[n]["n"])
                if cases is None or n in cases]
        self.seed, self.recheck = seed, (DOC["timing_case"], gen.case_seed(gen.recheck_seed(seed),
                                                                          DOC["timing_case"]))
        keys.append(self.recheck)
        todo = iter(keys)   # shared: each key is taken by one thread (under the lock)
        self.threads = [threading.Thread(target=self._make, args=(todo,), daemon=True)
                        for _ in range(PREPARE_WORKERS)]
        for t in self.threads:
            t.start()

    def join(self, timeout=None):
        """Wait for the threads (tests)."""
        for t in self.threads:
            t.join(timeout)

    def judged(self, seed):
        """A verdict on the prepared seed is out: every case it needed was
        made or waited for, so only the re-check is still worth making (a
        run that stopped early leaves the rest unjudged: no CPU for them)."""
        if seed == self.seed:
            self.checked = True
            with self.lock:
                for k, slot in self.slots.items():
                    if k != self.recheck and slot[0].is_set():
                        slot[1] = None   # made for a case the run never reached

    def _make(self, keys):
        keys = iter(keys)
        while True:
            with self.lock:
                k = next(keys, None)
            if k is None:
                return
            if self.checked and k != self.recheck:
                continue
            slot = self._claim(k)
            if slot is None:
                continue
            try:
                ref = reference(CASES[k[0]], k[1])
            except Exception:   # the verdict makes its own
                ref = None
            with self.lock:
                # made while the check's verdict came out without it (a
                # run that stopped early): dropped, as judged() drops those
                # made before
                slot[1] = None if self.checked and k != self.recheck else ref
            slot[0].set()

    def get(self, name, params, cs):
        k = (name, cs)
        slot = self._claim(k)
        if slot is None:
            with self.lock:
                slot = self.slots[k]
            slot[0].wait()
        else:   # not prepared: made here (the thread will skip it)
            try:
                slot[1] = reference(params, cs)
            finally:
                slot[0].set()
        with self.lock:
            ref, slot[1] = slot[1], None
        return ref if ref is not None else reference(params, cs)


PREPARED = Prepared()


def judge_case(name, params, cs, out):
    """Compare case name's outputs with the float64 NumPy pipeline (its
    reference prepared, or made here: Prepared.get)."""
    n = params["n"]
    x, key, rc, rb, rm, near = PREPARED.get(name, params, cs)
    cols = out["cols"].reshape(n, NC)
    buckets = out["buckets"].reshape(n, NC)
    means = out["means"].reshape(NK, NC)
    # Never written: the poison the owner put there before the call.
    for name, arr in (("cols", cols), ("buckets", buckets), ("means", means)):
        pois = arr.view(np.uint32) == POISON
        if pois.any():
            i = int(np.flatnonzero(pois.ravel())[0])
            return result(False, "%s[%d, %d] was never written (%d of its %d elements still "
                          "hold the harness's poison): write every element of %s"
                          % (name, i // NC, i % NC, int(pois.sum()), arr.size, name),
                          bad=i, unwritten=int(pois.sum()))
    c64 = cols.astype(np.float64)
    m64 = means.astype(np.float64)
    with np.errstate(invalid="ignore"):
        ec = np.abs(c64 - rc)
        em = np.abs(m64 - rm)
    ec_ = np.where(np.isnan(ec), np.inf, ec)
    em_ = np.where(np.isnan(em), np.inf, em)
    abs_err = max(float(ec_.max()) if ec_.size else 0.0, float(em_.max()) if em_.size else 0.0)
    rel_err = abs_err / math.log(5.0)
    if not (ec_ <= LAB["COLS_ATOL"]).all():
        bad = np.flatnonzero((ec_ > LAB["COLS_ATOL"]).ravel())
        i = int(bad[0])
        r, j = i // NC, i % NC
        if np.isnan(c64[r, j]):
            m = "cols[%d, %d] is NaN but expected %.9g" % (r, j, rc[r, j])
            if n == 1 or np.ptp(x[:, j]) == 0:
                m += ": column %d is constant here, so its std is 0 (the pipeline then uses 1)" % j
            return result(False, m, abs_err, rel_err, i)
        m = "cols[%d, %d] = %.9g but expected %.9g (error %.3g > tolerance %g; %d of %d elements " \
            "are off)" % (r, j, c64[r, j], rc[r, j], ec_[r, j], LAB["COLS_ATOL"], bad.size, ec.size)
        badcols = sorted(set(int(b % NC) for b in bad))
        alt = sample_std_cols(x)
        if alt is not None and bool((np.abs(c64 - alt) <= LAB["COLS_ATOL"]).all()):
            # the hint catalogue (runner/feedback/hint.c, std-ddof) keys on "ddof=1"
            m += ": these are the columns of a std with ddof=1 (divided by n - 1); the " \
                 "pipeline's std is the population one (ddof=0, divided by n)"
        elif any(b in COL_HINT for b in badcols) and ec_[:, [0, 5]].max() <= LAB["COLS_ATOL"]:
            m += ": the wrong columns (%s) are those with large offsets (%s): compute the means, " \
                 "the std and x - mean in float64, not float32" % (
                     ", ".join(map(str, badcols)), ", ".join(COL_HINT[b] for b in badcols if b in COL_HINT))
        return result(False, m, abs_err, rel_err, i)
    d = buckets.astype(np.int64) - rb
    okb = (d == 0) | (near & (np.abs(d) == 1))
    if not okb.all():
        bad = np.flatnonzero(~okb.ravel())
        i = int(bad[0])
        r, j = i // NC, i % NC
        m = "buckets[%d, %d] = %d but expected %d (%d of %d are off): the bucket is " \
            "floor((c + 4) * 2) of the clipped value c, then clipped to 0..15" % (
                r, j, int(buckets[r, j]), int(rb[r, j]), bad.size, d.size)
        return result(False, m, abs_err, rel_err, n * NC + i)
    if not (em_ <= LAB["MEANS_ATOL"]).all():
        bad = np.flatnonzero((em_ > LAB["MEANS_ATOL"]).ravel())
        i = int(bad[0])
        k, j = i // NC, i % NC
        cnt = int((key == k).sum())
        m = "means[%d, %d] = %.9g but expected %.9g (error %.3g > tolerance %g; key %d has %d " \
            "rows)" % (k, j, m64[k, j], rm[k, j], em_[k, j], LAB["MEANS_ATOL"], k, cnt)
        if cnt == 0:
            m += ": a key with no rows has mean 0"
        return result(False, m, abs_err, rel_err, 2 * n * NC + i)
    return result(True, "", abs_err, rel_err)


def failed(rec):
    """A case whose call did not return normally: the owner's words."""
    st, en = rec.get("status"), rec.get("error_name")
    e1, e2 = str(rec.get("error", "unknown error"))[:300], str(rec.get("cause", ""))[:1500]
    if st == "runtime_error" and en == "python_exception":
        return "your code raised %s (at %s)" % (e1, e2)
    if st == "runtime_error" and en in ("python_process", "python_timing", "python_host"):
        return "%s: %s" % (e1, e2)
    if st == "runtime_error":
        return "your code failed: %s. %s" % (e1, e2)
    return "the harness reported an unknown status"


def read_channel(path, errors):
    """Records (with their payloads) from the channel, stopping at the first
    malformed one."""
    with open(path, "rb") as f:
        data = f.read(MAX_CHANNEL)
    pos, recs = 0, []
    while pos < len(data):
        nl = data.find(b"\n", pos)
        if nl < 0:
            errors.append("the channel ends in the middle of a record")
            break
        try:
            rec = json.loads(data[pos:nl])
        except ValueError:
            errors.append("a malformed record in the channel")
            break
        pos = nl + 1
        if not isinstance(rec, dict):
            errors.append("a record that is not an object")
            break
        nb = rec.get("bytes", 0) if rec.get("type") == "case" and rec.get("status") == "ok" else 0
        if not isinstance(nb, int) or nb < 0 or pos + nb > len(data):
            errors.append("a record's payload runs past the end of the channel")
            break
        recs.append((rec, data[pos:pos + nb]))
        pos += nb
    return recs


def case_result(rec, payload, seed, name):
    base = name.split("@")[0]
    params = CASES[base]
    s = gen.recheck_seed(seed) if name.endswith("@recheck") else seed
    if rec.get("status") != "ok":
        return result(False, failed(rec))
    out, why = split_payload(rec, payload, params["n"])
    if why:
        return result(False, why)
    r = judge_case(base, params, gen.case_seed(s, base), out)
    if rec.get("inputs_modified"):
        r.update(passed=False, message="your code modified its inputs (%d elements changed, "
                 "counting the area just past their ends): x and key are read-only"
                 % rec.get("modified_count", 1))
    elif rec.get("oob_writes", 0) > 0:
        r.update(passed=False, message="your code wrote %d values past the end of an output "
                 "buffer: check your bounds" % rec["oob_writes"])
    return r


def timing_doc(tm, recheck, seed, device):
    s = sorted(float(v) for v in tm.get("samples_ms") or [] if isinstance(v, (int, float)))
    n = len(s)
    if n == 0:
        return None
    med = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    lo = max(0, int(math.floor(n / 2 - 0.98 * math.sqrt(n))))
    hi = min(n - 1, int(math.ceil(n / 2 + 0.98 * math.sqrt(n))))
    rel = (s[hi] - s[lo]) / 2 / med if med > 0 else None
    nrows = CASES[tm["name"]]["n"]
    nbytes = 4.0 * nrows * NC + 4.0 * nrows + 4.0 * nrows * NC * 2 + 4.0 * NK * NC
    gbs = nbytes / (med * 1e-3) / 1e9 if med > 0 else None
    copy = (device or {}).get("copy_gbs") or 0
    share = gbs / copy if gbs and copy > 0 else None
    seed2_ok = tm.get("seed2") == "%016x" % gen.recheck_seed(seed)
    if recheck is None:
        recheck = result(False, "no re-check result: the program stopped after timing")
    elif not seed2_ok:
        recheck = dict(recheck, passed=False, message="the re-check used the wrong inputs")
    flagged, reason = False, ""
    if share is not None and share > MAX_BANDWIDTH_SHARE:
        flagged, reason = True, ("faster than the memory system allows: %.0f GB/s is %.2fx the "
                                 "copy bandwidth measured on this GPU" % (gbs, share))
    elif not recheck["passed"]:
        flagged, reason = True, ("the re-check on fresh inputs after timing failed: a cached or "
                                 "incomplete answer")
    cpu = tm.get("cpu_ms")
    cpu = float(cpu) if isinstance(cpu, (int, float)) and cpu > 0 else None
    return {"case": tm["name"], "median_ms": med, "rel_err": rel, "n": n,
            "converged": bool(tm.get("converged")), "event_median_ms": None, "bytes": nbytes,
            "flops": 0, "gbs": gbs, "gflops": 0, "bandwidth_share": share, "flops_share": None,
            "floor_ms": nbytes / (copy * 1e9) * 1e3 if copy > 0 else None,
            "recheck": dict(name=tm["name"] + "@recheck", **recheck),
            "recheck_passed": bool(recheck["passed"]), "flagged": flagged, "flag_reason": reason,
            "valid": not flagged, "samples_ms": [float(v) for v in tm["samples_ms"]],
            "cpu_ms": cpu, "cpu_samples_ms": tm.get("cpu_samples_ms") if cpu else None,
            "speedup_vs_cpu": cpu / med if cpu and med > 0 else None,
            "wrong_samples": tm.get("wrong_samples")}


def judge(a):
    errors = []
    try:
        seed = gen.seed_parse_wide(a.get("--seed", ""))
    except ValueError:
        raise SystemExit("judge: --seed: 1 to 32 hex digits")
    device = None
    if a.get("--device"):
        try:
            for rec, _ in read_channel(a["--device"], []):
                if rec.get("type") == "device":
                    device = dict(rec, source="measured")
                    break
        except OSError:
            pass
    res, done, fatal, tm, recheck = {}, False, False, None, None
    for rec, payload in read_channel(a["--channel"], errors):
        t = rec.get("type")
        if t == "device" and device is None:
            device = {k: rec.get(k) for k in ("name", "cc", "sms", "copy_gbs", "peak_fp32_gflops")}
            device["source"] = "channel"
        elif t == "case":
            name = str(rec.get("name"))
            if rec.get("fatal"):
                fatal = True
            if name.split("@")[0] not in CASES or name in res:
                errors.append("a record for a case this lab does not have, or twice")
                continue
            try:
                r = case_result(rec, payload, seed, name)
            except (ValueError, TypeError, KeyError) as e:
                r = result(False, "the channel record of this case could not be read (%s)" % e)
            if name.endswith("@recheck"):
                recheck = r
            else:
                res[name] = r
        elif t == "timing" and tm is None:
            if rec.get("name") in CASES and isinstance(rec.get("samples_ms"), list):
                tm = rec
            else:
                errors.append("a timing record of an unknown case")
        elif t == "harness_error":
            errors.append("harness: %s" % str(rec.get("message"))[:300])
        elif t == "done":
            done = True
    want = [c for c in a.get("--cases", "").split(",") if c]
    cases = []
    for name in CASES:
        if name not in res and name not in want:
            continue
        r = res.get(name) or result(False, "no result: the program stopped before this case (it "
                                           "crashed, was killed, or ran out of time)")
        cases.append(dict(name=name, **r))
    timing = timing_doc(tm, recheck, seed, device) if tm else None
    PREPARED.judged(seed)
    return {"lab": "pipeline", "complete": done, "fatal": fatal, "device": device,
            "cases": cases, "timing": timing, "errors": errors}


def main(argv):
    if argv == ["--serve"]:
        print("ready prepare", flush=True)
        for line in sys.stdin:
            a = line.rstrip("\n").split("\t")
            if a[0] == "prepare":   # the runner's, once: no answer
                p = dict(zip(a[1::2], a[2::2]))
                try:
                    PREPARED.start(gen.seed_parse_wide(p.get("--seed", "")),
                                   p["--cases"].split(",") if p.get("--cases") else None)
                except ValueError:
                    pass            # the verdicts make their own
                continue
            print(json.dumps(judge(dict(zip(a[0::2], a[1::2])))), flush=True)
        return 0
    if len(argv) % 2 or "--channel" not in argv[0::2]:
        sys.stderr.write("usage: judge --seed S --channel F [--cases a,b] [--device D] | --serve\n")
        return 2
    print(json.dumps(judge(dict(zip(argv[0::2], argv[1::2])))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
