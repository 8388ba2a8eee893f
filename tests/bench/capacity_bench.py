#!/usr/bin/env python3
"""capacity_bench.py - a course on deadline night against the real server
(issue 13: the server's measured capacity). A benchmark: prints a table,
asserts nothing.

    sh tests/bench/capacity_bench.sh [BUILD]
    env: STUDENTS="100 1000 10000"  DURATION=60 (seconds of the deadline curve)
         RUNNERS=auto (N/200, 4..50)  GRADE_SECONDS=0.25  CONNS=128
         DRAIN=90 (seconds after the deadline before waiting students give up)
         BROWSER=50 (percent of students using the web pages, the rest curl)
         PIN=1 (server on CPU 0, load generator and runners on CPU 1)  SEED=1

For each N in STUDENTS, a fresh BUILD/cugrade-server (tests/server/cugrade_test
Server: its own temp dir, the fixture lab `bench`) is given the rate limits of
the course's real rubrics (the `limits` of rubrics/matmul.json, through
PUT /api/admin/labs/bench/rubric), N students and the runner accounts in
bulk (POST /api/admin/users, up to 5,000 a request), and RUNNERS fake runners
(tests/tools/fake_runner.py as programs: claim with a 5 s long poll, 5
progress posts, the canned result; GRADE_SECONDS per job in all).

The deadline is DURATION seconds after the start. Student i:
  - first submits at DURATION - X, X exponential with mean DURATION/4,
    truncated to the curve (63% of first submissions in the last quarter);
  - submits 1 (50%), 2 (30%), 3 (15%), 4 (4%) or 5 (1%) times in all;
  - between two submissions waits for the result and thinks (exponential,
    mean DURATION/12), except an impatient 20% who send the next one about 2 s
    later: the server answers 429 while the first is in flight
    (max_in_flight), and they try again after Retry-After. Nobody starts a
    submission after the deadline;
  - curl students (100 - BROWSER %) POST the raw source to
    /api/labs/bench/submissions and poll GET /api/submissions/{id} every 5 s
    until a final status; browser students sign in once (POST /login: a
    session cookie; its 303 to /labs followed), load the lab page (for the
    form's CSRF token) before each submission, POST the multipart form to
    /labs/bench/submit, follow the 303 to the submission page and poll
    ?part=live as server/static/app.js does (1 s for a minute, then 3 s,
    then 10 s) until data-final="1".
Sources are real kernels of tests/gpu/solutions (1-4 KB) with a distinct
comment, so every submission stores distinct bytes.

The load generator is one asyncio loop over CONNS keep-alive connections (as
a proxy with upstream keep-alive would hold). A request's latency runs from
the moment the student meant to send it to the last byte of the answer, so a
wait for a free connection counts against the server (no coordinated
omission). To tell whether the generator itself was the bottleneck it
reports its CPU share and its loop lag (how late a 20 ms timer fires): with
lag p99 of a few ms and CPU well under 100%, the numbers are the server's.

Columns: submissions accepted (202/303), accepted/s as the mean over the
last quarter of the curve and the busiest second, p50/p99 of submit POSTs
(API and form), p99 of status polls (API and live page), 429 answers,
errors (any other non-2xx/3xx answer, a reset or a timeout: they are also
listed by kind), database and WAL size at the end, the server's VmHWM and
VmRSS (/proc/PID/status) at the end, the server's CPU share (mean over the
run / busiest 5 s), its loop's time in requests in its busiest 5 s (the sums
of its own cugrade_http_request_duration_seconds, parked claims left out: one
thread, so CPU and fsync waits together), the generator's CPU share (mean /
busiest 5 s) and loop-lag p99. After the table, per N: the disk's fsync rate
(a 2 s probe beside the database), the deepest queue, the graded count,
whether every accepted submission is stored (cugrade_jobs of /metrics), the
server's time by route, and what three reads cost the idle server
afterwards with that run's database (median of 20).

Python 3 stdlib only.
"""
import asyncio
import collections
import json
import math
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(ROOT, "tests", "server"))
from cugrade_test import Server  # noqa: E402  (starts the real binary)
from fake_runner import PHASES  # noqa: E402  (the progress posts of one job)

