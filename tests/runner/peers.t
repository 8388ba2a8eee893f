#!/usr/bin/env python3
"""CI (no GPU): the runners of one host share a burst (runner/service/peers.h). The
GPU lane is held full by hand, as in lanes.t (a GPU memory ledger whose one
live entry takes all of CUGRADE_GPU_MEMORY_MB), so claimed jobs stay in
flight, and the fake server holds 12 jobs before any runner asks.
  - A peer that is starting with 3 jobs in flight (a process named
    cugrade-runner whose file says "s 3") and one whose GPU does not
    answer ("u 0", not counted): the runner holds 3 plus its front lane's
    width (--jobs 1: 2), 5 jobs in flight, instead of taking the queue;
    once the first peer stops ("x 3") it takes the rest.
  - A dead peer's file is removed and does not count; a runner whose
    peers directory was removed (systemd's RuntimeDirectory) writes its
    file again.
  - Two real runners started together share the 12: neither has more than
    the other plus 2.
  - A runner whose first GPU probe has not answered yet (a fake GPU whose
    driver hangs) counts as starting ("s 0"), not as a GPU that does not
    answer: a runner beside it holds 0 plus 2 jobs. (On the H200, with
    make test-gpu's three runners started together, the first probe to
    answer took all 59 of a burst queued before the runners started.)
  - Hand-back: a runner whose GPU lane is full holds 4 jobs waiting for
    its GPU's memory; a runner on another GPU (another cache, so another
    admission ledger) starts with room: the first hands its waiting jobs
    back one by one (the server's release), keeping one for its own GPU,
    and the second grades them; no job is graded twice, and the one kept
    is graded once the first GPU has room. (On two H200s one runner had
    graded its share of a 100-job Python burst 95 s before the other.)
    A release answered 409 (the lease is another's by then) abandons the
    job: the runner does not grade it once its GPU has room.
Prints TAP."""
import json, os, shutil, signal, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import FAKE, RUNNER, failures, ok, require_nvcc_root  # noqa: E402  (paths, TAP)
import tree  # noqa: E402  (the fake lab laid out as a course tree)
import fakeserver  # noqa: E402  (the server's runner protocol, scripted)
import fakegpu  # noqa: E402  (a fake nvidia-smi and libcuda.so.1)
from fakeserver import GOOD, job  # noqa: E402
TOKEN = "cgr_" + "cd" * 32

require_nvcc_root()

tmp = tempfile.mkdtemp(prefix="cugrade-peers-")
os.chmod(tmp, 0o755)
root = tree.lay_out(os.path.join(tmp, "root"))
rubric = json.load(open(os.path.join(FAKE, "rubric.json")))
tok = os.path.join(tmp, "token")
open(tok, "w").write(TOKEN + "\n")
ENV = dict(os.environ, CUGRADE_GPU_MEMORY_MB="1000", CUGRADE_NO_GPU="1")


def peers_dir(url):
    """The runner's peers directory for url (peers.c: FNV-1a of the URL)."""
    h = 0xcbf29ce484222325
    for c in url.encode():
        h = ((h ^ c) * 0x100000001b3) & ((1 << 64) - 1)
    base = "/run/cugrade-runner" if os.geteuid() == 0 else \
        os.path.join(os.environ.get("TMPDIR") or "/tmp", "cugrade-runner-%d" % os.geteuid())
    return os.path.join(base, "peers-%016x" % h)


def lane_full(cache):
    """A live process that holds all of the GPU's memory: the GPU lane is full."""
    os.makedirs(cache, exist_ok=True)
    holder = subprocess.Popen(["sleep", "600"])
    open(os.path.join(cache, "gpu-0.admit"), "w").write(f"{holder.pid} 1 1000\n")
    return holder


def runner(url, cache, name, log, more=(), env=ENV):
    return subprocess.Popen([RUNNER, "--server", url, "--token-file", tok, "--root", root,
                             "--cache", cache, "--work", os.path.join(tmp, "work-" + name),
                             "--arch", "sm_90", "--jobs", "1", "--name", name] + list(more),
                            stdout=log, stderr=log, env=env, start_new_session=True)


def stop(procs):
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()


def end(procs, holder, fake):
    """Stop the runners, the GPU lane's holder (if it still holds) and the
    fake server."""
    stop(procs)
    if holder.poll() is None:
        holder.kill()
        holder.wait()
    fake.stop()


WAITING = "waiting: other submissions hold the GPU's memory"


def waiting_for_memory(st):
    """How many jobs said they wait for their GPU's memory (call it under
    the fake server's lock, as wait_for calls its condition)."""
    return sum(1 for v in st["progress"].values() if any(d == WAITING for _, d in v))


