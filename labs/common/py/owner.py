"""owner.py - the trusted owner of a Python submission's run (docs/python.md).

    python3 -I -B owner.py LAB check --cases a,b,c --file /work/kernel.py --seed-fd 5
    python3 -I -B owner.py LAB time  --case NAME [--max-ms N] [--gate] --file ... --seed-fd 5
    python3 -I -B owner.py LAB check --pool
    (--seed-fd N: the seed is the text on descriptor N, a pipe, read to its
    end and closed before the tenant exists; the runner's way. --seed HEX
    or CUGRADE_SEED=HEX are for runs by hand: the runner never puts the seed
    on a command line or in an environment, which the student's code could
    read in /proc or in the memory of bwrap's init)
    (--gate: fd 4 is the runner's gate; the samples wait for its 'g';
    --batch K: K calls per sample instead of run_time's choice, for tests)
    (--pool: a warm check run of the runner's pool; its job comes on fd 4,
    the gate: owner_gate.py)

The Python counterpart of the lab's harness (labs/common/harness_common.cu),
with one difference that is the whole point: the student's code does NOT run
in this process. A Python program can read and write every byte of its own
process (ctypes, gc, frames, a made-up __array_interface__ pointer) and every
descriptor it holds, so this process keeps everything that scores -- the
result channel (fd 3, moved to a private close-on-exec descriptor), the
buffers' owner copies, the clock, the output checks -- and starts the
student's code in a separate process (tenant.py) that holds only:

  - one socket to us (SOCK_SEQPACKET: one message per call, no framing to
    forge), and
  - the case's buffers, shared with it (the simulator: memfd; a GPU: CUDA
    IPC handles of allocations made with cudaMalloc, never the pool's
    chunks, so nothing else of ours is mapped with them).

We set ourselves non-dumpable, so a process of the same uid cannot open
/proc/<our pid>/mem or /proc/<our pid>/fd/*; the sandbox's seccomp filter
denies ptrace, process_vm_readv/writev and pidfd_getfd. The tenant may kill
us: then there is no "done" record and the run is the student's
runtime_error. Nothing the tenant says is believed: "done" only means "look
now"; the outputs are read and the time is taken here.

Writes the records of docs/formats.md to the channel, the same as the CUDA
harness (so the lab's own judge judges them), plus
{"type":"compile_error","message":...} before exit 5 when the submission
does not import or its first call does not compile.

Exit: 0 done; 2 a failure of ours (with a harness_error record, only before
any student code ran); 3 the student's process died during a case (the
case's record says so); 5 compile error.
"""
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen  # noqa: E402
import owner_gate  # noqa: E402
from owner_case import Case  # noqa: E402
from owner_gpu import CudaBackend, Probe, SimBackend  # noqa: E402
from owner_tenant import (OOM_TRIES, OOM_WAIT_S, Tenant, call_oom_whose, oom_whose,  # noqa: E402
                          one_blas_thread, runtime_msg)

one_blas_thread()  # before anything of ours imports NumPy

CALL_LIMIT_S = 3600      # the sandbox's wall limit ends a stuck run long before
MAX_SAMPLES, MIN_SAMPLES, TARGET_REL_ERR = 1000, 10, 0.01
# A timed sample is a batch of calls on distinct inputs (run_time): as many
# as make the batch's calls last BATCH_MS by their own time per call (a
# first batch sized by the warm-up's single call, whose round trip makes it
# too small, measures it), at most BATCH_MAX, their buffers at most half
# the GPU's free memory (the samples hold the GPU alone). A sample's fixed
# cost (0.4-1.1 ms on an H200: the round trip and the switches between the
# tenant's CUDA context and ours) is then a few percent of it
# (docs/python.md, "What a Python timing includes"). A batch's new buffers
# reach the tenant in "map" messages of at most MAP_FDS descriptors
# (SCM_MAX_FD is 253) before the call that names them by id.
BATCH_MS, BATCH_MAX, MAP_FDS = 20.0, 128, 240

CHANNEL = None           # our private descriptor of the result channel
GATE = None              # --gate, --pool: our private descriptor of the runner's gate
STUDENT_RAN = False
HIDDEN = {}              # lab.json "python": the hidden libraries' names and message
CPU_TIMING = {}          # time_cpu's fields for the timing record (a lab with cpu_baseline)
HOLD = {}                # a time run's steps after its gate, s (hold_step): send_hold
HOLD_T = [None]          # when the last step ended
CPU_WARMUP, CPU_SAMPLES, CPU_BUDGET_S = 1, 5, 20.0


def hold_step(name):
    """A time run's step (after the gate: what holds the GPU alone) ends
    now: its seconds go to the hold record (send_hold), so that a hold can
    be taken apart (tests/gpu/py_timing_table.py prints them). None: the
    hold starts."""
    now = time.perf_counter()
    if name is not None and HOLD_T[0] is not None:
        HOLD[name] = round(now - HOLD_T[0], 4)
    HOLD_T[0] = now