FAKE_RUNNER = os.path.join(ROOT, "tests", "tools", "fake_runner.py")
FINAL = {"graded", "compile_error", "rejected", "runtime_error", "timeout", "system_error"}
LAB = "bench"


def env_num(name, default, kind=float):
    v = os.environ.get(name, "")
    return kind(v) if v.strip() else default


STUDENTS = [int(x) for x in os.environ.get("STUDENTS", "100 1000 10000").split()]
DURATION = env_num("DURATION", 60.0)
RUNNERS = os.environ.get("RUNNERS", "auto")
GRADE_SECONDS = env_num("GRADE_SECONDS", 0.25)
CONNS = env_num("CONNS", 128, int)
DRAIN = env_num("DRAIN", 90.0)
BROWSER = env_num("BROWSER", 50.0) / 100.0
SEED = env_num("SEED", 1, int)
PIN = os.environ.get("PIN", "1" if (os.cpu_count() or 1) >= 2 else "0") == "1"
IMPATIENT = 0.2
CURL_POLL = 5.0
TIMEOUT = 30.0                              # seconds before a request counts as an error
CHUNK = 5000                                # users per POST /api/admin/users


def pct(xs, p):
    """The p-th percentile (nearest rank) of xs, or nan."""
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(math.ceil(p / 100.0 * len(xs))) - 1))]


def sources():
    """Real kernels of the GPU test suite, as the bodies students send."""
    d = os.path.join(ROOT, "tests", "gpu", "solutions")
    out = []
    for lab in sorted(os.listdir(d)):
        for f in sorted(os.listdir(os.path.join(d, lab))):
            if f.endswith(".cu"):
                with open(os.path.join(d, lab, f), "rb") as fh:
                    out.append(fh.read())
    return out or [b"__global__ void k() {}\n"]


def fsync_rate(folder, seconds=2.0):
    """4 KiB appends, each followed by fsync, for `seconds` in folder: what
    one synchronous=FULL WAL commit costs the disk at least."""
    path = os.path.join(folder, "fsync-probe")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    buf = b"x" * 4096
    n, t0 = 0, time.monotonic()
    try:
        while time.monotonic() - t0 < seconds:
            os.write(fd, buf)
            os.fsync(fd)
            n += 1
    finally:
        os.close(fd)
        os.unlink(path)
    return n / (time.monotonic() - t0)


SUM_RE = re.compile(r'\ncugrade_http_request_duration_seconds_sum\{route="([^"]*)",'
                    r'method="([A-Za-z]+)"\} ([0-9.]+)')
COUNT_RE = re.compile(r'\ncugrade_http_request_duration_seconds_count\{route="([^"]*)",'
                      r'method="([A-Za-z]+)"\} (\d+)')


def busy_seconds(metrics):
    """The server's time in requests so far (its /metrics histogram sums):
    one loop thread, so this is time it could serve nothing else. A parked
    runner claim (long poll) is time waited, not worked: left out."""
    return sum(float(m.group(3)) for m in SUM_RE.finditer(metrics)
               if not m.group(1).endswith("/claim"))


def peak_rate(samples, window=5):
    """The largest increase per second of a counter sampled as (t, value),
    over `window` consecutive samples."""
    return max((samples[i + window][1] - samples[i][1]) / (samples[i + window][0] - samples[i][0])
               for i in range(len(samples) - window)) if len(samples) > window else float("nan")


def proc_status(pid):
    """VmHWM and VmRSS of pid in kB."""
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k = line.split(":")[0]
            if k in ("VmHWM", "VmRSS"):
                out[k] = int(line.split()[1])
    return out


