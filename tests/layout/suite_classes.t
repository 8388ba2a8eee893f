#!/usr/bin/env python3
"""tests/run.sh's suite classes, on a tree of its own: a copy of run.sh
beside stand-in suites that write when they start and end, and their CPU
group. An `alone` suite runs with nothing beside it; a `quiet` one with
nothing in the foreground but `idle` suites, which do run beside it (their
lanes start after the alone suites). The pool starts after the alone
suites in a background CPU group of weight 2 where the host has cgroup v1's
cpu controller for us (as root), beside the quiet suites; elsewhere, and
with BG_POOL=0, after them. With JOBS=1 nothing overlaps at all. An idle
suite that uses more CPU than run.sh's IDLE_CPU_MAX fails; the summary
counts every suite. Prints TAP."""
import os, shutil, subprocess, sys, tempfile

ROOT = os.environ.get("CUGRADE_ROOT") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
n = 0
failed = 0


def ok(cond, name, detail=""):
    global n, failed
    n += 1
    print(("ok - " if cond else "not ok - ") + name)
    if not cond:
        failed += 1
        for line in str(detail).splitlines()[-25:]:
            print("#   " + line)


# The group and its weight are read before the start is stamped: a suite
# that started before the last quiet one ended read its weight before that
# too (on a loaded host the reads took over a second after the stamp, and
# the weight had changed in between).
SUITE = """#!/bin/sh
{cls}
echo "{name} cg $(awk -F: '$2 ~ /(^|,)cpu(,|$)/ {{ print $3 }}' /proc/self/cgroup)" >>"$CLASSES_LOG"
echo "{name} shares $(cat /sys/fs/cgroup/cpu$(awk -F: '$2 ~ /(^|,)cpu(,|$)/ {{ print $3 }}' /proc/self/cgroup | sed 's,/$,,')/cpu.shares 2>/dev/null)" >>"$CLASSES_LOG"
echo "{name} start $(date +%s.%N)" >>"$CLASSES_LOG"
{work}
echo "{name} end $(date +%s.%N)" >>"$CLASSES_LOG"
echo "ok - {name}"
"""
STANDINS = {  # name: (class, seconds, burns CPU)
    "hog": ("alone", 1.0, False),
    "quiet1": ("quiet", 2.5, False),
    "quiet2": ("quiet", 2.5, False),
    "idle1": ("idle", 2.0, False),
    "idle2": ("idle", 2.0, False),
    "p1": ("-", 1.0, False), "p2": ("-", 1.0, False), "p3": ("-", 1.0, False),
}


def lay_out(tmp, standins):
    os.makedirs(os.path.join(tmp, "tests", "x"))
    os.makedirs(os.path.join(tmp, "build", "tests", "unit"))
    shutil.copy(os.path.join(ROOT, "tests", "run.sh"), os.path.join(tmp, "tests", "run.sh"))
    for name, (cls, secs, burn) in standins.items():
        # burn: that many seconds of CPU, however long a busy host makes it take
        work = ("python3 -c 'import time\nwhile time.process_time() < %s: pass'" % secs
                if burn else "sleep %s" % secs)
        path = os.path.join(tmp, "tests", "x", name + ".t")
        with open(path, "w") as f:
            f.write(SUITE.format(cls="# suite: " + cls if cls != "-" else "", name=name, work=work))
        os.chmod(path, 0o755)


def run(tmp, jobs, bg_pool="1"):
    log = os.path.join(tmp, "classes.log")
    open(log, "w").close()
    env = {k: v for k, v in os.environ.items()
           if k not in ("ONLY", "JOBS", "IDLE_JOBS", "IDLE_LANE", "SANITIZER_LOG_DIR", "CUGRADE_BUILD", "CUGRADE_ROOT")}
    env.update(CLASSES_LOG=log, JOBS=str(jobs), IDLE_CPU_MAX="1", BG_POOL=bg_pool)
    p = subprocess.run(["sh", os.path.join(tmp, "tests", "run.sh"), os.path.join(tmp, "build")],
                       env=env, capture_output=True, text=True, timeout=120)
    spans, cgs = {}, {}
    for line in open(log):
        name, what, t = (line.split() + [""])[:3]
        if what in ("cg", "shares"):
            cgs.setdefault(name, {})[what] = t
        else:
            spans.setdefault(name, {})[what] = float(t)
    run.cgs = cgs
    return p, {k: (v.get("start", 0), v.get("end", 0)) for k, v in spans.items()}