def send_hold():
    """The hold's steps as a record of their own, {"type": "hold", step:
    seconds, ...}, sent before the timing record: the judges' parser
    (labs/common/judge_parse.h) reads flat records only, and refuses a
    channel at its first record that is not one (a nested "hold_s" in the
    timing record cost every Python job of the C-judged labs its timing).
    The runner keeps the first one (runner/run/channel.c)."""
    send_record({"type": "hold", **HOLD})


def die(msg, code=2, claim=False):
    """A failure of ours: a harness_error record (only before any student
    code ran: after that it may be the student's doing; claim: even then,
    for a mistake of our own code, guarded), then exit."""
    sys.stderr.write("harness: %s\n" % msg)
    if CHANNEL is not None and (claim or not STUDENT_RAN):
        send_record({"type": "harness_error", "message": msg[:400]})
    sys.exit(code)


def channel_limits():
    """CHANNEL_FIELD_MAX and CHANNEL_CUT_MARK from labs/common/channel_limits.h,
    the one place they are written (the CUDA harness and the judge include
    it)."""
    import re
    with open(os.path.join(HERE, "..", "channel_limits.h")) as f:
        h = f.read()
    n = re.search(r"^#define CHANNEL_FIELD_MAX (\d+)$", h, re.M)
    m = re.search(r'^#define CHANNEL_CUT_MARK "([^"\\]*)"$', h, re.M)
    return int(n.group(1)), m.group(1)


FIELD_MAX, CUT_MARK = channel_limits()


def field(s):
    """s cut to FIELD_MAX bytes as the judge stores it (after JSON
    unescaping: one byte per character, two for one outside the BMP, which
    json.dumps writes as a surrogate pair), ending in CUT_MARK when cut."""
    cost, keep = 0, len(s)
    for i, c in enumerate(s):
        cost += 2 if ord(c) > 0xFFFF else 1
        if cost > FIELD_MAX:
            keep = i
            break
    else:
        return s
    room, cost = FIELD_MAX - len(CUT_MARK), 0
    for i, c in enumerate(s[:keep]):
        cost += 2 if ord(c) > 0xFFFF else 1
        if cost > room:
            return s[:i] + CUT_MARK
    return s[:keep] + CUT_MARK


def send_record(rec, payload=b""):
    """One record on the channel; every string field within the channel's
    one limit (field)."""
    rec = {k: field(v) if isinstance(v, str) else v for k, v in rec.items()}
    data = json.dumps(rec, separators=(",", ":"), allow_nan=False).encode() + b"\n" + payload
    while data:
        n = os.write(CHANNEL, data)
        data = data[n:]


def private_fd(fd, missing):
    """Our own descriptor of inherited fd: close-on-exec (and closed in the
    tenant by close_fds), the original closed, so the tenant never holds it.
    A missing fd is our failure: die with the sentence missing."""
    try:
        os.fstat(fd)
    except OSError:
        die(missing)
    mine = os.dup(fd)
    os.set_inheritable(mine, False)
    os.close(fd)
    return mine


def take_channel():
    """fd 3 must be the channel, ours alone."""
    global CHANNEL
    CHANNEL = private_fd(3, "fd 3 (the result channel) is not open; run me as "
                            "`owner.py ... 3>channel`")


def take_gate():
    """--gate: fd 4 is a socket to the runner (job_time.c's gate), ours
    alone: only we can say we are ready."""
    global GATE
    GATE = private_fd(4, "--gate: fd 4 (the runner's gate) is not open")


def take_gates(o):
    """The command line's --gate (a time run's timing gate) and --pool (a
    warm check run, or a warm time run with its --gate), checked, and fd 4
    taken once for either: both owners' (this one's and the profiling
    lab's lab.py) one rule."""
    if o.get("gate") and o["mode"] != "time":
        die("--gate is for time runs only")
    if o.get("pool") and (o["mode"] == "time") != bool(o.get("gate")):
        die("--pool: a check run, or a time run with its --gate")
    if o.get("gate") or o.get("pool"):
        take_gate()


def gate_pass():
    """Our start-up and the tenant's imports ran under the GPU's shared
    lock, before any of the student's code; what follows (their module, its
    JIT, the samples) needs the GPU alone. Say 'r' and wait for 'g' (the
    runner holds the exclusive lock then). Without a gate: at once."""
    if GATE is None:
        return
    if not owner_gate.wait_go(GATE):
        die("the runner closed the timing gate before the samples")
    os.close(GATE)


def pool_wait(keep):
    """--pool: our warm start is done; the job the runner gives this run
    (owner_gate.wait_job), and its seed. The gate is private to us, so the
    seed reaches no process of the student's, as --seed-fd's does not. A
    gate closed without a job: we end quietly. keep: a time run's timing
    gate follows on it."""
    try:
        job = owner_gate.wait_job(GATE)
        if job is None:
            sys.exit(0)
        if not keep:
            os.close(GATE)
        return job, gen.seed_parse_wide(job["seed"])
    except ValueError as e:
        die("--pool: the runner's job line: %s" % e)


