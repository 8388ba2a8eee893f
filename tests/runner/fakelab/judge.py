#!/usr/bin/env python3
# The fake lab's trusted judge: judge --seed S --channel F [--cases a,b] [--device D]
# or judge --serve: "ready", then one verdict line per stdin line of
# tab-separated arguments (labs/common/judge_common.cu).
import json, struct, sys
from judge_rule import next_record  # the real judge's record rules (copied beside this file)


def judge(args):
    data = open(args["--channel"], "rb").read()
    pos, cases, timing, done, errors = 0, {}, None, False, []
    while pos < len(data):
        rec, pos = next_record(data, pos, errors)
        if rec is None:
            break
        if rec.get("type") == "case":
            n = rec.get("bytes", 0)
            vals = struct.unpack("<%df" % (n // 4), data[pos:pos + n])
            pos += n
            bad = [i for i, v in enumerate(vals) if v != 2.0 * i]
            unwritten = sum(1 for v in vals if v != v)
            cases[rec["name"]] = {"name": rec["name"], "passed": not bad, "max_abs_err": 0.0 if not bad else 1.0,
                                  "max_rel_err": 0.0 if not bad else 1.0,
                                  "first_bad_index": bad[0] if bad else -1, "unwritten": unwritten,
                                  "message": "" if not bad else "wrong values"}
        elif rec.get("type") == "timing":
            timing = rec
        elif rec.get("type") == "done":
            done = True
    want = args.get("--cases", "").split(",") if "--cases" in args else []
    for w in want:
        if w and w not in cases:
            cases[w] = {"name": w, "passed": False, "first_bad_index": -1, "unwritten": 0,
                        "message": "no result: the program stopped before this case"}
    out = {"lab": "fakelab", "complete": done, "device": {"name": "Fake GPU", "copy_gbs": 100.0, "peak_fp32_gflops": 1000},
           "cases": [c for k, c in cases.items() if not k.endswith("@recheck")], "timing": None, "errors": errors}
    if timing:
        rc = cases.get(timing["name"] + "@recheck", {})
        out["timing"] = {"case": timing["name"], "samples_ms": timing["samples_ms"], "bytes": 400000, "flops": 0,
                         "recheck_passed": bool(rc.get("passed")), "flagged": False, "flag_reason": ""}
    return out


if sys.argv[1:] == ["--serve"]:
    print("ready", flush=True)
    for line in sys.stdin:
        a = line.rstrip("\n").split("\t")
        print(json.dumps(judge(dict(zip(a[0::2], a[1::2])))), flush=True)
else:
    print(json.dumps(judge(dict(zip(sys.argv[1::2], sys.argv[2::2])))))
