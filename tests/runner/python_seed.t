#!/usr/bin/env python3
"""CI (no GPU): the run's seed is nowhere the student's code can read
(docs/python.md, "Threat model"). An attacker submission searches every
/proc/<pid> it can open -- cmdline, environ, every readable mapping through
/proc/<pid>/mem, every descriptor it can open -- for the run's seed (its
hex text, either half of it, and the 64-bit value the owner derives from it,
as text and as bytes), in the check run, the timing run and both sanitizer
runs, through the real runner and sandbox in both modes the sandbox uses
(box: an unprivileged user namespace as the box uid; root: the namespace
made by the runner). It is honest otherwise; on a find it raises
"SEEDFOUND <where>", which fails the case, the timing or the sanitizer run.
A positive control keeps the hunt honest: bwrap's own arguments
("--remount-ro") must be found in the memory of some process (bwrap's init,
pid 1 inside), else it raises "HUNTBLIND". So: graded, every case passed, a
timing with samples, both sanitizers clean, neither word anywhere. (Before
the seed went through a descriptor, the check run found it in pid 1's heap:
bwrap's --setenv.) Prints TAP lines."""
import json, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "python"))
from simlab import GOOD, ROOT, failures, grade, make_timed_root, need, ok  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "labs/common/py"))
import gen  # noqa: E402

need()
SEED = "5eed7a1e9b3c4d2f8a6e1c0b7d9f3a25"
v = gen.seed_parse_wide(SEED)
pats = [SEED.encode(), SEED.upper().encode(), SEED[:16].encode(), SEED[16:].encode(),
        b"%016x" % v, b"%016X" % v, v.to_bytes(8, "little"), v.to_bytes(8, "big")]
# The patterns travel XOR-ed, so that the attacker's own source and
# constants never contain them (it skips its own pid anyway).
OBF = [bytes(b ^ 0x5A for b in p).hex() for p in pats]

HUNT = r'''
import os, stat, sys
OBF = %r
PATS = [bytes(b ^ 0x5A for b in bytes.fromhex(h)) for h in OBF]
DONE, FOUND = [], []
CONTROL = b"--remount" + b"-ro"

def hit(data):
    return any(p in data for p in PATS)

def hunt():
    me, found, npids, nbytes, seen = os.getpid(), [], 0, 0, []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == me:
            continue
        npids += 1
        base = "/proc/" + d
        for f in ("cmdline", "environ"):
            try:
                b = open(base + "/" + f, "rb").read()
                nbytes += len(b)
                if hit(b):
                    found.append(base + "/" + f)
            except OSError:
                pass
        try:
            maps = open(base + "/maps").read().splitlines()
            mem = open(base + "/mem", "rb", buffering=0)
        except OSError:
            maps, mem = [], None
        for line in maps:
            p = line.split()
            lo, hi = (int(x, 16) for x in p[0].split("-"))
            if p[1][0] != "r" or hi - lo > (256 << 20) or lo >= 1 << 63:
                continue
            try:
                mem.seek(lo)
                b = mem.read(hi - lo)
            except (OSError, ValueError, OverflowError):
                continue
            nbytes += len(b or b"")
            if b and CONTROL in b:
                seen.append(base)
            if b and hit(b):
                found.append("%%s/mem@%%x" %% (base, lo))
        try:
            fds = os.listdir(base + "/fd")
        except OSError:
            fds = []
        for fd in fds:
            path = base + "/fd/" + fd
            try:
                st = os.stat(path)
                if not (stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
                    continue
                x = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
                try:
                    b = os.pread(x, 1 << 20, 0) if stat.S_ISREG(st.st_mode) else os.read(x, 1 << 16)
                finally:
                    os.close(x)
            except OSError:
                continue
            nbytes += len(b)
            if hit(b):
                found.append(path)
    FOUND.extend(found)
    if not seen:   # the positive control: bwrap's own arguments, in its memory
        FOUND.append("HUNTBLIND: no process's memory was read (%%d processes, %%d bytes)"
                     %% (npids, nbytes))

_honest = reduce_sum
def reduce_sum(d_in, d_out):
    if not DONE:
        DONE.append(1)
        hunt()
    if FOUND:   # on every call: the owner's warm-up call ignores what it raises
        raise RuntimeError("SEEDFOUND " + " ".join(FOUND))
    _honest(d_in, d_out)
''' % OBF

tmp, root = make_timed_root("1000", 60)

for mode in ("box", "root"):
    os.environ["CUGRADE_SANDBOX_USER"] = mode
    doc, err = grade(tmp, root, "hunt_%s.py" % mode, GOOD + HUNT, seed=SEED)
    text = json.dumps(doc) + err
    cg = doc.get("result", {}).get("cugrade", {})
    cases = cg.get("cases", [])
    sans = cg.get("sanitizer", [])
    tim = cg.get("timing") or {}
    ok("SEEDFOUND" not in text and "HUNTBLIND" not in text, "[%s] the seed is in no process, file, argument or "
       "environment the student can read" % mode,
       text[text.find("SEEDFOUND") - 200:text.find("SEEDFOUND") + 600] if "SEEDFOUND" in text
       else "")
    ok(doc.get("status") == "graded" and cases and all(c.get("passed") for c in cases),
       "[%s] check run: every case passed (the hunt ran and found nothing)" % mode,
       json.dumps(doc)[:2500] + err[-1500:])
    # At least one: the owner stops at its budget (3 s, at most 6 s) even
    # with fewer than 3 samples, and on 2 loaded cores one simulated sample
    # took over 3 s (a fresh-clone CI run). What this checks is that the
    # timing ran after the hunt, not how many samples fit.
    ok(tim.get("samples", 0) >= 1 and doc.get("status") == "graded",
       "[%s] timing run: samples taken after the hunt" % mode,
       json.dumps(cg)[:2500] + err[-1500:])
    ok(len(sans) == 2 and all(s.get("ran") and s.get("clean") for s in sans),
       "[%s] both sanitizer runs hunted and were clean" % mode, json.dumps(sans)[:2000])
sys.exit(1 if failures() else 0)