def not_dumpable():
    """prctl(PR_SET_DUMPABLE, 0): /proc/<pid>/mem, /proc/<pid>/fd and ptrace
    are then closed to processes of our uid without CAP_SYS_PTRACE."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(4, 0, 0, 0, 0) != 0:   # PR_SET_DUMPABLE = 4
        die("prctl(PR_SET_DUMPABLE, 0) failed")


# ---------------------------------------------------------------- backends
# SimBackend (Numba's simulator) and CudaBackend (CuPy): owner_gpu.py.


def backend(blocking=False):
    """blocking: a check run's context waits for the GPU asleep (vmm.py
    blocking_sync)."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return SimBackend()
    try:
        return CudaBackend(blocking=blocking)
    except Exception as e:  # no CuPy, no GPU: ours
        hint = ""
        if HIDDEN.get("hide"):
            hint = (" (this lab hides libraries from Python runs, lab.json python.hide: if this "
                    "CuPy needs one of them at import, it cannot be the owner's backend here)")
        die("the GPU backend could not start (CuPy): %s%s" % (e, hint))


# ---------------------------------------------------------------- the lab

def load_lab(lab_dir):
    with open(os.path.join(lab_dir, "lab.json")) as f:
        doc = json.load(f)
    ns = {}
    with open(os.path.join(lab_dir, "lab.py")) as f:
        exec(compile(f.read(), os.path.join(lab_dir, "lab.py"), "exec"), ns)
    cases = {c["name"]: c["params"] for c in doc["cases"]}
    return doc, ns, cases


# ---------------------------------------------------------------- the tenant

# owner_tenant.py: Tenant, the student's process and our socket to it.


def text(s, n):
    return str(s)[:n] if s is not None else ""


def hidden_hint(msg):
    """A friendlier word when a failure names a library the lab hides (the
    fence is the library's absence from the sandbox, not this)."""
    low = msg.lower()
    if HIDDEN.get("hide_message") and any(n in low for n in HIDDEN.get("hide_names", [])):
        return "%s (%s)" % (HIDDEN["hide_message"], msg)
    return msg


def case_failed(name, ans, tenant):
    """The record of a case whose call did not return normally."""
    if ans is None:
        return {"type": "case", "name": name, "status": "runtime_error",
                "error": tenant.death(), "error_name": "python_process",
                "cause": "the harness got no answer from your process: it crashed, exited or "
                         "closed its socket", "fatal": True}
    return {"type": "case", "name": name, "status": "runtime_error",
            "error": hidden_hint(text(ans.get("error"), 300)), "error_name": "python_exception",
            "cause": text(ans.get("where"), 1500), "fatal": False}


def call(tenant, case):
    global STUDENT_RAN
    msg, fds = case.describe()
    STUDENT_RAN = True
    t0 = time.perf_counter()
    ans = tenant.ask(msg, fds)
    return ans, t0


def load(tenant, path):
    """Import the student's module (path) in the tenant: a SyntaxError, an
    import that fails or a missing function is a compile error (exit 5)."""
    global STUDENT_RAN
    STUDENT_RAN = True
    ans = tenant.ask({"op": "load", "path": path})
    if ans is None:
        compile_error("your module could not be loaded: %s" % tenant.death())
    if not ans.get("ok"):
        compile_error(text(ans.get("error"), 300) + "\n" + text(ans.get("where"), 3000))


def compile_error(message):
    send_record({"type": "compile_error", "message": hidden_hint(message)})
    sys.exit(5)


def warm_up(tenant, be, lab, cases, first):
    """One call on the lab's first case with throwaway inputs before anything
    is judged or timed: the JIT compiles here. A compile error of Numba or
    CuPy (their exception types, not the student's text) is a compile error."""
    c = new_case(tenant, be, lab, first, cases[first], 0x5EED0000C0FFEE, False)
    try:
        c.poison()
        ans, _ = call(tenant, c)
        if ans is None:
            return None
        if not ans.get("ok") and ans.get("compile"):
            compile_error(text(ans.get("error"), 2000) + "\n" + text(ans.get("where"), 1500))
        return ans
    finally:
        c.free()


def new_case(tenant, be, lab, name, params, cs, guard):
    """Case(...) for case name; out of the GPU's memory, ours or the
    student's (owner_tenant.py oom_whose): what the tenant holds decides,
    once the student's code has run (tenant None: before it exists, ours)."""
    for attempt in range(OOM_TRIES):
        try:
            return Case(be, lab, params, cs, guard)
        except be.oom:
            held = tenant.held() if tenant is not None and STUDENT_RAN else 0
            rec, ours = oom_whose(held, name, attempt)
            if rec:
                send_record(rec)
                sys.exit(3)
            if ours:
                die(ours, claim=True)
            time.sleep(OOM_WAIT_S)


def run_check(tenant, be, lab, cases, names, seed, guard):
    for name in names:
        check_case(tenant, be, lab, name, cases[name], gen.case_seed(seed, name), guard)