def cpu_seconds(pid):
    """utime + stime of pid (all its threads), in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------- HTTP client

CL_RE = re.compile(rb"\r\ncontent-length:[ \t]*(\d+)", re.I)
CLOSE_RE = re.compile(rb"\r\nconnection:[ \t]*close", re.I)


class Conn(asyncio.Protocol):
    """One keep-alive connection with at most one request outstanding.
    exchange() returns (status, head bytes, body bytes)."""

    def __init__(self):
        self.transport = None
        self.buf = bytearray()
        self.fut = None
        self.closed = False
        self.used = False
        self.timer = None

    def connection_made(self, transport):
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data):
        self.buf += data
        fut = self.fut
        if fut is None or fut.done():
            return
        i = self.buf.find(b"\r\n\r\n")
        if i < 0:
            return
        head = bytes(self.buf[:i])
        m = CL_RE.search(head)
        n = int(m.group(1)) if m else 0
        if len(self.buf) < i + 4 + n:
            return
        body = bytes(self.buf[i + 4:i + 4 + n])
        del self.buf[:i + 4 + n]
        if CLOSE_RE.search(head):
            self.closed = True
            self.transport.close()
        self.timer.cancel()
        self.fut = None
        fut.set_result((int(head[9:12]), head, body))

    def connection_lost(self, exc):
        self.closed = True
        if self.fut is not None and not self.fut.done():
            self.timer.cancel()
            self.fut.set_exception(ConnectionError("connection closed before the answer"))

    def _timeout(self):
        if self.fut is not None and not self.fut.done():
            self.fut.set_exception(TimeoutError("no answer in %.0f s" % TIMEOUT))
        self.closed = True
        self.transport.abort()

    def exchange(self, data):
        loop = asyncio.get_running_loop()
        self.used = True
        self.fut = loop.create_future()
        self.timer = loop.call_later(TIMEOUT, self._timeout)
        self.transport.write(data)
        return self.fut


class Pool:
    """Up to `size` keep-alive connections; a request waits for a free one."""

    def __init__(self, port, size):
        self.port = port
        self.size = size
        self.idle = []
        self.n = 0
        self.waiters = collections.deque()

    async def _open(self):
        loop = asyncio.get_running_loop()
        _, c = await loop.create_connection(Conn, "127.0.0.1", self.port)
        return c

    async def get(self):
        while self.idle:
            c = self.idle.pop()
            if not c.closed:
                return c
            self.n -= 1
        if self.n < self.size:
            self.n += 1
            try:
                return await self._open()
            except OSError:
                self.n -= 1
                raise
        fut = asyncio.get_running_loop().create_future()
        self.waiters.append(fut)
        return await fut

    def put(self, c):
        if c.closed:
            self.n -= 1
            if self.waiters:    # its place goes to the next waiter, on a new connection
                self.n += 1
                asyncio.ensure_future(self._hand_new(self.waiters.popleft()))
            return
        while self.waiters:
            w = self.waiters.popleft()
            if not w.done():
                w.set_result(c)
                return
        self.idle.append(c)

    async def _hand_new(self, w):
        try:
            c = await self._open()
        except OSError as e:
            self.n -= 1
            if not w.done():
                w.set_exception(e)
            return
        if w.done():
            self.put(c)
        else:
            w.set_result(c)

    def close(self):
        for c in self.idle:
            if c.transport is not None:
                c.transport.close()


class Stats:
    def __init__(self):
        self.lat = collections.defaultdict(list)    # kind -> seconds
        self.codes = collections.Counter()          # (kind, status) -> n
        self.errors = collections.Counter()         # description -> n
        self.accepted_at = []                       # seconds since t0
        self.lag = []                               # generator loop lag samples
        self.depth_max = 0
        self.depth_at_deadline = None
        self.cpu = []                               # (t, server CPU seconds), once a second
        self.busy = []                              # (t, seconds spent in requests), idem
        self.gcpu = []                              # (t, generator CPU seconds), idem
        self.probe = {}                             # request -> median seconds, idle server


class Bench:
    """One run: N students against one server."""

    def __init__(self, server, students, tokens, srcs, rnd):
        self.s = server
        self.students = students
        self.tok = tokens
        self.srcs = srcs
        self.rnd = rnd
        self.st = Stats()
        self.pool = None
        self.t0 = 0.0
        self.end = 0.0
        self.loop = None
        self.ended = 0.0

    def now(self):
        return self.loop.time() - self.t0

    async def request(self, kind, method, path, headers=(), body=b"", due=None):
        """Send one request; returns (status, head, body) or None on a
        connection error or timeout. Latency is recorded under kind from due
        (default: now) to the answer's last byte."""
        t_due = self.loop.time() if due is None else self.t0 + due
        hdr = "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n" % (method, path)
        for k, v in headers:
            hdr += "%s: %s\r\n" % (k, v)
        if body or method == "POST":
            hdr += "Content-Length: %d\r\n" % len(body)
        data = hdr.encode() + b"\r\n" + body
        for attempt in (1, 2):
            try:
                c = await self.pool.get()
            except OSError as e:
                self.st.errors["%s: connect: %s" % (kind, e)] += 1
                return None
            reused = c.used
            try:
                r = await c.exchange(data)
            except (ConnectionError, TimeoutError) as e:
                self.pool.put(c)
                # A keep-alive connection the server closed while idle: send
                # again once on a fresh one, as HTTP clients do.
                if attempt == 1 and reused and isinstance(e, ConnectionError):
                    continue
                self.st.errors["%s: %s" % (kind, e)] += 1
                self.st.codes[(kind, 0)] += 1
                return None
            self.pool.put(c)
            self.st.lat[kind].append(self.loop.time() - t_due)
            self.st.codes[(kind, r[0])] += 1
            if r[0] >= 400 and r[0] != 429:
                self.st.errors["%s: HTTP %d %s" % (kind, r[0], r[2][:80])] += 1
            return r
        return None

    async def sleep_until(self, t):
        d = t - self.now()
        if d > 0:
            await asyncio.sleep(d)

    # -- one student

    async def student(self, i, plan):
        name, browser, t_first, nsub, impatient = plan
        auth = [("Authorization", "Bearer " + self.tok[name])]
        rnd = random.Random(SEED * 1000003 + i)
        cookie = None
        if browser:     # signs in a little before the first submission
            await self.sleep_until(max(0.0, t_first - rnd.uniform(2, 20)))
            csrf = "c%016x" % rnd.getrandbits(64)
            form = "csrf=%s&token=%s" % (csrf, self.tok[name])
            r = await self.request("login", "POST", "/login",
                                   [("Cookie", "cugrade_login=" + csrf),
                                    ("Content-Type", "application/x-www-form-urlencoded")],
                                   form.encode())
            m = r and re.search(rb"cugrade_session=([0-9A-Za-z_]+)", r[1])
            if not m:
                return
            auth = [("Cookie", "cugrade_session=" + m.group(1).decode())]
            await self.request("page", "GET", "/labs", auth)       # the login's 303
        k, t_next, failures = 0, t_first, 0
        while k < nsub:
            await self.sleep_until(t_next)
            if self.now() > DURATION:
                return                          # nobody starts after the deadline
            src = self.srcs[(i + k) % len(self.srcs)] + (
                "\n// %s, submission %d\n" % (name, k + 1)).encode()
            if browser:
                r = await self.request("page", "GET", "/labs/" + LAB, auth)
                m = r and re.search(rb'name="csrf" value="([0-9a-f]+)"', r[2])
                if not m:
                    return
                bnd = "----capacity%016x" % rnd.getrandbits(64)
                body = ("--%s\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n%s\r\n"
                        "--%s\r\nContent-Disposition: form-data; name=\"file\"; "
                        "filename=\"kernel.cu\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                        % (bnd, m.group(1).decode(), bnd)).encode() + src + (
                            "\r\n--%s--\r\n" % bnd).encode()
                t_sub = self.now()
                r = await self.request("submit", "POST", "/labs/%s/submit" % LAB,
                                       auth + [("Content-Type",
                                                "multipart/form-data; boundary=" + bnd)], body)
            else:
                t_sub = self.now()
                r = await self.request("submit", "POST",
                                       "/api/labs/%s/submissions?filename=kernel.cu" % LAB,
                                       auth + [("Content-Type", "application/octet-stream")],
                                       src, due=t_next)
            sid = None
            if r is not None and r[0] in (202, 303):
                if r[0] == 202:
                    sid = json.loads(r[2])["id"]
                else:
                    m = re.search(rb"\r\nlocation:[ \t]*/submissions/(\d+)", r[1], re.I)
                    sid = int(m.group(1)) if m else None
            if r is not None and r[0] == 429:
                if browser:
                    m = re.search(rb"about (\d+) second", r[2])
                    wait = int(m.group(1)) if m else 10
                else:
                    m = re.search(rb"\r\nretry-after:[ \t]*(\d+)", r[1], re.I)
                    wait = int(m.group(1)) if m else 10
                t_next = self.now() + wait + rnd.uniform(0, 2)
                continue
            if sid is None:
                failures += 1
                if failures >= 3:
                    return
                t_next = self.now() + 5
                continue
            self.st.accepted_at.append(t_sub)
            k += 1
            if k < nsub and impatient:
                t_next = self.now() + rnd.expovariate(1 / 2.0)
                continue
            if not await self.watch(sid, browser, auth, rnd):
                return
            t_next = self.now() + rnd.expovariate(12.0 / DURATION)

    async def watch(self, sid, browser, auth, rnd):
        """Poll until submission sid is final; False when the run ended first."""
        started = self.now()
        if browser:
            await self.request("page", "GET", "/submissions/%d" % sid, auth)
            path = "/submissions/%d?part=live" % sid
            delay = None
        else:
            path = "/api/submissions/%d" % sid
            delay = rnd.uniform(1, CURL_POLL)       # a curl loop started at some point
        while True:
            if browser:
                age = self.now() - started
                delay = 1.0 if age < 60 else 3.0 if age < 600 else 10.0
            due = self.now() + delay
            if due > self.end:
                return False
            await self.sleep_until(due)
            r = await self.request("poll", "GET", path, auth, due=due)
            if r is None or r[0] != 200:
                continue
            if browser:
                if b'data-final="1"' in r[2]:
                    return True
            elif json.loads(r[2]).get("status") in FINAL:
                return True
            if not browser:
                delay = CURL_POLL

    # -- around the students

    async def ticker(self):
        """Generator loop lag: how late a 20 ms sleep wakes up."""
        while True:
            t = self.loop.time()
            await asyncio.sleep(0.02)
            self.st.lag.append(self.loop.time() - t - 0.02)

    async def depth_sampler(self):
        """Once a second: the queue depth (/metrics) and the server's CPU time."""
        while True:
            self.st.gcpu.append((self.now(), time.process_time()))
            try:
                self.st.cpu.append((self.now(), cpu_seconds(self.s.proc.pid)))
            except OSError:
                pass
            r = await self.request("metrics", "GET", "/metrics",
                                     headers=[("Authorization", "Bearer " + self.s.tok["admin"])])
            if r is not None and r[0] == 200:
                self.st.busy.append((self.now(), busy_seconds(r[2].decode())))
                m = re.search(rb"\ncugrade_queue_depth (\d+)", r[2])
                if m:
                    d = int(m.group(1))
                    self.st.depth_max = max(self.st.depth_max, d)
                    if self.st.depth_at_deadline is None and self.now() >= DURATION:
                        self.st.depth_at_deadline = d
            await asyncio.sleep(1.0)

    async def run(self, plans):
        self.loop = asyncio.get_running_loop()
        self.pool = Pool(self.s.port, CONNS)
        self.t0 = self.loop.time() + 1.0
        self.end = DURATION + DRAIN
        aux = [asyncio.ensure_future(self.ticker()), asyncio.ensure_future(self.depth_sampler())]
        tasks = [asyncio.ensure_future(self.student(i, p)) for i, p in enumerate(plans)]
        _, pending = await asyncio.wait(tasks, timeout=self.t0 + self.end + TIMEOUT
                                        - self.loop.time())
        for t in list(pending) + aux:
            t.cancel()
        await asyncio.gather(*(list(pending) + aux), return_exceptions=True)
        for t in tasks:
            if t.done() and not t.cancelled() and t.exception() is not None:
                self.st.errors["student task: %r" % t.exception()] += 1
        self.ended = self.now()
        # The idle server with this run's database: what one request costs alone.
        auth = [("Authorization", "Bearer " + self.tok[plans[0][0]])]
        r = await self.request("probe", "GET", "/api/submissions?lab=%s&limit=1" % LAB, auth)
        sid = json.loads(r[2])["submissions"][0]["id"] if r and r[0] == 200 else 1
        for what, path in (("GET /labs/%s (page)" % LAB, "/labs/" + LAB),
                           ("GET /api/submissions?lab=%s" % LAB,
                            "/api/submissions?lab=" + LAB),
                           ("GET /api/submissions/{id}", "/api/submissions/%d" % sid)):
            lat = []
            for _ in range(20):
                t = self.loop.time()
                await self.request("probe", "GET", path, auth)
                lat.append(self.loop.time() - t)
            self.st.probe[what] = pct(lat, 50)
        # one last look at /metrics for the stored count
        r = await self.request("metrics", "GET", "/metrics",
                                     headers=[("Authorization", "Bearer " + self.s.tok["admin"])])
        self.pool.close()
        return r[2].decode() if r is not None and r[0] == 200 else ""


