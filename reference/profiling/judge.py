#!/usr/bin/python3 -I
"""judge.py - the profiling lab's trusted judge (installed as OUTDIR/judge
by labs/build-lab.sh; docs/formats.md "The harness result channel" for the
command line and the verdict document; docs/labs.md "The profiling lab").

    judge --seed HEX --channel FILE [--cases a,b,c] [--device FILE]
    judge --serve

Unlike the kernel labs' judges it regenerates nothing: this lab's reference
(the starter's losses and weights on the run's data) is computed in the
sandbox by the trusted owner (labs/profiling/lab.py), the only writer of the
channel, which judges each case itself. So this judge checks the channel's
shape, takes the owner's verdicts, and turns its timing record into the
document the runner reads (the starter's step time as "baseline_ms", which
the runner scores as the naive baseline). The channel is still read as
hostile input: bounded lines, a record that is not what the owner writes is
an error, never a crash. Standard library only: it runs outside the sandbox
with the host's python3.
"""
import json
import math
import sys

MAX_LINE = 1 << 20
MAX_RECORDS = 10000
LAB = "profiling"
CASES = ("results", "syncs", "copies")


def num(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) \
        else None


def text(v, n=2000):
    return v[:n] if isinstance(v, str) else ""


def read_channel(path, errors):
    """The channel's records (dicts), at most MAX_RECORDS. Raises OSError
    when it cannot be read as a regular file (ours: exit 2)."""
    import os
    import stat
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise OSError("the channel is not a regular file")
        recs = []
        while len(recs) < MAX_RECORDS:
            line = f.readline(MAX_LINE + 1)
            if not line:
                break
            if len(line) > MAX_LINE or not line.endswith(b"\n"):
                errors.append("bad framing: a record longer than 1 MiB or unterminated")
                break
            try:
                r = json.loads(line)
            except ValueError:
                errors.append("bad framing: a line that is not JSON")
                break
            if not isinstance(r, dict) or not isinstance(r.get("type"), str):
                errors.append("a record without a type")
                break
            if "bytes" in r:
                errors.append("unexpected payload in a %s record" % text(r["type"], 20))
                break
            recs.append(r)
        return recs


def case_verdict(r):
    passed = r.get("passed") is True and r.get("status") == "ok"
    msg = text(r.get("message"))
    if r.get("status") != "ok" and not msg:
        msg = "your code raised %s (%s)" % (text(r.get("error"), 300), text(r.get("cause"), 600))
    v = num(r.get("value"))
    return {"name": text(r.get("name"), 64), "passed": passed, "max_abs_err": None,
            "max_rel_err": v if text(r.get("name")) == "results" else None,
            "first_bad_index": -1, "unwritten": 0, "message": msg,
            "value": v, "baseline_value": num(r.get("baseline_value"))}


def timing_verdict(r, errors):
    samples = [x for x in (r.get("samples_ms") or [])[:10000] if num(x) is not None and x > 0] \
        if isinstance(r.get("samples_ms"), list) else []
    if not samples:
        errors.append("a timing record without samples")
        return None
    s = sorted(samples)
    n = len(s)
    med = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
    base = num(r.get("baseline_ms"))
    recheck = r.get("recheck_passed") is True
    reason = text(r.get("recheck_message"), 400)
    return {"case": text(r.get("name"), 64), "median_ms": med, "n": n, "samples_ms": samples,
            "timed_by": "owner", "steps_per_sample": num(r.get("steps_per_sample")),
            "baseline_ms": base if base and base > 0 else None,
            "baseline_samples_ms": [x for x in (r.get("baseline_samples_ms") or [])[:1000]
                                    if num(x) is not None] if isinstance(
                                        r.get("baseline_samples_ms"), list) else [],
            "speedup_vs_starter": (base / med) if base and base > 0 else None,
            "bytes": 0, "flops": 0, "recheck_passed": recheck, "flagged": False,
            "flag_reason": "" if recheck else reason, "valid": recheck,
            "wrong_samples": num(r.get("wrong_samples"))}


def judge(channel, cases_csv):
    errors = []
    recs = read_channel(channel, errors)
    device, timing, seen, done, fatal = None, None, {}, False, False
    for r in recs:
        t = r["type"]
        if t == "device" and device is None:
            device = {"name": text(r.get("name"), 100), "device": text(r.get("device"), 10),
                      "torch": text(r.get("torch"), 40), "copy_gbs": 0, "source": "channel"}
        elif t == "case":
            name = text(r.get("name"), 64)
            if name not in CASES:
                errors.append("unknown case %r" % name[:64])
            elif name not in seen:
                seen[name] = case_verdict(r)
                fatal = fatal or r.get("fatal") is True
        elif t == "timing" and timing is None:
            timing = timing_verdict(r, errors)
        elif t == "done":
            done = True
        elif t in ("harness_error", "compile_error"):
            pass
        else:
            errors.append("unexpected record %r" % t[:32])
    asked = [c for c in cases_csv.split(",") if c] if cases_csv else list(seen)
    out = []
    for c in CASES:
        if c in seen and (c in asked or not cases_csv):
            out.append(seen[c])
        elif c in asked:
            out.append({"name": c, "passed": False, "max_abs_err": None, "max_rel_err": None,
                        "first_bad_index": -1, "unwritten": -1,
                        "message": "no result: the program stopped before this case"})
    return {"lab": LAB, "complete": done, "fatal": fatal, "device": device, "cases": out,
            "timing": timing, "errors": errors[:20]}


def args_of(argv):
    o = {}
    i = 0
    while i < len(argv):
        if argv[i] not in ("--seed", "--channel", "--cases", "--device") or i + 1 >= len(argv):
            raise ValueError("bad argument %r" % argv[i])
        o[argv[i][2:]] = argv[i + 1]
        i += 2
    if "channel" not in o:
        raise ValueError("--channel is required")
    return o


def once(argv):
    o = args_of(argv)
    return json.dumps(judge(o["channel"], o.get("cases")), allow_nan=False)


def main():
    argv = sys.argv[1:]
    try:
        if argv == ["--serve"]:
            print("ready", flush=True)
            for line in sys.stdin:
                print(once(line.rstrip("\n").split("\t")), flush=True)
            return 0
        print(once(argv), flush=True)
        return 0
    except (ValueError, OSError) as e:
        sys.stderr.write("judge: %s\n" % e)
        return 2


if __name__ == "__main__":
    sys.exit(main())