def check_case(tenant, be, lab, name, params, cs, guard):
    """One judged case: fresh buffers, one call, its record. A call that
    ran out of device memory within what the job may use is called again
    on fresh buffers after OOM_WAIT_S (other jobs' memory), OOM_TRIES in
    all, then ours; past it, the student's (owner_tenant.py
    call_oom_whose)."""
    for attempt in range(OOM_TRIES):
        c = new_case(tenant, be, lab, name, params, cs, guard)
        try:
            c.poison()
            ans, t0 = call(tenant, c)
            ms = (time.perf_counter() - t0) * 1e3
            request = oom_asked(ans)
            if request is not None:
                rec, ours = call_oom_whose(tenant.held(), request, be.free_bytes(), name, attempt)
                if ours:
                    die(ours, claim=True)
                if rec is None:
                    time.sleep(OOM_WAIT_S)
                    continue
                send_record(rec)
                return
            if ans is None or not ans.get("ok"):
                rec = case_failed(name, ans, tenant)
                send_record(rec)
                if rec["fatal"]:
                    sys.exit(3)
                return
            if host_copy_refused(lab, ans):
                send_record(host_copy_record(name, ans))
                return
            report_output(name, c, cs, ms)
            return
        finally:
            c.free()


def oom_asked(ans):
    """The bytes a failed call's out-of-device-memory error asked for
    (tenant.py oom_request: 0 unknown), or None: not one. The tenant's
    answer is data: a number in range or nothing."""
    if ans is None or ans.get("ok"):
        return None
    n = ans.get("oom")
    return n if isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 1 << 62 else None


def host_copy_refused(lab, ans):
    """The host-library policy (docs/python.md, "Host libraries"): in a lab
    that teaches a GPU kernel (lab.py HOST_COPY_ALLOWED false, the default),
    a call that copied any of its inputs to the host computed the answer
    there (NumPy, BLAS, a Python loop): the case gets no credit. The count
    comes from the tenant: a rule that a correct host solution cannot pass
    by mistake, not a fence against a student who patches the tenant."""
    return not lab.get("HOST_COPY_ALLOWED", False) and int(ans.get("host_copy") or 0) > 0


def host_copy_record(name, ans):
    return {"type": "case", "name": name, "status": "runtime_error",
            "error_name": "python_host",
            "error": "your function copied %d bytes of its inputs (%s) to the host"
                     % (int(ans.get("host_copy") or 0), text(ans.get("host_copy_from"), 200)),
            "cause": "this lab grades a GPU kernel: compute the answer on the device (Numba "
                     "@cuda.jit, CuPy) from the device arrays you are given; copying them to "
                     "the host (copy_to_host, np.asarray, cupy.asnumpy) and computing with "
                     "NumPy or BLAS gets no credit", "fatal": False}


def report_output(name, c, cs, ms):
    fields, payload = c.record()
    mod = c.inputs_modified(cs)
    rec = {"type": "case", "name": name, "status": "ok"}
    rec.update(fields)
    rec.update({"bytes": len(payload), "inputs_modified": mod > 0, "modified_count": mod,
                "oob_writes": c.oob_writes(), "call_ms": round(ms, 6)})
    send_record(rec, payload)


def median_rel_err(xs):
    s = sorted(xs)
    n = len(s)
    med = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    lo = max(0, int(math.floor(n / 2 - 0.98 * math.sqrt(n))))
    hi = min(n - 1, int(math.ceil(n / 2 + 0.98 * math.sqrt(n))))
    return med, ((s[hi] - s[lo]) / 2 / med if med > 0 else float("inf"))


def time_prepare(be, lab, cases, name, seed, guard):
    """The timed case's buffers and our own rehearsal, before the student's
    process has a CUDA context: CuPy loads each of our kernels (the
    generator, the reference, the checks, the probe, the L2 flush) on its
    first use, or compiles those not in the lab's kept folder (owner_gpu.py
    kept_kernels), and that must not eat the sample budget (seen on an
    H100: 3 embedding samples in 3 s without it) nor the GPU's exclusive
    hold (the gate comes after this). The check sees a poisoned output
    here: a lab's sample_ok does the same work whatever the output holds
    (tests/labs/sample_check.t). Returns the Timed."""
    t = Timed(be, lab, cases[name], guard, name)
    c = t.cases[0]
    c.fill(int.from_bytes(os.urandom(8), "little"))
    c.poison()
    lab["sample_ok"](be.xp, lab["reference"](be.xp, t.inputs(c)), c.sample_arg())
    p = Probe(be, [c])
    p.same(p.read())
    c.inputs_modified(0)
    c.oob_writes()
    be.flush_l2()
    be.sync()
    return t


