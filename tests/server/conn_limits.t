#!/usr/bin/env python3
# suite: idle  (tests/run.sh: it waits on the server's timeouts; its CPU is under 5% of its wall time)
# Issue 14: one client cannot take every connection, hold a socket that never
# sends a byte for the idle timeout, or make the loop work for it while it
# does not read.  Connections per client address are capped (over the cap a
# new one is closed at once, others are served); so are connections in all;
# a connection gets the request timeout, not the idle one, until its first
# request head is in; a client that pipelines GET /metrics and never reads
# gets a bounded amount of work done, and everything once it reads.  A
# trusted reverse proxy (--trusted-proxy) is not capped per address, and
# its requests are counted under X-Forwarded-For's last address.
import os
import re
import socket
import sys
import threading
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, SockReader  # noqa: E402

KiB = 1024


def closed_at_once(c, timeout=10):
    """True when the server closes c (EOF or reset) without a word within
    timeout seconds, well before any timeout of its own."""
    c.settimeout(timeout)
    try:
        return c.recv(1) == b""
    except socket.timeout:
        return False
    except OSError:
        return True


def served(s, source, timeout=5):
    """A GET /healthz answered 200 from source on a fresh connection."""
    try:
        return s.healthy(timeout=timeout, source=source)
    except OSError:
        return False


def quiet(s, keep=0):
    """Wait until the server has seen every earlier probe connection close
    (the start-up's /healthz polls come from 127.0.0.1 too: on a loaded
    machine a close the loop has not yet seen still counts against that
    address's cap). Asked from 127.0.0.3, which no check fills; the answer
    counts that connection itself."""
    for _ in range(100):
        if (s.metric("cugrade_http_connections", source="127.0.0.3") or 0) <= keep + 1:
            return
        time.sleep(0.1)


def caps(t):
    # --request-timeout 30: idle sockets stay open far longer than the checks
    # take, so a close within 5 s is the cap's doing.
    s = Server(labs=["vadd"], args=["--max-conns-per-address", "8", "--max-conns", "20",
                                    "--request-timeout", "30"], tap=t)
    quiet(s)
    mine = [s.connect(source="127.0.0.1") for _ in range(8)]
    mine[0].sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    r = SockReader(mine[0]).response(5)
    t.ok(r is not None and r.status == 200, "8 connections from 127.0.0.1 (the cap): served")
    # At the cap a newcomer takes the place of its address's connection idle
    # longest: one student's idle sockets no longer lock out a classmate
    # behind the same NAT address.
    ninth = s.connect(source="127.0.0.1")
    ninth.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    r = SockReader(ninth).response(5)
    t.ok(r is not None and r.status == 200, "a 9th from 127.0.0.1 is served", r and r.brief())
    t.ok(closed_at_once(mine[1]), "...in the place of the connection idle longest (never used), closed")
    mine[1].close()
    held = [mine[0]] + mine[2:] + [ninth]
    # With a request under way on each, none is idle: a 10th is refused.
    for c in held:
        c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
    time.sleep(0.3)
    tenth = s.connect(source="127.0.0.1")
    t.ok(closed_at_once(tenth), "with a request under way on all 8, a 10th is closed at once")
    tenth.close()
    t.ok(served(s, "127.0.0.2"), "meanwhile a client from 127.0.0.2 is served")
    for c in held:
        c.sendall(b"\r\n")
    codes = [(SockReader(c).response(5) or Response0).status for c in held]
    t.eq(codes, [200] * 8, "the 8 requests under way complete")
    ninth.close()
    mine = held[:-1]

    # The server's own cap: 20 in all, from any number of addresses. First
    # let it see every probe connection above closed (a loaded or ASan
    # build takes a few turns): only the 7 of mine stay open, plus the one
    # that asks for /metrics.
    quiet(s, len(mine))
    others = []
    for i in range(20 - len(mine)):
        others.append(s.connect(source="127.0.0.%d" % (10 + i)))
    r = None
    for _ in range(20):
        # The /metrics probe's own connection may not be seen closed yet:
        # then the 20th is refused; it is served once the server catches up.
        try:
            others[-1].sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            r = SockReader(others[-1]).response(5)
        except OSError:
            r = None
        if r is not None and r.status == 200:
            break
        others[-1].close()
        time.sleep(0.2)
        others[-1] = s.connect(source="127.0.0.%d" % (10 + len(others) - 1))
    t.ok(r is not None and r.status == 200, "20 connections in all (the server's cap): served")
    # Full: a newcomer from another address takes the place of an idle
    # connection of the address holding the most (127.0.0.1, 7).
    extra = s.connect(source="127.0.0.100")
    extra.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    r = SockReader(extra).response(5)
    t.ok(r is not None and r.status == 200,
         "a 21st, from yet another address, is served", r and r.brief())
    shut = [c for c in mine if closed_at_once(c, timeout=0.5)]
    t.eq(len(shut), 1, "...in the place of one idle connection of 127.0.0.1, the largest holder")
    extra2 = s.connect(source="127.0.0.1")
    t.ok(closed_at_once(extra2), "a 21st from 127.0.0.1 itself (still the largest) is closed at once")
    extra2.close()
    for c in mine + others + [extra]:
        c.close()
    time.sleep(0.3)
    v_client = s.metric("cugrade_http_connections_refused_total", reason="client")
    v_server = s.metric("cugrade_http_connections_refused_total", reason="server")
    t.ok(v_client is not None and v_client >= 1 and v_server is not None and v_server >= 1,
         "cugrade_http_connections_refused_total counts both (client %s, server %s)"
         % (v_client, v_server))
    v_ic = s.metric("cugrade_http_connections_shed_total", reason="idle_client")
    v_is = s.metric("cugrade_http_connections_shed_total", reason="idle_server")
    t.ok(v_ic == 1 and v_is == 1,
         "cugrade_http_connections_shed_total counts the idle ones replaced (client %s, server %s)"
         % (v_ic, v_is))
    s.stop()


