#!/usr/bin/env python3
# suite: quiet  (tests/run.sh: it bounds waits to fractions of a second; the
# /lab/launch processes it looks for are its own, reparented to it)
"""CI (no GPU): the whole grading pipeline -- compile, inspect, link, check
(sandboxed, result channel on fd 3), the judge, timing, baselines (sandboxed
and CPU, cached), scoring -- on a CPU-only fake lab (tests/runner/fakelab/:
a harness and judge speaking the real channel protocol). A correct file is
graded with speed tiers; a wrong one fails its cases and is not timed; a crash
is a runtime_error naming the signal; an endless loop is a timeout. Prints
TAP lines."""
import ctypes, json, os, shutil, subprocess, sys, tempfile, threading, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import RUNNER, failures, link_cuda, ok, ours, require_nvcc_root  # noqa: E402  (paths, TAP)
import tree  # noqa: E402  (the fake lab laid out as a course tree)

require_nvcc_root()

# A process the runner leaves behind is reparented to this one, not to init:
# "nothing left running" then means among this suite's own processes, not
# those of other suites on the host (tests/run.sh's pool runs beside it).
PR_SET_CHILD_SUBREAPER = 36
ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def launches_left():
    """The /lab/launch processes below this one, as "PID CMDLINE" lines."""
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "/lab/launch" in cmd and ours(int(pid)):
            left.append(f"{pid} {cmd.strip()}")
    return "\n".join(left)


def seconds_through(ph, phase):
    """The job's clock at the end of phase (its phases in order, summed),
    or None when the job had no such phase."""
    names = [k for k in ph if k != "total"]
    return sum(ph[k] for k in names[:names.index(phase) + 1]) if phase in names else None


tmp = tempfile.mkdtemp(prefix="cugrade-pipe-")
os.chmod(tmp, 0o755)
root = tree.lay_out(os.path.join(tmp, "root"))

SOURCES = {
    "good.cu": 'extern "C" void fill(float* o, int n) { for (int i = 0; i < n; i++) o[i] = 2.0f * i; }\n',
    "wrong.cu": 'extern "C" void fill(float* o, int n) { for (int i = 0; i < n - 1; i++) o[i] = 2.0f * i; }\n',
    "crash.cu": 'extern "C" void fill(float* o, int n) { volatile float* p = 0; *p = 1; }\n',
    "hang.cu": 'extern "C" void fill(float* o, int n) { volatile int x = 1; while (x) { } }\n',
    # exit(2) is what the harness does on a failure of its own: without the
    # harness's harness_error record it must still be the student's.
    "exit2.cu": '#include <cstdlib>\nextern "C" void fill(float* o, int n) { exit(2); }\n',
    "exit4.cu": '#include <cstdlib>\nextern "C" void fill(float* o, int n) { for (int i = 0; i < n; i++) o[i] = 2.0f * i; if (n > 5000) exit(4); }\n',
}

def grade(name, extra=()):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(SOURCES[name])
    p = subprocess.run([RUNNER, "grade", "--root", root, "--lab", "fakelab", "--file", path,
                        "--cache", os.path.join(tmp, "cache"), "--work", os.path.join(tmp, "work"),
                        "--arch", "sm_90", "--seed", "0123456789abcdef0123456789abcdef"] + list(extra),
                       capture_output=True, text=True, timeout=300)
    try:
        return json.loads(p.stdout), p.stderr
    except ValueError:
        return {"status": "unparsable", "result": {}}, p.stderr + p.stdout

def sessions_of_judges(stop, seen):
    """(pid, session) of every `judge --serve` seen in /proc until stop."""
    while not stop.is_set():
        for pid in os.listdir("/proc"):
            try:
                cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
                st = open(f"/proc/{pid}/stat").read()
            except OSError:
                continue
            if len(cmd) > 2 and cmd[-2] == b"--serve" and cmd[-3].endswith(b"/judge"):
                seen.add((int(pid), int(st[st.rindex(")") + 2:].split()[3])))  # field 6: session
        time.sleep(0.005)