class Timed:
    """The timed case's batch: its cases (the first made at time_prepare,
    the others once the batch's size is known), each with its own buffers
    and fresh inputs per sample."""

    def __init__(self, be, lab, params, guard, name):
        self.be, self.lab, self.params, self.guard = be, lab, params, guard
        # before the tenant exists: out of memory here is ours (new_case)
        self.cases = [new_case(None, be, lab, name, params, 0, guard)]
        self.sent = set()   # the sets whose buffers the tenant has mapped

    def map_new(self, tenant, name):
        """Send the tenant the sets it has not mapped yet, in "map" messages
        of at most MAP_FDS descriptors: a batch's call then names its sets
        by id only, with no descriptor and no description."""
        new = [c for c in self.cases if c.serial not in self.sent]
        while new:
            sets, fds = [], []
            while new:
                m, f = new[0].describe()    # the buffers' own descriptors, kept until free
                if sets and len(fds) + len(f) > MAP_FDS:
                    break
                for d in m["args"]:
                    if "fd_index" in d:
                        d["fd_index"] += len(fds)
                fds.extend(f)
                sets.append([new.pop(0).serial, m["args"]])
            ans = tenant.ask({"op": "map", "sets": sets}, fds)
            if ans is None or not ans.get("ok"):
                timing_failed(case_failed(name, ans, tenant))
            self.sent.update(i for i, _ in sets)

    def inputs(self, c):
        return {m["name"]: c.views[m["name"]] for m in c.meta if m["role"] == "in"}

    def grow(self, k):
        """k cases in all, fewer when their buffers would pass half the
        GPU's free memory. Called after the gate: nothing else runs on the
        GPU until the samples end, and they are freed then."""
        c = self.cases[0]
        size = sum(b["size"] for b in c.bufs.values())
        spare = self.be.spare_bytes()
        while len(self.cases) < k and spare >= size:
            try:
                self.cases.append(Case(self.be, self.lab, self.params, 0, self.guard))
            except self.be.oom:   # less than it looked: a smaller batch, no failure
                break
            spare -= size

    def free(self):
        for c in self.cases:
            c.free()


def batch_size(per_call_ms, forced):
    """How many calls one sample times: enough to last BATCH_MS by a time
    per call (the warm-up's single call, its round trip included, for the
    first batch; then a batch's time over its size), at most BATCH_MAX."""
    if forced:
        return max(1, min(BATCH_MAX, forced))
    return max(1, min(BATCH_MAX, int(math.ceil(BATCH_MS / max(per_call_ms, 1e-3)))))


def round_trip(tenant, be, t):
    """The part of a sample's fixed cost we can measure before any of the
    student's code is in the tenant (a trusted answer): our message, the
    tenant's wait for its GPU work (none), its answer and our probe read.
    Median of 11, in ms; reported, never subtracted. It leaves out the
    switches between the tenant's CUDA context and ours that a call with
    GPU work adds (the timing record's single_ms against its median shows
    those)."""
    p = Probe(be, t.cases[:1])
    xs = []
    for _ in range(11):
        t0 = time.perf_counter()
        ans = tenant.ask({"op": "sync"})
        p.read()
        xs.append((time.perf_counter() - t0) * 1e3)
        if ans is None or not ans.get("ok"):
            die("the student's Python process did not answer before its code was loaded: %s"
                % (text(ans.get("error"), 300) if ans else tenant.death()))
    return median_rel_err(xs)[0]


def timing_failed(rec):
    """A call of the timed case failed: its record, and its words on stderr
    too (the timing run's output is the feedback when no timing record
    comes), then exit."""
    send_record(rec)
    sys.stderr.write("your function failed in the timed case %s: %s\n%s\n"
                     % (rec["name"], rec.get("error", ""), rec.get("cause", "")))
    sys.exit(3 if rec["fatal"] else 0)


def time_warm_up(tenant, t, name):
    """Untimed calls (at least 2 and 30 ms, at most 20) on the timed case:
    the student's caches and clocks come up. Returns the fastest call's
    time, the round trip and our probe read included (batch_size's input;
    not the median: the first call may still compile for this case's
    shapes), and the number of calls."""
    c, p = t.cases[0], Probe(t.be, t.cases[:1])
    start, xs = time.perf_counter(), []
    while True:
        c.poison()
        ans, t0 = call(tenant, c)
        p.read()
        xs.append((time.perf_counter() - t0) * 1e3)
        if ans is None or not ans.get("ok"):
            timing_failed(case_failed(name, ans, tenant))
        el = (time.perf_counter() - start) * 1e3
        if len(xs) >= 20 or (len(xs) >= 2 and el >= 30) or el >= t.max_ms / 4:
            return min(xs), len(xs)


def time_sample(tenant, t, name):
    """One sample: fresh inputs for each call of the batch (a seed from
    os.urandom each, not the run's: unpredictable even with it) and their
    references, outputs poisoned, L2 flushed, all before the clock; the
    clock runs from our message to our probe read of every output of the
    batch; then every output is checked whole (lab.py sample_ok) and the
    probed bytes must be unchanged. Returns (ms per call, all right)."""
    be, lab = t.be, t.lab
    refs = []
    for c in t.cases:
        c.fill(int.from_bytes(os.urandom(8), "little"), sync=False)
        refs.append(lab["reference"](be.xp, t.inputs(c)))
    for c in t.cases:
        c.poison(sync=False)
    be.sync()                           # our own work done before the clock
    probe = Probe(be, t.cases)
    t.map_new(tenant, name)
    msg = {"op": "call", "set_ids": [c.serial for c in t.cases]}
    be.flush_l2()
    global STUDENT_RAN
    STUDENT_RAN = True
    t0 = time.perf_counter()
    ans = tenant.ask(msg)
    seen = probe.read()                 # our read of the outputs stops the clock
    t1 = time.perf_counter()
    if ans is None or not ans.get("ok"):
        timing_failed(case_failed(name, ans, tenant))
    good = all(lab["sample_ok"](be.xp, r, c.sample_arg()) for r, c in zip(refs, t.cases))
    return (t1 - t0) * 1e3 / len(t.cases), good and probe.same(seen)