class Response0:
    status = None


def budget(t):
    """Issue 29: 10,048 connections pipelining GET /static/style.css and
    never reading held ~135 KiB each, 1.3 GiB in all. Now what all of them
    hold is one budget (--max-buffered-mb): over it, the connection stalled
    longest is closed."""
    s = Server(labs=["vadd"], args=["--max-buffered-mb", "2", "--max-conns-per-address", "100"],
               tap=t)
    one = b"GET /static/style.css HTTP/1.1\r\nHost: x\r\n\r\n"
    conns = []
    for i in range(24):
        c = socket.socket()
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        c.bind(("127.0.0.%d" % (20 + i), 0))
        c.connect(("127.0.0.1", s.port))
        c.setblocking(False)
        conns.append(c)
    end = time.time() + 8
    peak = 0
    while time.time() < end:
        for c in conns:
            try:
                c.send(one * 50)
            except (BlockingIOError, OSError):
                pass
        time.sleep(0.05)
    for _ in range(5):
        v = s.metric("cugrade_http_buffered_bytes", source="127.0.0.3")
        peak = max(peak, v or 0)
        time.sleep(0.2)
    shed = s.metric("cugrade_http_connections_shed_total", reason="budget", source="127.0.0.3")
    t.ok(shed is not None and shed >= 1, "24 clients pipelining without reading: some of them, "
         "stalled longest, are closed (%s)" % shed)
    t.ok(0 < peak <= 2.5 * 1024 * 1024, "what the server holds stays near the 2 MiB budget (%s bytes)"
         % peak)
    t0 = time.time()
    t.ok(served(s, "127.0.0.2"), "a client from another address is served (%.2f s)" % (time.time() - t0))
    for c in conns:
        c.close()
    time.sleep(0.5)
    v = s.metric("cugrade_http_buffered_bytes", source="127.0.0.3")
    t.ok(v is not None and v < 256 * 1024, "once they are gone, the server holds nothing of theirs (%s)" % v)
    s.stop()

    # Bodies being read have 4 times the budget (1 MiB: 4 MiB), refused
    # before they are read; never closing another upload.
    s = Server(labs=["vadd"], args=["--max-buffered-mb", "1"], tap=t)
    auth = b"Authorization: Bearer " + s.tok["runner1"].encode() + b"\r\n"
    head = (b"POST /api/runner/jobs/1/result HTTP/1.1\r\nHost: x\r\n" + auth +
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n")
    up = s.connect()
    up.sendall(head % (3 * 1024 * 1024) + b"{" * 65536)    # 3 MiB announced, being read
    time.sleep(0.3)
    r = s.raw(head % (2 * 1024 * 1024))
    t.ok(r is not None and r.status == 503 and (r.error() or {}).get("code") == "busy",
         "a 2 MiB body beside a 3 MiB one being read (4 MiB for bodies): 503 busy, unread",
         r and r.brief())
    up.sendall(b" " * (3 * 1024 * 1024 - 65536))
    r = SockReader(up).response(10)
    t.ok(r is not None and r.status == 400, "the upload being read was not cut off (its 400 for "
         "bad JSON)", r and r.brief())
    up.close()
    s.stop()


def silent(t):
    # The idle timeout is 60 s; the request timeout 2 s.
    s = Server(labs=["vadd"], args=["--request-timeout", "2", "--idle-timeout", "60"], tap=t)
    c = s.connect()
    t0 = time.time()
    c.settimeout(30)
    try:
        got = c.recv(100)
    except socket.timeout:
        got = "still open"
    except OSError:
        got = b""
    took = time.time() - t0
    c.close()
    t.ok(got == b"", "a connection that never sends a byte is closed on the request timeout, "
         "not the 60 s idle one (after %.1f s)" % took, got)
    # After a complete request the idle timeout applies.
    c = s.connect()
    c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    r = SockReader(c).response(5)
    c.settimeout(5)
    try:
        d = c.recv(100)
        still = False
    except socket.timeout:
        still, d = True, None
    c.close()
    t.ok(r is not None and r.status == 200 and still,
         "a kept-alive connection after its first answer stays open past the request timeout",
         d)
    s.stop()


def metrics_count(s, body):
    m = re.search(rb'cugrade_http_requests_total\{route="/metrics",method="GET",code="2xx"\} (\d+)',
                  body)
    return int(m.group(1)) if m else 0


def pipelining(t):
    """Clients pipeline GET /metrics (an admin token) without reading, from a
    4 KiB receive buffer.  The answers produced for each must stay bounded
    (before: about 2.3 MiB each, 10 such clients held the loop for seconds);
    once one reads, it gets every answer, in order."""
    s = Server(labs=["vadd"], tap=t)
    one = (b"GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
           + s.tok["admin"].encode() + b"\r\n\r\n")
    size = len(s.raw(one).body)
    n, nclients = 3000, 10
    socks = []
    for i in range(nclients):
        c = socket.socket()
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        c.bind(("127.0.0.%d" % (10 + i), 0))
        c.connect(("127.0.0.1", s.port))
        socks.append(c)
    errors = []

    def pump(c):
        try:
            c.sendall(one * n)
        except OSError as e:
            errors.append(e)
    pumps = [threading.Thread(target=pump, args=(c,), daemon=True) for c in socks]
    for th in pumps:
        th.start()
    # Wait until the server stops doing work for them: the counter of
    # answered GET /metrics grows by nothing but our own polls.
    polls, prev, handled = 0, None, None
    for _ in range(60):
        v = metrics_count(s, s.get("/metrics", token="admin", source="127.0.0.2").body)
        polls += 1
        if prev is not None and v - prev <= 1:
            handled = v - (polls - 1) - 1       # less our polls and the size probe
            break
        prev = v
        time.sleep(0.5)
    t.ok(handled is not None, "the server stops answering clients that do not read")
    handled = handled or 0
    per = handled * size // nclients
    t.ok(per < 512 * KiB,
         "%d clients pipelining %d GET /metrics without reading: %d answered, about %d KiB "
         "of answers each (< 512 KiB)" % (nclients, n, handled, per // KiB))
    t.ok(s.healthy(source="127.0.0.2"), "meanwhile another client is served")
    # One of them reads now: it gets all n answers, in order.
    c = socks[0]
    rd = SockReader(c)
    got = 0
    while got < n:
        r = rd.response(20)
        if r is None or r.status != 200:
            break
        got += 1
    t.eq(got, n, "once it reads, a client gets every one of its %d answers" % n)
    for c in socks:
        c.close()
    s.stop()


WRONG = "cgs_" + "0123456789abcdef" * 4


def proxy(t):
    s = Server(labs=["vadd"], args=["--max-conns-per-address", "4", "--auth-fail-limit", "3",
                                    "--trusted-proxy", "127.0.0.9"], tap=t)
    held = [s.connect(source="127.0.0.9") for _ in range(8)]
    held[-1].sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    r = SockReader(held[-1]).response(5)
    t.ok(r is not None and r.status == 200,
         "8 connections from the trusted proxy (the cap is 4 per address): served")
    for c in held:
        c.close()

    # What is counted per client (two session cookies, never valid: the
    # throttle keys them to the client) is counted under the last
    # X-Forwarded-For address through a trusted proxy.
    two = "cugrade_session=%s; cugrade_session=%s" % ("ab" * 32, "cd" * 32)

    def me(token=None, xff=None, source="127.0.0.9"):
        h = {"X-Forwarded-For": xff} if xff else {}
        if token is None:
            h["Cookie"] = two
        return s.get("/api/me", token=token, headers=h, source=source).status
    codes = [me(None, "203.0.113.6") for _ in range(4)]
    t.eq(codes, [401, 401, 401, 429],
         "through the proxy, 3 failures of client 203.0.113.6, then 429 for it")
    t.eq(me("alice_q7", "203.0.113.6"), 200, "...while a valid token of that client is served")
    t.eq(me(None, "198.51.100.7"), 401, "...and client 198.51.100.7 is not throttled")
    t.eq(me(None, "198.51.100.7, 203.0.113.6"), 429,
         "the last X-Forwarded-For entry counts (the one the proxy appended)")
    t.eq(me(None, "203.0.113.6, 198.51.100.7"), 401,
         "an entry the client put before it does not")
    t.eq(me(None), 401, "the proxy's own requests (no X-Forwarded-For) are not throttled")
    codes = [me(None, "198.51.100.%d" % i, source="127.0.0.1") for i in range(4)]
    t.eq(codes, [401, 401, 401, 429],
         "from an address that is not a trusted proxy, X-Forwarded-For is ignored")
    s.stop()


def turn_share(t):
    """Issue 29: pipelined requests of all connections together are capped
    per turn of the loop (HTTP_TURN_REQUESTS, 256): 40 connections whose 16
    pipelined requests each are read in one turn (the server is stopped
    while they are sent) have the rest handled in later turns -- before,
    640 connections had 16 answers each made in one turn, 140 MB copied
    while /healthz waited.  Each still gets its 16 answers, in order."""
    import signal
    s = Server(labs=["vadd"], tap=t)
    n, nconns = 16, 40
    one = b"GET /static/favicon.svg?%d HTTP/1.1\r\nHost: x\r\n\r\n"
    socks = [s.connect() for _ in range(nconns)]
    waits0 = s.metric("cugrade_http_pipeline_turn_waits_total")
    s.proc.send_signal(signal.SIGSTOP)
    try:
        time.sleep(0.2)
        for c in socks:
            c.sendall(b"".join(one % i for i in range(n)))
        time.sleep(0.5)  # every byte in the server's receive buffers
    finally:
        s.proc.send_signal(signal.SIGCONT)
    answered = 0
    for c in socks:
        rd = SockReader(c)
        for i in range(n):
            r = rd.response(20)
            if r is None or r.status != 200:
                break
            answered += 1
        c.close()
    t.eq(answered, n * nconns, "%d connections pipelining %d requests read in one turn: each "
         "gets every answer" % (nconns, n))
    waits = s.metric("cugrade_http_pipeline_turn_waits_total")
    t.ok(waits0 is not None and waits is not None and waits > waits0,
         "cugrade_http_pipeline_turn_waits_total counts connections that waited for the next "
         "turn (%s, was %s)" % (waits, waits0))
    t.ok(s.healthy(), "the server goes on")
    s.stop()


def main(t):
    caps(t)
    turn_share(t)
    budget(t)
    proxy(t)
    silent(t)
    pipelining(t)


t = Tap()
require_binary(t)
t.run(main)
t.exit()
