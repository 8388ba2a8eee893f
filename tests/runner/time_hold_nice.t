#!/usr/bin/env python3
"""CI (no GPU): a timing run's CPU work goes first while it holds the GPU
(runner/gpu/lock.h TIME_HOLD_NICE; docs/runner.md "CPU priorities").

While one timing run holds the GPU's exclusive lock every other job's GPU
work waits for it, and in a Python burst on a 16-core H200 host the host
was at 98% CPU (p90): each run is a session of its own, so the holder's
owner and tenant got one session's share of the CPUs, and its hold took
twice as long as alone. The gate now asks the sandbox to raise the run's
priority (sandbox_boost) once it has the exclusive lock: every task of the
run and its session's autogroup go to nice -10. Its start-up before the
gate stays at the runner's nice.

The fake lab's harness (seed "de1c02") sets up for 1 s before its gate and
holds the GPU 2 s after it; this test reads the harness's nice (and its
autogroup's) from /proc all along. Prints TAP."""
import os, sys, threading, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import failures, ok, ours, require_nvcc_root  # noqa: E402  (paths, TAP)
from suite import GOOD_FILL, fake_course, grade_fakelab  # noqa: E402

require_nvcc_root()

HOLD_NICE = -10
tmp, root, cache = fake_course("cugrade-tnice-", {"run_seconds": 30, "derive": {"floor_seconds": 15}})
GOOD = GOOD_FILL


def timing_runs():
    """{pid: (nice, autogroup nice or None)} of the fake harness's timing
    runs alive now (`/work/prog time ...` inside the sandbox), and of the
    job's judge session (`.../judge --serve`) under the key ("judge", pid):
    this suite's own (other suites grade the fake lab beside it)."""
    seen = {}
    for p in os.listdir("/proc"):
        if not p.isdigit() or not ours(int(p)):
            continue
        try:
            with open("/proc/%s/cmdline" % p, "rb") as f:
                argv = f.read().split(b"\0")
            judge = b"--serve" in argv and any(a.endswith(b"/judge") for a in argv)
            if argv[:2] != [b"/work/prog", b"time"] and not judge:
                continue
            with open("/proc/%s/stat" % p) as f:
                nice = int(f.read().rsplit(")", 1)[1].split()[16])  # field 19
            ag = None
            try:
                with open("/proc/%s/autogroup" % p) as f:
                    ag = int(f.read().split("nice")[1])
            except (OSError, IndexError, ValueError):
                pass
            seen[("judge", int(p)) if judge else int(p)] = (nice, ag)
        except (OSError, IndexError, ValueError):
            continue
    return seen


def watch(stop, samples, seen_at):
    """samples: each process's values in the order seen; seen_at: when
    each (process, value) was first and last seen."""
    while not stop.is_set():
        now = time.time()
        for pid, v in timing_runs().items():
            samples.setdefault(pid, [])
            if not samples[pid] or samples[pid][-1] != v:
                samples[pid].append(v)
            seen_at.setdefault((pid, v), [now, now])[1] = now
        time.sleep(0.01)


try:
    d, log, _ = grade_fakelab(tmp, root, cache, "warm.cu", GOOD, "0123456789abcdef0123456789abcdef")
    ok(d.get("status") == "graded", "a correct file is graded (the lab built, its limits measured)",
       log[-2000:])

    stop, samples, seen_at = threading.Event(), {}, {}
    th = threading.Thread(target=watch, args=(stop, samples, seen_at))
    th.start()
    d, log, _ = grade_fakelab(tmp, root, cache, "good.cu", GOOD, "de1c02" + "0" * 26)
    stop.set()
    th.join()
    ok(d.get("status") == "graded", "the held file is graded", log[-2000:])
    cg = d.get("result", {}).get("cugrade") or {}
    ok(cg.get("hold_s") == {"samples": 0.25, "load": 0.5},
       "the result carries the steps of the hold its timing record said (cugrade.hold_s), "
       "names of [a-z_] with seconds >= 0 only", cg.get("hold_s"))
    runs = [v for k, v in samples.items() if v and not isinstance(k, tuple)]
    # The judges alive in the hold (from the timing run's first sighting at
    # the hold's nice): a judge process that ended before it (seen now and
    # then beside the job, at nice 0 only) judged nothing there.
    held = [at[0] for (k, v), at in seen_at.items() if not isinstance(k, tuple) and
            v[0] == HOLD_NICE]
    judges = [v for k, v in samples.items() if v and isinstance(k, tuple) and
              held and seen_at[(k, v[-1])][1] >= min(held)]
    ok(len(runs) == 1, "one timing run was seen from outside", samples)
    seq = runs[0] if runs else []
    ok(seq and seq[0][0] == 0,
       "before its gate the timing run is at the runner's nice (0)", seq)
    ok(any(n == HOLD_NICE for n, _ in seq),
       "holding the GPU, the timing run is at nice %d" % HOLD_NICE, seq)
    with open("/proc/sys/kernel/sched_autogroup_enabled") as f:
        agon = f.read().strip() == "1"
    ok(agon and seq and seq[0][1] == 0 and any(a == HOLD_NICE for _, a in seq),
       "and so is its session's autogroup (on here, as on most kernels): 0 before, %d in "
       "the hold" % HOLD_NICE, seq)
    ok(all(n in (0, HOLD_NICE) for n, _ in seq) and
       [n for n, _ in seq] == sorted([n for n, _ in seq], reverse=True),
       "its nice only goes up once, never back down while it runs", seq)
    # (a judge's process forked in the hold, with the same command line,
    # is born at -10: its parent is)
    ok(judges and any(j[0] == (0, 0) for j in judges) and
       all(j[-1] == (HOLD_NICE, HOLD_NICE) for j in judges),
       "the job's judge (it judges the timing run inside the hold) goes from 0 to %d too"
       % HOLD_NICE, judges)
finally:
    import shutil
    shutil.rmtree(tmp, ignore_errors=True)

sys.exit(1 if failures() else 0)
