#!/usr/bin/env python3
# suite: alone  (tests/run.sh: it needs a quiet host, then takes every core)
"""CI (no GPU, real sandbox): no `timeout` from a busy host's CPUs
(runner/gpu/share.h: the share clock leaves out the time a run was stalled
for want of a CPU, its cgroup's "full" CPU pressure). A loaded CI machine
(two cores, thirty compiles beside it) once charged a correct Python
submission `timeout`: its interpreter's start-up is CPU work, and the clock
only discounted other jobs' GPU work.

The fake lab's harness (tests/runner/fakelab/harness.cpp) plays a check run
whose work takes N seconds of CPU when its seed starts "c0de" and N. With
the check limit at 2 s (limits.derive floor_seconds 1, startup 1) and the
ceiling at 40 s:
  - 1 s of work on a quiet host: graded;
  - the same 1 s of work while busy loops, four sessions a core, take the
    host's CPUs (so the run gets about a fifth of a core, and takes about
    5 s of wall time): graded, not `timeout` (it was `timeout` before);
  - work that never ends (99 s of CPU), graded at the same time on the
    same busy host: still
    `timeout`, well before the ceiling's 40 s is the only bound left (a run
    that spins is never stalled while it has a CPU; the clock counts its
    limit's worth of running).
Needs CPU pressure accounting (PSI) with its "full" line in the run's
cgroup; the CI machine and the GPU hosts have it. Prints TAP lines."""
import concurrent.futures, json, os, subprocess, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import failures, ok, require_nvcc_root  # noqa: E402  (paths, TAP)
from suite import GOOD_FILL, fake_course, grade_fakelab  # noqa: E402  (a starved compile retried)

require_nvcc_root()

tmp, root, cache = fake_course("cugrade-cpuload-",
                               {"run_seconds": 40, "derive": {"floor_seconds": 1, "startup_seconds": 1}})

GOOD = GOOD_FILL
WORK2 = "c0de01" + "0" * 26  # the check run works 1 s of CPU before its cases
ENDLESS = "c0de99" + "0" * 26  # 99 s of CPU: more than any limit here


def grade(seed):
    # A file of its own per seed: the two grades below run at once.
    return grade_fakelab(tmp, root, cache, "good-%s.cu" % seed[:6], GOOD, seed)


def summary(d, log):
    r = d.get("result", {})
    c = r.get("cugrade") or {}
    return json.dumps({"status": d.get("status"), "message": r.get("status_message") or r.get("message"),
                       "output": (r.get("output") or "")[:400], "rejection": c.get("rejection"),
                       "phases": c.get("phases")})[:1500] + "\n" + log


def busy_host():
    """Four busy loops a core, each a session of its own (the scheduler's
    autogroups share a CPU between sessions, not processes)."""
    return [subprocess.Popen(["sh", "-c", "while :; do :; done"], start_new_session=True)
            for _ in range(4 * (os.cpu_count() or 1))]


def stop(hogs):
    for h in hogs:
        h.kill()
        h.wait()


hogs = []
try:
    d, log, wall = grade(WORK2)
    ok(d.get("status") == "graded", "1 s of CPU work in a 2 s check limit on a quiet host: graded (%.1f s)" % wall,
       summary(d, log))

    # The correct run and the endless one at once, beside the busy loops:
    # each is the other's load too.
    hogs = busy_host()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        work, endless = pool.submit(grade, WORK2), pool.submit(grade, ENDLESS)
        (d, log, wall), (d2, log2, wall2) = work.result(), endless.result()
    stop(hogs)
    hogs = []
    run1 = ((d.get("result") or {}).get("cugrade") or {}).get("phases", {}).get("check_run", 0)
    ok(d.get("status") == "graded" and run1 > 2,
       "the same work while the host's CPUs are taken by others: graded, not timeout, though its check "
       "run took %.1f s of wall, past the 2 s limit (%.1f s in all)" % (run1, wall), summary(d, log))
    run2 = ((d2.get("result") or {}).get("cugrade") or {}).get("phases", {}).get("check_run", 99)
    ok(d2.get("status") == "timeout" and run2 < 36,
       "work that never ends on the same busy host: still timeout, its check run cut before the 40 s "
       "ceiling (%.1f s)" % run2, summary(d2, log2))
finally:
    stop(hogs)
    subprocess.run(["rm", "-rf", tmp])

sys.exit(1 if failures() else 0)
