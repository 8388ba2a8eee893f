#!/usr/bin/env python3
"""CI (no GPU): the runners of one host share a burst (runner/peers.h). The
GPU lane is held full by hand, as in lanes.t (a GPU memory ledger whose one
live entry takes all of CUGRADE_GPU_MEMORY_MB), so claimed jobs stay in
flight, and the fake server holds 12 jobs before any runner asks.
  - A peer that is starting (a process named cugrade-runner whose file says
    "s 0", as a runner building its labs): the runner holds at its front
    lane's width (--jobs 1: 2 jobs in flight) instead of taking the queue;
    once the peer's GPU stops answering ("u 0") it takes the rest.
  - A dead peer's file is removed and does not count.
  - Two real runners started together share the 12: neither has more than
    the other plus 2.
Prints TAP."""
import json, os, shutil, signal, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import FAKE, RUNNER, failures, ok, require_nvcc_root  # noqa: E402  (paths, TAP)
import tree  # noqa: E402  (the fake lab laid out as a course tree)
import fakeserver  # noqa: E402  (the server's runner protocol, scripted)
from fakeserver import GOOD, job  # noqa: E402
TOKEN = "cgr_" + "cd" * 32

require_nvcc_root()

tmp = tempfile.mkdtemp(prefix="cugrade-peers-")
os.chmod(tmp, 0o755)
root = tree.lay_out(os.path.join(tmp, "root"))
rubric = json.load(open(os.path.join(FAKE, "rubric.json")))
tok = os.path.join(tmp, "token")
open(tok, "w").write(TOKEN + "\n")
ENV = dict(os.environ, CUGRADE_GPU_MEMORY_MB="1000", CUGRADE_GPU_HOLD="0")


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


def runner(url, cache, name, log):
    return subprocess.Popen([RUNNER, "--server", url, "--token-file", tok, "--root", root,
                             "--cache", cache, "--work", os.path.join(tmp, "work-" + name),
                             "--arch", "sm_90", "--jobs", "1", "--name", name],
                            stdout=log, stderr=log, env=ENV, start_new_session=True)


def stop(procs):
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()


def settle(fake, seconds):
    """Wait until no claim has been granted for `seconds`; the claims by runner."""
    last, n = time.time(), -1
    while time.time() - last < seconds:
        with fake.lock:
            m = len(fake.state["claimed"])
        if m != n:
            last, n = time.time(), m
        time.sleep(0.5)
    with fake.lock:
        return dict(fake.state["claimed_by"])


def starting_peer(log):
    fake = fakeserver.FakeServer([job(i, rubric, GOOD) for i in range(1, 13)])
    url = f"http://127.0.0.1:{fake.port}"
    pdir = peers_dir(url)
    os.makedirs(pdir, mode=0o700, exist_ok=True)
    # A process named cugrade-runner (a copy of sleep), publishing "starting".
    fake_bin = os.path.join(tmp, "cugrade-runner")
    shutil.copy(shutil.which("sleep"), fake_bin)
    peer = subprocess.Popen([fake_bin, "600"])
    pfile = os.path.join(pdir, "%d.load" % peer.pid)
    open(pfile, "w").write("s 0\n")
    holder = lane_full(os.path.join(tmp, "cache-a"))
    a = runner(url, os.path.join(tmp, "cache-a"), "a", log)
    try:
        got = settle(fake, 8)
        ok(1 <= len(got) <= 2, "beside a starting peer the runner holds 2 jobs (its front lane), "
           "not the queue of 12", got)
        open(pfile + ".x", "w").write("u 0\n")
        os.rename(pfile + ".x", pfile)
        got = settle(fake, 8)
        ok(len(got) == 12, "once the peer's GPU does not answer, it takes the rest", got)
        peer.kill()
        peer.wait()
        time.sleep(1.5)   # its claim loop reads the peers again
        ok(not os.path.exists(pfile), "a dead peer's file is removed", sorted(os.listdir(pdir)))
    finally:
        stop([a])
        holder.kill()
        holder.wait()
        if peer.poll() is None:
            peer.kill()
        fake.stop()


def two_runners(log):
    fake = fakeserver.FakeServer([job(i, rubric, GOOD) for i in range(1, 13)])
    url = f"http://127.0.0.1:{fake.port}"
    cache = os.path.join(tmp, "cache-two")
    holder = lane_full(cache)
    procs = [runner(url, cache, n, log) for n in ("r0", "r1")]
    try:
        got = settle(fake, 10)
        by = {n: sum(1 for v in got.values() if v == n) for n in ("r0", "r1")}
        ok(len(got) == 12 and abs(by["r0"] - by["r1"]) <= 2,
           "two runners started together share the 12 jobs (%d and %d)" % (by["r0"], by["r1"]),
           got)
    finally:
        stop(procs)
        holder.kill()
        holder.wait()
        fake.stop()


log = open(os.path.join(tmp, "runner.log"), "w+")
try:
    starting_peer(log)
    two_runners(log)
finally:
    log.seek(0)
    if failures():
        for line in log.read().splitlines()[-30:]:
            print("#   log: " + line)
    shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if failures() else 0)