def run_time(tenant, be, lab, name, seed, max_ms, prepared, rt_ms, forced_batch=0):
    """Samples timed here (time_sample): an answer sent before the GPU work
    is done does not stop the clock (our read waits or finds the poison),
    and an answer replayed from an earlier call, keyed on a pointer, an
    id() or a fingerprint of the inputs, is wrong: one wrong sample flags
    the timing (GPU MODE's result-replay family). A sample is a batch of
    calls on distinct buffers, so that our round trip is a few percent of
    it; its time is the batch's over its size."""
    t = prepared
    t.max_ms = max_ms
    single_ms, warm = time_warm_up(tenant, t, name)
    hold_step("warm_up")
    t.sent.add(t.cases[0].serial)       # mapped by the warm-up's calls
    t.grow(batch_size(single_ms, forced_batch))
    if len(t.cases) > 1:
        # The new buffers mapped in the tenant, and one batch run, untimed.
        time_sample(tenant, t, name)
        if not forced_batch:
            # Its time per call, the fixed cost now spread over the batch,
            # sizes the batch again (the warm-up's single call is mostly
            # round trip for a fast kernel), and one more batch, untimed.
            per_call, _ = time_sample(tenant, t, name)
            k = batch_size(per_call, 0)
            if k > len(t.cases):
                t.grow(k)
                time_sample(tenant, t, name)
    hold_step("batch")
    samples, wrong = [], 0
    start = time.perf_counter()
    while True:
        ms, good = time_sample(tenant, t, name)
        wrong += 0 if good else 1
        samples.append(ms)
        med, rel = median_rel_err(samples)
        n = len(samples)
        el = (time.perf_counter() - start) * 1e3
        if (n >= MIN_SAMPLES and rel < TARGET_REL_ERR) or n == MAX_SAMPLES or \
                (el >= max_ms and n >= 3) or el >= 2 * max_ms:
            break
    hold_step("samples")
    seed2 = gen.recheck_seed(seed)
    k = len(t.cases)
    send_hold()
    send_record({"type": "timing", "name": name, "samples_ms": [round(x, 6) for x in samples],
                 "median_ms": round(med, 6), "rel_err": round(rel, 6) if rel != float("inf") else 1e9,
                 "n": n, "converged": n >= MIN_SAMPLES and rel < TARGET_REL_ERR, "warmup": warm,
                 "event_median_ms": 0.0, "flush_bytes": 0, "seed2": "%016x" % seed2,
                 "wrong_samples": wrong, "timed_by": "owner", "batch": k,
                 "single_ms": round(single_ms, 6), "roundtrip_ms": round(rt_ms, 6), **CPU_TIMING})
    c = t.cases[0]
    cs2 = gen.case_seed(seed2, name)
    c.fill(cs2)
    c.poison()
    ans, t0 = call(tenant, c)
    ms = (time.perf_counter() - t0) * 1e3
    if ans is None or not ans.get("ok"):
        rec = case_failed(name + "@recheck", ans, tenant)
        send_record(rec)
        if rec["fatal"]:
            sys.exit(3)
    elif wrong:
        # A sample that was wrong while the re-check is right: the output
        # was not there when the call "returned". The re-check is reported
        # as unwritten so that the judge fails it and the timing is flagged.
        send_record({"type": "case", "name": name + "@recheck", "status": "runtime_error",
                     "error": "%d of %d timed samples (batches of %d calls) had an output that was "
                              "not right when the call returned" % (wrong, len(samples), k),
                     "error_name": "python_timing",
                     "cause": "every timed call must leave the right answer in the output when "
                              "it returns: wait for your kernels (cuda.synchronize()) and do not "
                              "reuse an answer from an earlier call", "fatal": False})
    else:
        report_output(name + "@recheck", c, cs2, ms)
    t.free()


def time_cpu(be, lab, cases, name, seed):
    """The CPU baseline of a lab whose lab.py has cpu_baseline (the pipeline
    lab: its NumPy pipeline), timed here, in the timing run, on this host,
    on the timed case's inputs (as host arrays), BEFORE the student's
    process exists: no student code runs while NumPy is timed (a thread of
    theirs could otherwise slow NumPy down and inflate the speedup).
    CPU_WARMUP untimed calls (page faults, NumPy's allocator), then
    CPU_SAMPLES timed calls (at least 3, at most CPU_BUDGET_S seconds of
    samples); each sample is the CPU time this process took for the call
    (time.process_time: every thread of ours; NumPy's pipeline is one
    thread's work), not the wall clock, which on a host a burst keeps busy
    also counts the waits for a CPU and made NumPy look slower and the
    student's speedup bigger the busier the host was. Goes into the timing
    record as cpu_ms (the median) and cpu_samples_ms; the judge passes
    cpu_ms on, and the runner's speedup_vs_cpu uses it instead of a cached
    baseline."""
    np = be.np
    c = new_case(None, be, lab, name, cases[name], gen.case_seed(seed, name), False)
    try:
        host = {m["name"]: be.to_host(c.views[m["name"]]) for m in c.meta if m["role"] == "in"}
    finally:
        c.free()
    for _ in range(CPU_WARMUP):
        lab["cpu_baseline"](np, host)
    samples, start = [], time.perf_counter()
    while len(samples) < CPU_SAMPLES and (len(samples) < 3 or
                                          time.perf_counter() - start < CPU_BUDGET_S):
        t0 = time.process_time()
        lab["cpu_baseline"](np, host)
        samples.append((time.process_time() - t0) * 1e3)
    med, _ = median_rel_err(samples)
    CPU_TIMING.update({"cpu_ms": round(med, 6), "cpu_samples_ms": [round(x, 6) for x in samples],
                       "cpu_warmup": CPU_WARMUP, "cpu_timed_by": "owner", "cpu_clock": "process_cpu"})