def beside(spans, name):
    """The suites whose run overlapped name's."""
    a0, a1 = spans[name]
    return sorted(k for k, (b0, b1) in spans.items() if k != name and b0 < a1 and a0 < b1)


BG_ROOT = "/sys/fs/cgroup/cpu"
BG = os.access(BG_ROOT + "/cgroup.procs", os.W_OK)
tmp = tempfile.mkdtemp(prefix="cugrade-classes-")
try:
    lay_out(tmp, STANDINS)
    p, spans = run(tmp, 4)
    out = p.stdout + p.stderr
    ok(p.returncode == 0 and out.rstrip().endswith("8 passed, 0 failed, 0 skipped") and len(spans) == 8,
       "every stand-in suite ran and passed (JOBS=4)", out)
    if len(spans) == 8:
        cgs = run.cgs
        fg = cgs.get("hog", {}).get("cg")
        ok(beside(spans, "hog") == [], "an alone suite runs with nothing beside it", beside(spans, "hog"))
        for q in ("quiet1", "quiet2"):
            ok(all(k.startswith("idle") or cgs[k]["cg"] != fg for k in beside(spans, q)) and
               cgs[q]["cg"] == fg and all(cgs[k]["cg"] == fg for k in spans if k.startswith("idle")),
               "a quiet suite (%s) runs beside idle suites only in the foreground: %s" % (q, beside(spans, q)),
               cgs)
        ok(any(k.startswith("idle") for k in beside(spans, "quiet1") + beside(spans, "quiet2")),
           "the idle suites run beside the quiet ones (their lanes start after the alone suites)",
           {k: beside(spans, k) for k in spans})
        first_pool = min(spans[k][0] for k in ("p1", "p2", "p3"))
        quiet_end = max(spans["quiet1"][1], spans["quiet2"][1])
        if BG:
            bgs = {cgs[k]["cg"] for k in ("p1", "p2", "p3")}
            early = [k for k in ("p1", "p2", "p3") if spans[k][0] < quiet_end]
            ok(first_pool >= spans["hog"][1] and early and len(bgs) == 1 and fg not in bgs and
               all(cgs[k]["shares"] == "2" for k in early),
               "the pool starts when the alone suites end, beside the quiet ones, in a CPU group of its "
               "own at weight 2 (%s)" % sorted(bgs), {"spans": spans, "groups": cgs})
            gone = bgs.pop() if len(bgs) == 1 else "/"
            ok(gone != "/" and not os.path.exists(BG_ROOT + gone),
               "the background group is removed when the run ends", gone)
        else:
            ok(first_pool >= max(quiet_end, spans["hog"][1]),
               "no background CPU group here (no root, or no cgroup v1 cpu controller): the pool "
               "starts once the alone and quiet suites have ended", spans)
            ok(True, "the pool beside the quiet suites in a background group "
               "# SKIP no writable cgroup v1 cpu controller here")
    if BG:
        p, spans = run(tmp, 4, bg_pool="0")
        ok(p.returncode == 0 and len(spans) == 8 and
           min(spans[k][0] for k in ("p1", "p2", "p3")) >= max(spans["quiet1"][1], spans["quiet2"][1]),
           "with BG_POOL=0 the pool starts once the quiet suites have ended", spans)
    p, spans = run(tmp, 1)
    out = p.stdout + p.stderr
    ok(p.returncode == 0 and len(spans) == 8 and all(beside(spans, k) == [] for k in spans),
       "with JOBS=1 no two suites overlap (the idle ones run in the pool)",
       out + "\n" + str({k: beside(spans, k) for k in spans}))
    shutil.rmtree(tmp)

    tmp = tempfile.mkdtemp(prefix="cugrade-classes-")
    lay_out(tmp, {"busy": ("idle", 2, True), "p1": ("-", 1.0, False)})  # 2 s of CPU, IDLE_CPU_MAX 1
    p, spans = run(tmp, 4)
    out = p.stdout + p.stderr
    ok(p.returncode != 0 and "not ok - x/busy.t is a `suite: idle` but used" in out
       and out.rstrip().endswith("1 failed, 0 skipped"),
       "an idle suite that uses more than IDLE_CPU_MAX seconds of CPU fails, saying so", out)
finally:
    shutil.rmtree(tmp, ignore_errors=True)

print("1..%d" % n)
sys.exit(1 if failed else 0)