try:
    stop, judges = threading.Event(), set()
    poller = threading.Thread(target=sessions_of_judges, args=(stop, judges))
    poller.start()
    d, log = grade("good.cu")
    stop.set()
    poller.join()
    # A session of its own (runner/run/run.c): where the kernel shares the CPUs
    # by session (autogroup), judges left in the runner's session would
    # share one session's CPU among them all.
    ok(judges and all(pid == sid for pid, sid in judges),
       "the judge runs in a session of its own (%d seen)" % len(judges), sorted(judges))
    r = d.get("result", {})
    cg = r.get("cugrade", {})
    t = cg.get("timing") or {}
    ok(d["status"] == "graded", "a correct file is graded", log[-3000:] + json.dumps(d)[:3000])
    ok(all(c["passed"] for c in cg.get("cases", [])) and len(cg.get("cases", [])) == 2,
       "both cases pass (judged outside, from the channel)", json.dumps(cg.get("cases")))
    ok("checking 2/2" in log, "progress counts the cases as the channel fills", log[-2000:])
    # The fake harness sends 30 samples; how many a loaded machine makes
    # outliers varies, but the cut (runner/timing/stats.c) is above the median: at
    # least half are kept.
    ok((t.get("student_ms") or 0) > 0 and 15 <= (t.get("samples") or 0) <= 30 and t.get("recheck_passed") is True,
       "timed: median of the samples, re-check passed", json.dumps(t))
    ok(((t.get("reference_ms") or {}).get("naive") or 0) > 0 and t.get("cpu_ms") == 5.0,
       "baselines: the naive program timed in the sandbox, the CPU one from its JSON", json.dumps(t))
    sp = cg.get("speed") or []
    ok(len(sp) == 2 and sp[0]["value"] and sp[0]["value"] > 2 and sp[0]["tier"] == "2x naive",
       "speedup over the naive baseline earns its tier", json.dumps(sp))
    # Noise (docs/runner.md, "Noise and re-timing"): the compared baselines
    # timed in the job beside the student's batch, every timing with its
    # 95% interval, the speed lines with the metric's.
    tl = {x.get("name"): x for x in t.get("timings") or []}
    ok(all(tl.get(k, {}).get("interleaved") is (k != "student") and tl[k]["samples"] > 0 and
           tl[k]["ci_low"] <= tl[k]["median_ms"] <= tl[k]["ci_high"] for k in ("student", "naive", "cpu")) and
       t.get("retimed") == 0 and t.get("retime_bound") == 2,
       "the naive and CPU baselines are timed in the job (interleaved), each timing with its 95% CI",
       json.dumps(t))
    outs = [x.get("output", "") for x in r.get("tests", []) if x.get("name", "").startswith("speed")]
    ok(len(outs) == 2 and all("(95% CI " in o for o in outs) and
       all(x.get("ci_low") is not None and x["ci_low"] <= x["value"] <= x["ci_high"] for x in sp),
       "each speed line shows its value with the 95% CI", json.dumps(outs))
    ok(r.get("score") == r.get("max_score") == 35, "full marks: 20 correctness + 10 + 5 speed",
       json.dumps({k: r.get(k) for k in ("score", "max_score")}))
    ph = cg.get("phases") or {}
    ok(all(k in ph for k in ("compile", "check_run", "judge", "time_run")), "phases are timed", ph)
    # The timing gate (docs/runner.md, the discipline's item 8): the timing
    # run's start-up under the shared lock ("time_start"), its samples under
    # the exclusive one ("time_run") with the interleaved baselines above.
    ok("time_start" in ph and ph["time_start"] >= 0, "the CUDA timing run passed its gate (time_start)", ph)
    d0, log0 = grade("good.cu")
    ph0 = d0.get("result", {}).get("cugrade", {}).get("phases") or {}
    ok(d0["status"] == "graded" and "time_run" in ph0 and "time_start" in ph0,
       "the next job's timing run passes its gate too (no ungated CUDA timing any more)", ph0)
    # Shared batches (docs/runner.md, "Noise and re-timing"): the first
    # job's naive batch was kept for this GPU; the next job, seconds later,
    # takes it instead of timing its own inside its exclusive hold.
    t1 = {x.get("name"): x for x in t.get("timings") or []}
    t0d = {x.get("name"): x for x in (d0.get("result", {}).get("cugrade", {}).get("timing") or {}).get("timings") or []}
    nv = t0d.get("naive", {})
    cv = t0d.get("cpu", {})
    ok(t1.get("naive", {}).get("shared_age_s", 0) is None and nv.get("interleaved") is False and
       0 <= (nv.get("shared_age_s") if nv.get("shared_age_s") is not None else -1) <= 600 and
       nv.get("samples", 0) > 0 and
       os.path.exists(os.path.join(tmp, "cache", "gpu-0.batch-fakelab-big-naive.json")),
       "the next job takes the naive batch the first one timed (%s s old), not timing its own"
       % nv.get("shared_age_s"), json.dumps({"first": t1, "next": t0d}))
    ok(t1.get("cpu", {}).get("interleaved") is True and t1["cpu"].get("samples") == 1 and
       cv.get("interleaved") is True and cv.get("shared_age_s", 0) is None and cv.get("samples") == 2,
       "the CPU record is shared only once it holds 9 batches: the next job adds its own to a "
       "young one (1 -> 2 batch medians)", json.dumps({"first": t1, "next": t0d}))
    # Older batches in the record (as a host that has graded for a while
    # has): the next job takes the record as it is and adds none.
    import glob
    recs = glob.glob(os.path.join(tmp, "cache/sm_90/fakelab/baselines/*__big__cputime.batches"))
    rec = recs[0] if len(recs) == 1 else os.path.join(tmp, "no-single-record")
    with open(rec, "a") as f:
        f.write("5.000000\n" * 8)
    dr, logr = grade("good.cu")
    tr = {x.get("name"): x for x in (dr.get("result", {}).get("cugrade", {}).get("timing") or {}).get("timings") or []}
    cr = tr.get("cpu", {})
    with open(rec) as f:
        nrec = len(f.read().split())
    ok(dr["status"] == "graded" and cr.get("interleaved") is False and cr.get("shared_age_s") is not None and
       0 <= cr["shared_age_s"] <= 600 and cr.get("samples") == 10 and nrec == 10,
       "with 10 batches in the record (appended to %s s ago) the next job takes it as it is, adding none"
       % cr.get("shared_age_s"), json.dumps({"cpu": cr, "record_lines": nrec}))
    # Another holder keeps the GPU's lock shared for 12 s (as another job's
    # check run would), longer than the timing run's wall limit (the check
    # limit + 2 x 3 s): the timing run starts, waits at its gate with the
    # pause on, and is graded with its samples, not timed out.
    import fcntl
    os.makedirs(os.path.join(tmp, "cache"), exist_ok=True)
    lk = os.open(os.path.join(tmp, "cache", "gpu-0.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(lk, fcntl.LOCK_SH)
    t0 = time.monotonic()
    th = threading.Thread(target=lambda: (time.sleep(12), fcntl.flock(lk, fcntl.LOCK_UN)))
    th.start()
    dh, logh = grade("good.cu")
    th.join()
    os.close(lk)
    phh = dh.get("result", {}).get("cugrade", {}).get("phases") or {}
    tl = {x.get("name"): x for x in (dh.get("result", {}).get("cugrade", {}).get("timing") or {}).get("timings") or []}
    # When the gate let the run go, in the job's clock: the lock's release
    # at 12 s, however long a loaded host took to reach the gate.
    gate_end = seconds_through(phh, "hold_wait") or 0
    ok(dh["status"] == "graded" and tl.get("student", {}).get("samples", 0) > 0 and
       time.monotonic() - t0 > 12 and phh.get("hold_wait", 0) >= 0.5 and gate_end >= 11 and "time_start" in phh,
       "with the GPU's lock held by another for 12 s, the CUDA timing run waited at its gate "
       "(hold_wait %.1f s, its gate let go %.1f s into the job) and was graded with its samples, not "
       "timed out" % (phh.get("hold_wait", 0), gate_end),
       json.dumps({"status": dh.get("status"), "phases": phh, "log": logh[-600:]}))
    ok(phh.get("sanitize_wait", 99) < 0.5 <= phh.get("hold_wait", 0),
       "that wait is the exclusive hold's (hold_wait), not the job's own sanitizers' (sanitize_wait "
       "%.2f s: it has none)" % phh.get("sanitize_wait", 99), json.dumps(phh))
    cache = os.path.join(tmp, "cache/sm_90/fakelab/baselines")
    ok(os.path.isdir(cache) and len([f for f in os.listdir(cache) if f.endswith(".json")]) == 2,
       "the baselines are cached per GPU and case",
       os.listdir(cache) if os.path.isdir(cache) else "no cache dir")

    # GPU memory admission (runner/gpu/admit.c) with a capacity given by hand:
    # the job reserves its lab's device_mb plus its contexts before the go
    # and lets go when its GPU work ends, leaving the ledger empty.
    os.environ["CUGRADE_GPU_MEMORY_MB"] = "4000"
    try:
        d, log = grade("good.cu")
    finally:
        del os.environ["CUGRADE_GPU_MEMORY_MB"]
    ledger = os.path.join(tmp, "cache", "gpu-0.admit")
    ph = d.get("result", {}).get("cugrade", {}).get("phases") or {}
    ok(d["status"] == "graded" and "admit_wait" in ph and os.path.exists(ledger)
       and open(ledger).read() == "",
       "admitted through the GPU memory ledger, and the reservation is let go at the end",
       json.dumps(ph) + (" ledger: %r" % open(ledger).read() if os.path.exists(ledger) else " no ledger"))

    # After the check run the biggest case is behind the job: its
    # reservation shrinks to limits.timing_device_mb (fakelab: 40 of 100)
    # plus the same allowance and contexts, while it is timed (slow.cu
    # spins ~2 ms a call, 600 calls in the timing run: long enough to see).
    from ledger import LedgerWatch
    SOURCES["slow.cu"] = ('extern "C" void fill(float* o, int n) { if (n > 5000) { volatile long x = 0; '
                          'for (long i = 0; i < 3000000; i++) x += i; } '
                          'for (int i = 0; i < n; i++) o[i] = 2.0f * i; }\n')
    os.environ["CUGRADE_GPU_MEMORY_MB"] = "4000"
    watch = LedgerWatch(ledger).start()
    try:
        d, log = grade("slow.cu")
    finally:
        seen = watch.stop()
        del os.environ["CUGRADE_GPU_MEMORY_MB"]
    # Per phase (issue 25): with no sanitizer, what is left after the
    # timing is the judge's context alone, for an instant (the watcher may
    # not see it) before the reservation is let go.
    # Up to the end of the check run it also holds the timing run started
    # beside the check (job_time_prestart): its case (40) and its context.
    full, after, judge = 100 + 2048 + 600 * 2 + (40 + 600), 40 + 2048 + 600 * 2, 600
    ok(d["status"] == "graded" and seen in ([full, after], [full, after, judge]) and
       open(ledger).read() == "",
       "the reservation is %d MiB up to the end of the check run, then %d (timing_device_mb), then %d "
       "(the judge's context: no sanitizer left), then let go"
       % (full, after, judge), json.dumps({"seen": seen, "status": d.get("status"), "log": log[-800:]}))

    d, log = grade("wrong.cu")
    cg = d.get("result", {}).get("cugrade", {})
    bad = [c for c in cg.get("cases", []) if not c["passed"]]
    ok(d["status"] == "graded" and len(bad) == 2 and cg.get("timing") is None,
       "a wrong file: graded, both cases fail, not timed", json.dumps(d)[:3000])
    ok(bad and bad[0].get("unwritten", 0) >= 1 and any("never written" in h for h in cg.get("hints", [])),
       "the unwritten output is counted and hinted", json.dumps(cg)[:3000])

    # A graded file's own prints reach its result (program_output), and the
    # hints, which read the same run's output: the check run's output is
    # kept after the check (it was dropped when no timing run followed).
    SOURCES["wrongprint.cu"] = ('#include <cstdio>\nextern "C" void fill(float* o, int n) { '
                                'printf("debug n=%d\\n", n); }\n')
    d, log = grade("wrongprint.cu")
    cg = d.get("result", {}).get("cugrade", {})
    ok(d["status"] == "graded" and "debug n=" in cg.get("program_output", ""),
       "a graded file's prints in its failing cases are its program_output", json.dumps(d)[:3000])

    d, log = grade("crash.cu")
    out = d.get("result", {}).get("output", "")
    ok(d["status"] == "runtime_error" and "signal 11" in out, "a crash is a runtime_error naming the signal",
       json.dumps(d)[:3000])

    d, log = grade("hang.cu")
    out = d.get("result", {}).get("output", "")
    ok(d["status"] == "timeout" and "time limit" in out, "an endless loop is a timeout", json.dumps(d)[:3000])
    # limits.derive (fakelab: 5 x the naive check run, at least 1 s, + 1 s,
    # at most run_seconds = 4 s): the limit comes from the naive reference
    # measured once and cached, and the sentence says which case was running.
    lim = os.path.join(tmp, "cache/sm_90/fakelab/limits")
    cached = json.load(open(os.path.join(lim, os.listdir(lim)[0]))) if os.path.isdir(lim) and os.listdir(lim) else {}
    ok(cached.get("naive_seconds", 0) > 0, "the naive reference's check run is measured and cached", cached)
    ok("naive reference" in out and "case small" in out,
       "the timeout names the case in progress and the derived limit", out)
    import re
    m = re.search(r"time limit of ([0-9.]+) s", out)
    want = min(4.0, max(1.0, 5 * cached.get("naive_seconds", 99)) + 1.0)
    ok(m and abs(float(m.group(1)) - want) < 0.06,
       "the limit is min(run_seconds, max(floor, 5 x naive) + start-up) = %.2f s" % want, out)
    SOURCES["flood.cu"] = '#include <cstdio>\nextern "C" void fill(float* o, int n) { for (;;) printf("%d spam spam spam spam spam spam spam spam\\n", n); }\n'
    d, log = grade("flood.cu")
    out = d.get("result", {}).get("output", "")
    ok(d["status"] == "runtime_error" and "Output limit exceeded" in out,
       "an output flood is killed at the output limit: runtime_error, 'Output limit exceeded'", json.dumps(d)[:2000])

    d, log = grade("exit2.cu")
    out = d.get("result", {}).get("output", "")
    ok(d["status"] == "runtime_error" and "status 2" in out and "harness reported no failure" in out,
       "a program that exits 2 without the harness's record is charged: runtime_error, not system_error",
       json.dumps(d)[:3000])
    ok("harness seed: 0123456789abcdef0123456789abcdef" in d.get("result", {}).get("cugrade", {}).get("program_output", ""),
       "the server's 32-digit seed reaches the harness whole", json.dumps(d)[:3000])
    d, log = grade("exit4.cu")
    out = d.get("result", {}).get("output", "")
    cases = d.get("result", {}).get("cugrade", {}).get("cases", [])
    ok(d["status"] == "runtime_error" and "status 4" in out and
       [c["name"] for c in cases if c.get("passed")] == ["small"],
       "exit 4 in the second case: runtime_error, the case that passed before keeps its points",
       json.dumps(d)[:3000])
    d, log = grade("good.cu", ["--seed", "bad0" + "0" * 28])
    ok(d["status"] == "system_error" and "could not allocate" in d.get("result", {}).get("output", ""),
       "exit 2 with the harness's harness_error record is ours: system_error", json.dumps(d)[:1500])
    # Grading comes first (runner/grade/job_time.c, job_profile_load): while other
    # jobs wait for admission to this GPU (CACHE/gpu-0.admitq), a correct
    # submission is not profiled, and the result says why. A fake
    # nvidia-smi makes the runner see a GPU; without ncu the profile is
    # "not installed" when no one waits.
    fbin = os.path.join(tmp, "fakebin")
    os.makedirs(fbin, exist_ok=True)
    with open(os.path.join(fbin, "nvidia-smi"), "w") as f:
        f.write('#!/bin/sh\ncase "$1" in --query-gpu=*) echo "0, NVIDIA H100 80GB HBM3, 9.0, 00000000:19:00.0"; exit 0;; esac\nexit 2\n')
    os.chmod(os.path.join(fbin, "nvidia-smi"), 0o755)
    saved = {k: os.environ.get(k) for k in ("PATH", "CUGRADE_NCU")}
    os.environ["PATH"] = fbin + ":" + os.environ["PATH"]
    os.environ["CUGRADE_NCU"] = "/nonexistent/ncu"
    queue = os.path.join(tmp, "cache", "gpu-0.admitq")
    try:
        dq, logq = grade("good.cu")
        pf0 = dq.get("result", {}).get("cugrade", {}).get("profile") or {}
        os.environ["CUGRADE_NCU"] = "none"
        dn, _ = grade("good.cu")
        os.environ["CUGRADE_NCU"] = "/nonexistent/ncu"
        with open(queue, "w") as f:
            f.write("%d 7 0\n" % os.getpid())  # a live job waiting for admission
        dq, logq = grade("good.cu")
        pf1 = dq.get("result", {}).get("cugrade", {}).get("profile") or {}
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        open(queue, "w").close()
    ok("not installed" in (pf0.get("message") or ""),
       "a GPU and no one waiting: the profile is attempted (here: no ncu)", json.dumps(pf0))
    ok(dn["status"] == "graded" and "profile" not in dn["result"].get("cugrade", {}),
       "CUGRADE_NCU=none: profiling off runner-wide, no profile line at all", json.dumps(dn)[:1500])
    ok(dq["status"] == "graded" and pf1.get("status") == "unavailable" and
       "Not profiled: 1 other submission waited" in (pf1.get("message") or ""),
       "another job waiting for admission: not profiled, and the result says why",
       json.dumps({"profile": pf1, "status": dq.get("status"), "log": logq[-600:]}))

    d, log = grade("good.cu", ["--seed", "0123456789abcdef0123456789abcdef0"])  # 33 digits
    ok(d["status"] == "system_error" and "seed" in d.get("result", {}).get("output", ""),
       "a 33-digit seed is refused by the runner (the harness takes 1 to 32)", json.dumps(d)[:1500])

    # The sanitizer step with a stand-in compute-sanitizer (CI has none): a
    # CUDA_HOME whose bin/ links the real nvcc and holds a script that prints
    # the tool's banner and findings and exits as the real one would.
    fake = os.path.join(tmp, "cuda")
    cs = os.path.join(link_cuda(fake, own=("compute-sanitizer",)), "compute-sanitizer")
    with open(cs, "w") as f:
        f.write("""#!/bin/sh
echo "========= COMPUTE-SANITIZER"
tool=$2
# The tool's own start-up, before its target: hidden behind the compile.
[ -f /work/slowstart.cu ] && sleep 1
# A tool that dies before its go, the first time only (as one killed by
# its wall while the job waited for the GPU, or by the host).
if [ -f /work/diesonce.cu ] && [ ! -e /work/.died-$tool ]; then
  : > /work/.died-$tool; exit 137
fi
while [ "$1" != /lab/launch ]; do shift; done
"$@" >/dev/null
rc=$?
# Work after the program ran (both tools at once: 1.5 s, not 3).
[ -f /work/slow.cu ] && sleep 1.5
# A tool that never ends after its program (the runner's limit ends it).
[ -f /work/slowtool.cu ] && sleep 60
if [ "$tool" = racecheck ] && [ -f /work/racy.cu ]; then
  echo "========= ERROR: Race reported between Read access at 0x60 in /work/racy.cu:1:fill(float*, int)"
  echo "=========     and Write access at 0x40 in /work/racy.cu:1:fill(float*, int) [32 hazards]"
  echo "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)"
  exit 86
fi
echo "========= ERROR SUMMARY: 0 errors"
exit $rc
""")
    os.chmod(cs, 0o755)
    rub = json.load(open(os.path.join(root, "rubrics/fakelab.json")))
    rub["sanitizer"] = {"points": 10, "tools": ["memcheck", "racecheck"]}
    rpath = os.path.join(tmp, "rubric-san.json")
    json.dump(rub, open(rpath, "w"))
    SOURCES["racy.cu"] = SOURCES["good.cu"]
    os.environ["CUDA_HOME"] = fake
    d, log = grade("good.cu", ["--rubric", rpath])
    san = d.get("result", {}).get("cugrade", {}).get("sanitizer") or []
    ok(d["status"] == "graded" and len(san) == 2 and all(x["clean"] for x in san) and
       d["result"]["score"] == d["result"]["max_score"] == 45,
       "memcheck and racecheck exit 0: clean, the sanitizer points are earned", json.dumps(d)[:2500] + log[-1500:])
    AFTER_LINK = ("gpu_wait", "check_run", "device_record", "judge", "sanitize_wait", "hold_wait", "time_run",
                  "time_judge", "baselines", "sanitize")
    SOURCES["slow.cu"] = SOURCES["good.cu"]
    d, log = grade("slow.cu", ["--rubric", rpath])
    ph = d.get("result", {}).get("cugrade", {}).get("phases") or {}
    waited = sum(ph.get(k, 0) for k in AFTER_LINK)
    ok(d["status"] == "graded" and d["result"]["score"] == 45 and 1.4 < waited < 2.8,
       "memcheck and racecheck (1.5 s each here) run at once, beside the check: %.2f s after the link, not 3+"
       % waited, json.dumps(ph))
    # A pre-started run that ended before its go: nothing of the student's
    # ran in it, so it is started again at the go, never judged (it was
    # charged: "the program failed under memcheck").
    SOURCES["diesonce.cu"] = SOURCES["good.cu"]
    d, log = grade("diesonce.cu", ["--rubric", rpath])
    san = d.get("result", {}).get("cugrade", {}).get("sanitizer") or []
    ok(d["status"] == "graded" and len(san) == 2 and all(x["clean"] for x in san) and
       d["result"]["score"] == 45 and log.count("ended at its gate before the go: started again") == 2,
       "a sanitizer that died before its go is started again at the go, not charged: clean, 45 of 45",
       json.dumps(san)[:1500] + log[-1500:])
    SOURCES["slowstart.cu"] = SOURCES["good.cu"]
    d, log = grade("slowstart.cu", ["--rubric", rpath])
    ph = d.get("result", {}).get("cugrade", {}).get("phases") or {}
    waited = sum(ph.get(k, 0) for k in AFTER_LINK)
    ok(d["status"] == "graded" and d["result"]["score"] == 45 and ph.get("compile", 0) > 0.5 and waited < 0.9,
       "the sanitizers start before the compile (1 s start-up here, %.2f s compile): "
       "%.2f s waited after the link" % (ph.get("compile", 0), waited), json.dumps(ph))
    # Uncancelled, the waiting sanitizers would hold the job until their own
    # limit (3x run_seconds from their go, 13 s here); the bound leaves room
    # for a loaded 2-core CI host, not for that wait. The error is ptxas's,
    # so the file gets past the front pass (a parse error would be answered
    # there, before any sanitizer starts) and the full compile reports it.
    SOURCES["broken.cu"] = ('__global__ void k(float* o) { asm volatile("not_a_ptx_op;"); }\n'
                            + SOURCES["good.cu"])
    # The wall clock, not the phases: the job's clock stops at its verdict,
    # before the runner waits for the sanitizers' threads.
    t0 = time.time()
    d, log = grade("broken.cu", ["--rubric", rpath])
    took = time.time() - t0
    left = launches_left()
    ph = d.get("result", {}).get("cugrade", {}).get("phases") or {}
    compiled = seconds_through(ph, "compile")
    after = took - compiled if compiled is not None else 99
    ok(d["status"] == "compile_error" and "front" in ph and not d["result"].get("cugrade", {}).get("sanitizer")
       and not left and after < 4,
       "a compile error past the front pass cancels the waiting sanitizers at once (%.2f s after the compile), "
       "nothing left running" % after, json.dumps(ph) + " left: " + left + " " + d.get("result", {}).get("output", ""))
    SOURCES["hang2.cu"] = SOURCES["hang.cu"]
    t0 = time.time()
    d, log = grade("hang2.cu", ["--rubric", rpath])
    took = time.time() - t0
    left = launches_left()
    ok(d["status"] == "timeout" and not d["result"].get("cugrade", {}).get("sanitizer") and took < 10 and not left,
       "an endless loop with sanitizers: timeout after the check's limit (%.1f s), the waiting sanitizers "
       "ended, not reported" % took, json.dumps(d)[:1500] + " left: " + left)
    SOURCES["slowtool.cu"] = SOURCES["good.cu"]
    t0 = time.time()
    # The sanitizers' deadline, not the timing: the stand-in tool sleeps
    # 60 s, ended at 12 s; the bound leaves room for the job's own
    # interleaved baselines (~3 s here, more on a loaded host).
    d, log = grade("slowtool.cu", ["--rubric", rpath])
    took = time.time() - t0
    san = d.get("result", {}).get("cugrade", {}).get("sanitizer") or []
    ok(d["status"] == "graded" and d["result"]["score"] == 35 and len(san) == 2 and
       all(not x["clean"] and "time limit (12 s)" in (x.get("note") or "") for x in san) and took < 40,
       "a sanitizer run past 3x run_seconds from its go is ended: not clean, the rest graded (%.1f s)" % took,
       json.dumps(san)[:1500])
    d, log = grade("racy.cu", ["--rubric", rpath])
    san = d.get("result", {}).get("cugrade", {}).get("sanitizer") or []
    rc = [x for x in san if x["tool"] == "racecheck"]
    ok(rc and not rc[0]["clean"] and rc[0]["findings"][0]["line"] == 1 and
       rc[0]["findings"][0]["file"] == "racy.cu" and "__syncthreads()" in rc[0]["findings"][0]["hint"] and
       d["result"]["score"] == 35,
       "racecheck exit 86: not clean, racy.cu:1 with the barrier hint, no sanitizer points", json.dumps(san)[:2000])
    with open(cs, "w") as f:
        f.write("#!/bin/sh\necho 'error while loading shared libraries' >&2\nexit 127\n")
    d, log = grade("good.cu", ["--rubric", rpath])
    san = d.get("result", {}).get("cugrade", {}).get("sanitizer") or []
    ok(d["status"] == "graded" and san and all(x.get("runner_problem") for x in san) and
       d["result"]["score"] == 45,
       "a compute-sanitizer that cannot start is the runner's problem: not charged", json.dumps(san)[:2000])
    del os.environ["CUDA_HOME"]
finally:
    shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if failures() else 0)