def run_seed(o):
    """The run's seed, before the tenant exists. The runner's way is
    --seed-fd N: a pipe only this process holds (the runner wrote the seed
    and closed its end), read to its end and closed here, so no process of
    the student's can ever read it: not on a command line, not in an
    environment, not in bwrap's memory (docs/python.md, "Threat model").
    By hand: CUGRADE_SEED or --seed. The tenant's environment never has it."""
    env = os.environ.pop("CUGRADE_SEED", None)
    if "seed_fd" in o:
        try:
            s = owner_gate.read_seed(int(o["seed_fd"]))
        except (ValueError, OSError, UnicodeError):
            die("--seed-fd: not a descriptor holding a seed")
    else:
        s = env or o.get("seed", "")
    try:
        return gen.seed_parse_wide(s)
    except ValueError:
        die("--seed: 1 to 32 hex digits")


def parse(argv):
    if len(argv) < 2 or argv[1] not in ("check", "time", "warm"):
        die("usage: owner.py LAB check|time --seed HEX (--cases a,b | --case C) --file F\n"
            "       owner.py LAB warm")
    opts = {"lab": argv[0], "mode": argv[1], "max_ms": 3000.0, "guard": True}
    i = 2
    while i < len(argv):
        a = argv[i]
        if a == "--no-guard":
            opts["guard"] = False
            i += 1
            continue
        if a in ("--gate", "--pool"):
            opts[a[2:]] = True
            i += 1
            continue
        if i + 1 >= len(argv) or a not in ("--seed", "--seed-fd", "--cases", "--case", "--max-ms",
                                           "--file", "--batch"):
            die("bad argument %r" % a)
        opts[a[2:].replace("-", "_")] = argv[i + 1]
        i += 2
    return opts


def main():
    take_channel()
    not_dumpable()
    o = parse(sys.argv[1:])
    take_gates(o)
    if "/" in o["lab"] or o["lab"].startswith("."):
        die("bad lab name")
    labs = os.environ.get("CUGRADE_LABS", os.path.join(HERE, "..", ".."))
    doc, lab, cases = load_lab(os.path.join(labs, o["lab"]))
    HIDDEN.update(doc.get("python") or {})
    if o["mode"] == "warm":
        sys.exit(warm(doc, lab, cases))
    tenant = None
    if o.get("pool"):
        # The tenant first (its imports beside ours), with no file yet:
        # "load" names it.
        tenant = Tenant(["-", lab["SYMBOL"]], CALL_LIMIT_S)
        try:
            tenant.send({"op": "imports"})
            owner_gate.preload()
            runtime_ready(tenant)
            job, seed = pool_wait(o.get("gate"))
        except BaseException:  # noqa: B902 - sys.exit too: the tenant goes with us
            tenant.close()
            raise
        o["file"] = job["file"]
        if o["mode"] == "check":
            o["cases"] = job["cases"]
            tenant.send(runtime_msg(o["mode"]))   # its context, beside our backend's
    else:
        seed = run_seed(o)
    if "file" not in o:
        die("--file is required")
    names = o["cases"].split(",") if o["mode"] == "check" and "cases" in o else [o.get("case", "")]
    for n in names:
        if n not in cases:
            die("unknown case %r" % n)
    max_ms = float(o["max_ms"])
    try:
        if o["mode"] == "check" and tenant is None:
            # The tenant's interpreter, Numba, CuPy and context come up
            # beside ours (backend): nothing of the student's runs until
            # load, and the seed was read and closed above.
            tenant = start_tenant(o, lab)
        be = backend(blocking=o["mode"] == "check")
        send_record(be.device_record())
        if o["mode"] == "time" and "cpu_baseline" in lab:
            time_cpu(be, lab, cases, names[0], seed)   # before the tenant exists
        prepared = time_prepare(be, lab, cases, names[0], seed, o["guard"]) \
            if o["mode"] == "time" else None
        if tenant is None:
            tenant = start_tenant(o, lab)
        elif not tenant.asked:   # a warm time run's: its context now
            tenant.send(runtime_msg(o["mode"]))
        runtime_ready(tenant)
        if GATE is not None and o.get("gate"):
            # The gate (time runs): the tenant's interpreter, its libraries
            # and its context came up under the shared lock; then we wait
            # for the GPU alone. No process here has run the student's code
            # before the gate, so nothing of theirs can run on the GPU while
            # we wait holding no lock (and while another job is timed).
            be.sync()
            gate_pass()
        hold_step(None)
        rt_ms = round_trip(tenant, be, prepared) if o["mode"] == "time" else 0.0
        hold_step("round_trip")
        load(tenant, o["file"])
        hold_step("load")
        ans = warm_up(tenant, be, lab, cases, doc["cases"][0]["name"])
        hold_step("first_call")
        if ans is None:
            send_record(case_failed(names[0], None, tenant))
            sys.exit(3)
        if o["mode"] == "check":
            run_check(tenant, be, lab, cases, names, seed, o["guard"])
        else:
            run_time(tenant, be, lab, names[0], seed, max_ms, prepared, rt_ms,
                     int(o.get("batch", 0)))
        send_record({"type": "done"})
    finally:
        if tenant is not None:
            tenant.close()