def claims_after(fake, n, quiet):
    """Wait (up to 180 s: a loaded host's front passes are slow) for n
    claims, then `quiet` seconds more; the claims by job id, runner."""
    fake.wait_for(lambda: len(fake.state["claimed"]) >= n, 180)
    time.sleep(quiet)
    with fake.lock:
        return dict(fake.state["claimed_by"])


def fake_peer(pdir, line):
    """A process named cugrade-runner (a copy of sleep) and its peer file."""
    fake_bin = os.path.join(tmp, "cugrade-runner")
    if not os.path.exists(fake_bin):
        shutil.copy(shutil.which("sleep"), fake_bin)
    peer = subprocess.Popen([fake_bin, "600"])
    pfile = os.path.join(pdir, "%d.load" % peer.pid)
    say(pfile, line)
    return peer, pfile


def say(pfile, line):
    open(pfile + ".x", "w").write(line)
    os.rename(pfile + ".x", pfile)


def starting_peer(log):
    fake = fakeserver.FakeServer([job(i, rubric, GOOD) for i in range(1, 13)])
    url = f"http://127.0.0.1:{fake.port}"
    pdir = peers_dir(url)
    os.makedirs(pdir, mode=0o700, exist_ok=True)
    starting, sfile = fake_peer(pdir, "s 3\n")
    no_gpu, _ = fake_peer(pdir, "u 0\n")
    holder = lane_full(os.path.join(tmp, "cache-a"))
    a = runner(url, os.path.join(tmp, "cache-a"), "a", log)
    try:
        got = claims_after(fake, 5, 8)
        ok(len(got) == 5, "beside a starting peer with 3 jobs in flight (and one whose GPU does not "
           "answer, which does not count) the runner holds 3 + 2 (its front lane), not the queue "
           "of 12", got)
        say(sfile, "x 3\n")
        got = claims_after(fake, 12, 0)
        ok(len(got) == 12, "once that peer stops, it takes the rest", got)
        starting.kill()
        starting.wait()
        time.sleep(1.5)   # its claim loop reads the peers again
        ok(not os.path.exists(sfile), "a dead peer's file is removed", sorted(os.listdir(pdir)))
        # systemd removes its RuntimeDirectory (/run/cugrade-runner) when a
        # runner unit stops: the others write theirs again.
        shutil.rmtree(pdir)
        mine = os.path.join(pdir, "%d.load" % a.pid)
        back = fake.wait_for(lambda: os.path.exists(mine), 30)
        ok(back, "its directory removed under it, the runner writes its file again",
           os.listdir(pdir) if os.path.isdir(pdir) else "no " + pdir)
    finally:
        stop([a])
        holder.kill()
        holder.wait()
        for p in (starting, no_gpu):
            if p.poll() is None:
                p.kill()
                p.wait()
        fake.stop()


def two_runners(log):
    fake = fakeserver.FakeServer([job(i, rubric, GOOD) for i in range(1, 13)])
    url = f"http://127.0.0.1:{fake.port}"
    cache = os.path.join(tmp, "cache-two")
    holder = lane_full(cache)
    procs = [runner(url, cache, n, log) for n in ("r0", "r1")]
    try:
        got = claims_after(fake, 12, 0)
        by = {n: sum(1 for v in got.values() if v == n) for n in ("r0", "r1")}
        ok(len(got) == 12 and abs(by["r0"] - by["r1"]) <= 2,
           "two runners started together share the 12 jobs (%d and %d)" % (by["r0"], by["r1"]),
           got)
    finally:
        end(procs, holder, fake)


def probe_pending(log):
    fake = fakeserver.FakeServer([job(i, rubric, GOOD) for i in range(1, 13)])
    url = f"http://127.0.0.1:{fake.port}"
    pdir = peers_dir(url)
    gpu_env, _, hang = fakegpu.make(tmp)
    open(hang, "w").close()
    # b sees a GPU whose first probe hangs (killed only at 60 s); --lazy-build:
    # straight to its claim loop, where it publishes its state.
    b = runner(url, os.path.join(tmp, "cache-probe-b"), "b", log, ["--lazy-build"],
               dict(ENV, **gpu_env, CUGRADE_GPU_PROBE_SECONDS="60", CUGRADE_BASELINE_REFRESH="0"))
    holder = lane_full(os.path.join(tmp, "cache-probe-a"))
    procs = [b]
    try:
        bfile = os.path.join(pdir, "%d.load" % b.pid)
        fake.wait_for(lambda: os.path.exists(bfile), 30)
        time.sleep(3)   # in its claim loop, its probe started and hanging
        line = open(bfile).read() if os.path.exists(bfile) else "(no file)"
        ok(line.split()[:3] == ["s", "0", "0"], "a runner whose first GPU probe has not answered "
           "publishes \"s 0 0\" (starting, nothing in flight or pending), not \"u\" (a GPU that "
           "does not answer)", line)
        procs.append(runner(url, os.path.join(tmp, "cache-probe-a"), "a", log))
        got = claims_after(fake, 2, 6)
        ok(len(got) == 2 and set(got.values()) == {"a"},
           "beside it a runner holds 0 + 2 jobs (its front lane), not the queue of 12", got)
    finally:
        stop(procs)
        os.unlink(hang)
        holder.kill()
        holder.wait()
        fake.stop()