def plans_for(n, rnd):
    """(name, browser, t_first, submissions, impatient) for n students."""
    mean = DURATION / 4.0
    out = []
    for i in range(n):
        u = rnd.random()
        x = -mean * math.log(1 - u * (1 - math.exp(-DURATION / mean)))
        nsub = rnd.choices([1, 2, 3, 4, 5], weights=[50, 30, 15, 4, 1])[0]
        out.append(("cap%05d" % i, rnd.random() < BROWSER, DURATION - x, nsub,
                    rnd.random() < IMPATIENT))
    return out


def runners_for(n):
    if RUNNERS != "auto":
        return int(RUNNERS)
    return max(4, min(50, n // 200))


class PinnedServer(Server):
    """The server on CPU 0 (taskset), so that the generator does not take its core."""

    def serve_argv(self):
        argv = super().serve_argv()
        return (["taskset", "-c", "0"] + argv) if PIN else argv


def run_one(n, srcs):
    rnd = random.Random(SEED)
    plans = plans_for(n, rnd)
    nrun = runners_for(n)
    row = {"students": n, "runners": nrun}
    # Every simulated student connects from 127.0.0.1: the per-address
    # connection cap (64) is for real clients, so it is off here.
    with PinnedServer(labs=[LAB], users=[], args=["--max-conns-per-address", "0"]) as s:
        # the real rubrics' rate limits
        with open(os.path.join(ROOT, "rubrics", "matmul.json")) as f:
            limits = json.load(f)["limits"]
        r = s.get("/api/admin/labs/%s/rubric" % LAB, token="admin")
        rub = r.json()["rubric"]
        rub["limits"] = limits
        r = s.put("/api/admin/labs/%s/rubric" % LAB, token="admin", json_body=rub)
        if r.status != 200:
            sys.exit("capacity_bench: rubric PUT answered %s" % r.brief())
        row["limits"] = limits
        users = [(p[0], "student", "Student %d" % i) for i, p in enumerate(plans)]
        users += [("caprunner%02d" % i, "runner", "runner %d" % i) for i in range(nrun)]
        t = time.monotonic()
        for i in range(0, len(users), CHUNK):
            s.add_users(users[i:i + CHUNK])
        row["users_s"] = time.monotonic() - t
        row["fsync_s"] = fsync_rate(s.dir)
        runners = []
        for i in range(nrun):
            out = open(os.path.join(s.dir, "runner%02d.out" % i), "w")
            runners.append(subprocess.Popen(
                [sys.executable, FAKE_RUNNER, "--url", s.url, "--token",
                 s.tok["caprunner%02d" % i], "--name", "cap-gpu%02d" % i, "--jobs", "0",
                 "--wait", "5", "--phase-delay", "%.4f" % (GRADE_SECONDS / len(PHASES))],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))
            out.close()
        time.sleep(1.0)                                 # runners parked on their claims
        bench = Bench(s, n, s.tok, srcs, rnd)
        cpu_s0, cpu_g0, wall0 = cpu_seconds(s.proc.pid), time.process_time(), time.monotonic()
        try:
            metrics = asyncio.run(bench.run(plans))
        finally:
            wall = time.monotonic() - wall0
            cpu_s = cpu_seconds(s.proc.pid) - cpu_s0
            cpu_g = time.process_time() - cpu_g0
            cpu_r, exits = 0.0, []
            for p in runners:
                try:
                    cpu_r += cpu_seconds(p.pid)
                except OSError:
                    pass
                if p.poll() is not None:
                    exits.append(p.returncode)
                else:
                    p.send_signal(signal.SIGTERM)
            for p in runners:
                p.wait()
        mem = proc_status(s.proc.pid)
        db = os.path.getsize(s.db)
        wal = os.path.getsize(s.db + "-wal") if os.path.exists(s.db + "-wal") else 0
        stored = sum(int(m) for m in re.findall(r'\ncugrade_jobs\{status="[a-z_]+"\} (\d+)',
                                                 metrics))
        graded = re.search(r'\ncugrade_jobs\{status="graded"\} (\d+)', metrics)
        queued = re.search(r"\ncugrade_queue_depth (\d+)", metrics)
        s.stop()
        st = bench.st
        # where the server's loop spent its time, by route (its own histogram sums)
        route_s = {"%s %s" % (m.group(2), m.group(1)): float(m.group(3))
                   for m in SUM_RE.finditer(metrics)}
        route_n = {"%s %s" % (m.group(2), m.group(1)): int(m.group(3))
                   for m in COUNT_RE.finditer(metrics)}
        acc = sorted(st.accepted_at)
        # the server's busiest 5 seconds: CPU (a share of one core) and loop
        # time in requests (CPU and waits for fsync)
        cpu_peak = peak_rate(st.cpu)
        busy_peak = peak_rate(st.busy)
        gen_peak = peak_rate(st.gcpu)
        last_q = [t for t in acc if DURATION * 0.75 <= t <= DURATION]
        bins = collections.Counter(int(t) for t in acc)
        row.update(
            accepted=len(acc), mean_s=len(last_q) / (DURATION * 0.25),
            peak_s=max(bins.values()) if bins else 0,
            submit_p50=pct(st.lat["submit"], 50), submit_p99=pct(st.lat["submit"], 99),
            poll_p50=pct(st.lat["poll"], 50), poll_p99=pct(st.lat["poll"], 99),
            polls=len(st.lat["poll"]),
            page_p99=pct(st.lat["page"], 99), login_p99=pct(st.lat["login"], 99),
            r429=sum(v for (k, c), v in st.codes.items() if c == 429),
            errors=sum(st.errors.values()), error_kinds=st.errors,
            db=db, wal=wal, hwm=mem.get("VmHWM", 0), rss=mem.get("VmRSS", 0),
            cpu_server=cpu_s / wall, cpu_peak=cpu_peak, busy_peak=busy_peak, gen_peak=gen_peak, cpu_gen=cpu_g / wall, cpu_runners=cpu_r / wall,
            lag_p99=pct(st.lag, 99), lag_max=max(st.lag) if st.lag else float("nan"),
            depth_max=st.depth_max, depth_deadline=st.depth_at_deadline,
            stored=stored, graded=int(graded.group(1)) if graded else -1,
            queued_end=int(queued.group(1)) if queued else -1, wall=wall,
            runner_exits=exits, requests=sum(st.codes.values()),
            codes=st.codes, route_s=route_s, route_n=route_n, probe=st.probe)
    return row


def ms(x):
    return "%.1f" % (x * 1000) if x == x else "-"


def main():
    if PIN:
        os.sched_setaffinity(0, {1})        # the generator and its runners: CPU 1
    srcs = sources()
    print("capacity_bench: cores %d, pinned (server CPU 0, generator + runners CPU 1): %s; "
          "DURATION %g s, DRAIN %g s, GRADE_SECONDS %g, CONNS %d, BROWSER %d%%, SEED %d; "
          "load average before: %s" % (os.cpu_count(), PIN, DURATION, DRAIN, GRADE_SECONDS,
                                       CONNS, BROWSER * 100, SEED,
                                       open("/proc/loadavg").read().split(" ")[0]),
          flush=True)
    rows = []
    for n in STUDENTS:
        t = time.monotonic()
        row = run_one(n, srcs)
        rows.append(row)
        print("  %d students: %d accepted, %d requests, %d runners, users added in %.1f s,"
              " run %.0f s (total %.0f s)" % (n, row["accepted"], row["requests"],
                                               row["runners"], row["users_s"], row["wall"],
                                               time.monotonic() - t), flush=True)
    print()
    hdr = ("%8s %8s %7s %7s %8s %8s %8s %7s %6s %6s %9s %7s %7s %8s %5s %8s %7s"
           % ("students", "accepted", "mean/s", "peak/s", "sub p50", "sub p99", "poll p99",
              "polls", "429s", "errors", "db+wal MB", "VmHWM", "VmRSS", "srvCPU", "busy",
              "genCPU", "lag p99"))
    print(hdr)
    for r in rows:
        print("%8d %8d %7.1f %7d %8s %8s %8s %7d %6d %6d %9.1f %5.0fMB %5.0fMB %3.0f/%3.0f%% %4.0f%% %3.0f/%3.0f%% %7s"
              % (r["students"], r["accepted"], r["mean_s"], r["peak_s"], ms(r["submit_p50"]),
                 ms(r["submit_p99"]), ms(r["poll_p99"]), r["polls"], r["r429"], r["errors"],
                 (r["db"] + r["wal"]) / 1e6, r["hwm"] / 1024.0, r["rss"] / 1024.0,
                 r["cpu_server"] * 100, r["cpu_peak"] * 100, r["busy_peak"] * 100,
                 r["cpu_gen"] * 100, r["gen_peak"] * 100,
                 ms(r["lag_p99"])))
    print("(latencies in ms, from when the student meant to send; mean/s over the last quarter"
          " of the curve, peak/s the busiest second; srvCPU: the server's share of one core,"
          " mean over the run / busiest 5 s; busy: the server's time in requests (CPU and fsync"
          " waits on its one loop) in its busiest 5 s; genCPU: the load generator's, mean / busiest 5 s;"
          " lag: how late the generator's 20 ms timer fired)")
    print()
    for r in rows:
        print("%d students: limits %s; %d runners x %.2f s/job; deepest queue %d (%s at the "
              "deadline, %d at the end); graded %d; stored %d of %d accepted (%s); "
              "poll p50 %s ms; page p99 %s ms; login p99 %s ms; runners' CPU %.0f%%; lag max %s ms; "
              "db %.1f MB + wal %.1f MB; fsync/s of the disk %.0f"
              % (r["students"], json.dumps(r["limits"]), r["runners"], GRADE_SECONDS,
                 r["depth_max"], r["depth_deadline"], r["queued_end"], r["graded"], r["stored"],
                 r["accepted"], "ok" if r["stored"] == r["accepted"] else "MISMATCH",
                 ms(r["poll_p50"]), ms(r["page_p99"]), ms(r["login_p99"]), r["cpu_runners"] * 100,
                 ms(r["lag_max"]), r["db"] / 1e6, r["wal"] / 1e6, r["fsync_s"]))
        # a parked claim (long poll) is time waited, not time worked: left out
        top = sorted(((k, v) for k, v in r["route_s"].items() if not k.endswith("/claim")),
                     key=lambda kv: -kv[1])[:8]
        print("  server time by route (s / requests = mean ms): " + "; ".join(
            "%s %.1f s / %d = %.2f" % (k, v, r["route_n"].get(k, 0),
                                        1000 * v / max(1, r["route_n"].get(k, 0)))
            for k, v in top))
        print("  the idle server afterwards, median of 20 in a row: " + "; ".join(
            "%s %s ms" % (k, ms(v)) for k, v in r["probe"].items()))
        if r["runner_exits"]:
            print("  fake runners that exited early: %s" % r["runner_exits"])
        for what, k in r["error_kinds"].most_common(8):
            print("  error x%d: %s" % (k, what))
    gen_bound = [r["students"] for r in rows if r["lag_p99"] > 0.05 or r["gen_peak"] > 0.9]
    if gen_bound:
        print("note: the load generator was saturated for %s students (loop lag p99 > 50 ms or"
              " CPU > 90%%): those rows understate the server" % gen_bound)
    if rows and not gen_bound:
        print("the load generator kept up in every row (loop lag p99 <= 50 ms, CPU < 90%)")
    print("load average after: %s" % open("/proc/loadavg").read().split(" ")[0])


if __name__ == "__main__":
    main()
