#!/usr/bin/python3
"""CI's stand-in for the reduction lab's judge (reference/reduction/judge.cu +
labs/common/judge_common.cu need a GPU; CI has none). Same command lines
(`judge --seed S --channel F [--cases a,b] [--device D]`, `judge --serve`),
same verdict document, the same reference (sum in float64 of the inputs
regenerated from the seed with gen.cuh's generator), tolerance and messages.
tests/runner/python.t installs it as the built lab's `judge`. Only the
check's records: CI times nothing (the simulator's times mean nothing)."""
import json
import math
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.environ.get("CUGRADE_ROOT", "/nonexistent"), "labs/common/py"))
import gen  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from judge_rule import next_record  # noqa: E402  (the real judge's record rules)
import numpy as np  # noqa: E402

POISON = 0x7FDEADED


def cases_of():
    root = os.environ["CUGRADE_ROOT"]
    with open(os.path.join(root, "labs/reduction/lab.json")) as f:
        return {c["name"]: c["params"] for c in json.load(f)["cases"]}


def red_judge(params, cs, out):
    n = params["n"]
    x = gen.f32_reduction(np, gen.stream(cs, 0), 0, n, n, params["signs"]).astype(np.float64)
    ref = float(x.sum())
    tol = gen.reduction_tolerance(n, ref, float((x * x).sum()))
    bits = struct.unpack("<I", out[:4])[0]
    got = struct.unpack("<f", out[:4])[0]
    err = abs(got - ref)
    fin = (lambda v: v if math.isfinite(v) else None)   # the judge prints null, not NaN
    r = {"passed": False, "max_abs_err": fin(err), "max_rel_err": fin(err / abs(ref) if ref else err),
         "first_bad_index": 0, "unwritten": int(bits == POISON), "message": ""}
    if bits != POISON:   # the answer and the reference, for the runner's bug catalogue
        r.update(got=fin(got), expected=fin(ref))
    if bits == POISON:
        r["message"] = "d_out[0] was never written (it still holds the harness's poison NaN)"
    elif got != got:
        r["message"] = ("d_out[0] is NaN: did you read past the end of d_in? The harness puts "
                        "NaNs right after the n inputs")
    elif math.isinf(got):
        r["message"] = "d_out[0] is infinite but expected %.9g" % ref
    elif not err <= tol:
        m = "d_out[0] = %.9g but expected %.9g (error %.3g > tolerance %.3g)" % (got, ref, err, tol)
        if ref and 0 <= got / ref < 0.999:
            m += ": %.2f%% of the sum of the %d elements is missing" % (100 * (1 - got / ref), n)
        elif ref and got / ref > 1.001:
            m += (": %.2f%% too much; are some elements added twice (a missing "
                  "__syncthreads(), an overlapping grid)?" % (100 * (got / ref - 1)))
        r["message"] = m
    else:
        r.update(passed=True, first_bad_index=-1)
    return r


def failed(rec):
    st, en = rec.get("status"), rec.get("error_name")
    e1, e2 = str(rec.get("error", "unknown error"))[:150], str(rec.get("cause", ""))[:400]
    if st == "runtime_error" and en == "harness":
        return "%s (%s)" % (e2, e1)
    if st == "runtime_error" and en == "python_exception":
        return "your code raised %s (at %s)" % (e1, e2)
    if st == "runtime_error" and en in ("python_process", "python_timing", "python_host"):
        return "%s: %s" % (e1, e2)
    if st == "runtime_error":
        return "your kernel crashed: %s. %s" % (e1, e2)
    if st == "launch_error":
        return "CUDA error: %s. %s" % (e1, e2)
    return "the harness reported an unknown status"


def judge(a):
    cases = cases_of()
    seed = gen.seed_parse_wide(a["--seed"])
    data = open(a["--channel"], "rb").read()
    pos, res, done, fatal, device, errors, timing = 0, {}, False, False, None, [], None
    while pos < len(data):
        rec, pos = next_record(data, pos, errors)
        if rec is None:
            break
        t = rec.get("type")
        if t == "device" and device is None:
            device = {"name": rec.get("name", ""), "cc": rec.get("cc", ""), "sms": 0,
                      "copy_gbs": 0.0, "peak_fp32_gflops": 0, "source": "channel"}
        elif t == "case":
            name = str(rec.get("name"))
            nb = rec.get("bytes", 0) if rec.get("status") == "ok" else 0
            payload = data[pos:pos + nb]
            pos += nb
            if rec.get("fatal"):
                fatal = True
            if name.endswith("@recheck") and timing and name[:-8] == timing["case"]:
                # the timing run's re-check: fresh inputs from the timing's seed2
                base = name[:-8]
                ok2 = rec.get("status") == "ok" and nb == 4 and len(payload) == 4 and red_judge(
                    cases[base], gen.case_seed(int(timing["seed2"], 16), base), payload)["passed"]
                timing["recheck_passed"] = bool(ok2)
                continue
            if name not in cases or name in res:
                errors.append("a record for a case this lab does not have, or twice")
                continue
            if rec.get("status") != "ok":
                res[name] = {"passed": False, "max_abs_err": None, "max_rel_err": None,
                             "first_bad_index": -1, "unwritten": 0, "message": failed(rec)}
                continue
            if nb != 4 or rec.get("count") != 1 or len(payload) != 4:
                res[name] = {"passed": False, "max_abs_err": None, "max_rel_err": None,
                             "first_bad_index": -1, "unwritten": 0,
                             "message": "the channel record of this case has the wrong size"}
                continue
            r = red_judge(cases[name], gen.case_seed(seed, name), payload)
            if rec.get("inputs_modified"):
                r.update(passed=False, message="your code modified its inputs (%d elements "
                         "changed, counting the area just past their ends): inputs are read-only"
                         % rec.get("modified_count", 1))
            elif rec.get("oob_writes", 0) > 0:
                r.update(passed=False, message="your code wrote %d values past the end of the "
                         "output buffer: check your bounds" % rec["oob_writes"])
            res[name] = r
        elif t == "timing" and timing is None and str(rec.get("name")) in cases:
            # passed on as the real judge does (judge_common.cu), less its
            # physical-floor check: the simulator's times mean nothing
            xs = [x for x in rec.get("samples_ms") or [] if isinstance(x, (int, float)) and 0 < x < 1e7]
            timing = {"case": str(rec["name"]), "samples_ms": xs, "recheck_passed": False,
                      "bytes": 4.0 * cases[str(rec["name"])]["n"], "flops": 0.0,
                      "seed2": rec.get("seed2", "0"), "flagged": False}
        elif t == "done":
            done = True
    want = [c for c in a.get("--cases", "").split(",") if c]
    out = []
    for name in cases:
        if name not in res and name not in want:
            continue
        r = res.get(name) or {"passed": False, "max_abs_err": None, "max_rel_err": None,
                              "first_bad_index": -1, "unwritten": 0,
                              "message": "no result: the program stopped before this case (it "
                                         "crashed%s, was killed, or ran out of time)"
                                         % (" the GPU context in an earlier case" if fatal else "")}
        out.append(dict(name=name, **r))
    return {"lab": "reduction", "complete": done, "fatal": fatal, "device": device,
            "cases": out, "timing": timing, "errors": errors}


if sys.argv[1:] == ["--serve"]:
    print("ready", flush=True)
    for line in sys.stdin:
        a = line.rstrip("\n").split("\t")
        print(json.dumps(judge(dict(zip(a[0::2], a[1::2])))), flush=True)
else:
    print(json.dumps(judge(dict(zip(sys.argv[1::2], sys.argv[2::2])))))