def hand_back(log):
    fake = fakeserver.FakeServer([job(i, rubric, GOOD) for i in range(1, 5)])
    url = f"http://127.0.0.1:{fake.port}"
    holder = lane_full(os.path.join(tmp, "cache-hb-a"))
    a = runner(url, os.path.join(tmp, "cache-hb-a"), "a", log)
    procs = [a]
    st = fake.state
    try:
        waiting = fake.wait_for(lambda: len(st["claimed"]) == 4 and waiting_for_memory(st) == 4,
                                240)
        ok(waiting, "a runner whose GPU lane is full holds 4 jobs, all waiting for its GPU's "
           "memory", {k: v[-1:] for k, v in st["progress"].items()})
        procs.append(runner(url, os.path.join(tmp, "cache-hb-b"), "b", log))
        fake.wait_for(lambda: len(st["results"]) >= 3, 240)
        time.sleep(3)   # (a fourth hand-back would show by now)
        with fake.lock:
            released = list(st["released"])
            by = {jid: r.get("runner") for jid, r in st["results"].items()}
        ok(len(released) == 3 and {r for _, r in released} == {"a"} and
           sorted(j for j, r in by.items() if r == "b") == sorted(j for j, _ in released),
           "beside a runner on another GPU with room, it hands back 3 of them, one by one, and "
           "keeps one: the other runner grades the 3", {"released": released, "results": by})
        ok(all(r.get("status") == "graded" for r in st["results"].values()) and
           all(r.get("attempt") == 1 for r in st["results"].values()),
           "each graded, its attempt not counted twice",
           {j: (r.get("status"), r.get("attempt")) for j, r in st["results"].items()})
        holder.kill()
        holder.wait()
        done = fake.wait_for(lambda: len(st["results"]) == 4, 180)
        time.sleep(2)
        with fake.lock:
            by = {jid: r.get("runner") for jid, r in st["results"].items()}
        kept = [j for j in range(1, 5) if j not in by]
        with open(log.name) as f:   # (not log.seek: the runners write through its offset)
            said = [ln for ln in f.read().splitlines() if any("job %d:" % j in ln for j in kept)]
        with fake.lock:
            progress = {j: st["progress"].get(j, [])[-4:] for j in kept}
        ok(done and list(by.values()).count("a") == 1,
           "once its GPU has room, the job it kept is graded there; none twice",
           {"results": by, "kept job's progress": progress, "its log": said[-12:]})
    finally:
        end(procs, holder, fake)


def hand_back_refused(log):
    fake = fakeserver.FakeServer([job(i, rubric, GOOD) for i in range(1, 3)])
    fake.refuse_release = True
    url = f"http://127.0.0.1:{fake.port}"
    holder = lane_full(os.path.join(tmp, "cache-hr-a"))
    a = runner(url, os.path.join(tmp, "cache-hr-a"), "a", log)
    procs = [a]
    st = fake.state
    try:
        fake.wait_for(lambda: waiting_for_memory(st) == 2, 240)
        procs.append(runner(url, os.path.join(tmp, "cache-hr-b"), "b", log))
        asked = fake.wait_for(lambda: st["release_refused"], 120)
        time.sleep(2)
        holder.kill()
        holder.wait()
        fake.wait_for(lambda: st["results"], 120)
        time.sleep(5)   # (the refused one would be graded by now too)
        with fake.lock:
            refused, results = list(st["release_refused"]), dict(st["results"])
        ok(asked and len(refused) == 1 and refused[0] not in results and len(results) == 1,
           "a release answered 409 (the lease is another's) abandons the job: only the other "
           "one is graded once the GPU has room", {"refused": refused, "results": list(results)})
    finally:
        end(procs, holder, fake)


log = open(os.path.join(tmp, "runner.log"), "w+")
try:
    starting_peer(log)
    two_runners(log)
    probe_pending(log)
    hand_back(log)
    hand_back_refused(log)
finally:
    log.seek(0)
    if failures():
        for line in log.read().splitlines()[-30:]:
            print("#   log: " + line)
    shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if failures() else 0)