def rehearse(be, lab, c, cs):
    """What an owner does with a case's buffers, without a tenant: fill,
    poison, a timed sample's reference and check, the probe, the checks of
    the inputs and guards, the record, the L2 flush. Each of our CuPy
    kernels compiles on its first use here (warm)."""
    c.fill(cs)
    c.poison()
    if "reference" in lab and "sample_ok" in lab:
        inputs = {m["name"]: c.views[m["name"]] for m in c.meta if m["role"] == "in"}
        lab["sample_ok"](be.xp, lab["reference"](be.xp, inputs), c.sample_arg())
    p = Probe(be, [c])
    p.same(p.read())
    c.inputs_modified(cs)
    c.oob_writes()
    c.record()
    be.flush_l2()
    be.sync()


def warm(doc, lab, cases):
    """`owner.py LAB warm` (the runner's prepare, runner/grade/python.c
    python_cupy_warm), with CuPy's kernel cache on disk
    (HOME/.cupy/kernel_cache), on each case's buffers: our own kernels
    (rehearse: the generator, poison, reference, checks, probe) and the
    lab's cupy_warm (lab.py: the CuPy calls a student's first version most
    likely makes). The runner keeps those kernels: each Python job's owner
    reads them, read-only (owner_gpu.py kept_kernels), instead of compiling
    its own in every process; and each job's tenant starts with a copy in
    its /work/.cupy, so a student's cp.sum is not compiled again on every
    submission. Our code and the lab's only: no tenant, no student file. A
    case that cannot be warmed (memory) is skipped. Returns the exit
    status."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return 0
    try:
        be = CudaBackend(cache_in_memory=False)
    except Exception as e:  # noqa: BLE001 - no CuPy, no GPU: nothing to keep
        sys.stderr.write("owner.py warm: no CuPy backend: %s\n" % e)
        return 0
    for c in doc["cases"]:
        case = None
        try:
            case = Case(be, lab, cases[c["name"]], 0x5EED0000C0FFEE, True)
            rehearse(be, lab, case, 0x5EED0000C0FFEE)
            views = {m["name"]: case.views[m["name"]].reshape(m["shape"]) for m in case.meta}
            if "cupy_warm" in lab:
                lab["cupy_warm"](be.cp, views)
            be.sync()
        except Exception as e:  # noqa: BLE001 - a case too big here: the others still count
            sys.stderr.write("owner.py warm: case %s: %s: %s\n" % (c["name"], type(e).__name__, e))
        finally:
            if case is not None:
                case.free()
    return 0


def start_tenant(o, lab):
    """The student's process, and our first question to it, unanswered yet
    (runtime_ready reads the answer): Numba, CuPy and the tenant's CUDA
    context, before any of the student's code is loaded."""
    tenant = Tenant([o["file"], lab["SYMBOL"]], CALL_LIMIT_S)
    tenant.send(runtime_msg(o["mode"]))
    return tenant


def runtime_ready(tenant):
    """The answer to start_tenant's question. Numba in the student's
    process, before any of the student's code runs there: a host whose
    Numba does not import or start is ours (the one answer of the tenant's
    we believe, since nothing of the student's has run yet)."""
    ans = tenant.answer() if tenant.asked else None
    if ans is None or not ans.get("ok"):
        die("the student's Python process could not start Numba: %s"
            % (text(ans.get("error"), 300) if ans else tenant.death()))


# Exceptions that a mistake in our own code raises (a CudaBackend attribute
# that shadowed its own method ended every Python check run on a GPU as the
# student's runtime_error, 2026-12-01). Any other exception (the run's memory
# or processes run out, the GPU fails) stays the run's, as before. A tenant
# that answers what the owner does not expect could raise one of these too:
# it then gets system_error (retried, never graded), not a verdict: no gain.
OUR_BUGS = (TypeError, AttributeError, NameError, KeyError, IndexError, AssertionError,
            ZeroDivisionError)


def guarded(fn):
    """Run fn (main): an exception of OUR_BUGS is a failure of ours, said
    as one (a harness_error record, exit 2: system_error, retried) even
    after the student's code ran, never charged as the student's crash."""
    try:
        return fn()
    except OUR_BUGS as e:
        import traceback
        traceback.print_exc()
        die("the owner failed (%s: %s)" % (type(e).__name__, text(e, 200)), claim=True)


if __name__ == "__main__":
    guarded(main)
