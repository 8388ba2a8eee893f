#!/usr/bin/env python3
# Issue 14, "nothing anonymous costs more than a few KiB": a request is
# admitted from its headers before any body byte is read.  A route that
# needs a token answers 401 (403 for a role that may not use it) at once,
# never "100 Continue", and closes without reading the body; an anonymous
# request elsewhere (the sign-in form, an unknown API path) may carry 4 KiB.
# 75 anonymous 8 MiB result uploads held open (600 MiB before this) leave the
# server's peak memory where it was.  A token, session cookie or sign-in
# token that failed too often gets 429 with Retry-After, without a lookup;
# valid ones from the same address are served.
import os
import re
import select
import socket
import sys
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, SockReader  # noqa: E402

MiB = 1024 * 1024
WRONG = "cgs_" + "0123456789abcdef" * 4     # well formed, never issued


def head(method, path, length, token=None, expect=True, extra=""):
    h = "%s %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" % (method, path)
    h += "Content-Length: %d\r\n" % length
    if token:
        h += "Authorization: Bearer %s\r\n" % token
    if expect:
        h += "Expect: 100-continue\r\n"
    return (h + extra + "\r\n").encode()


def closed_by_server(sock, rd, timeout=10):
    """True when the server closes (EOF or reset) within timeout, having sent
    nothing more than what rd already holds."""
    sock.settimeout(timeout)
    try:
        while True:
            d = sock.recv(65536)
            if not d:
                return rd.buf == b""
            rd.buf += d
    except socket.timeout:
        return False
    except OSError:
        return rd.buf == b""


def first_answer(s, data, source=None):
    """Send a request head (no body) and read the first thing the server
    says: (response, whether it then closed the connection)."""
    c = s.connect(source=source)
    try:
        c.sendall(data)
        rd = SockReader(c)
        r = rd.response(10)
        if r is None or r.status == 100:
            return r, False
        return r, closed_by_server(c, rd)
    finally:
        c.close()


def admission(t, s):
    runner, alice = s.tok["runner1"], s.tok["alice_q7"]
    for what, token, status, code in [("without a token", None, 401, "unauthorized"),
                                      ("with a wrong token", WRONG, 401, "unauthorized"),
                                      ("with a student's token", alice, 403, "forbidden")]:
        r, closed = first_answer(s, head("POST", "/api/runner/jobs/1/result", 8 * MiB, token))
        t.ok(r is not None and r.status == status and (r.error() or {}).get("code") == code,
             "an 8 MiB result announced %s with Expect: 100-continue: %d %s, not 100 Continue"
             % (what, status, code), r.brief() if r else "no answer")
        t.ok(closed and r is not None and r.header("connection") == "close",
             "...and the server closes the connection without reading the body")
    r, _ = first_answer(s, head("POST", "/api/runner/jobs/1/result", 8 * MiB, runner))
    t.ok(r is not None and r.status == 100,
         "the same with a runner token: 100 Continue (the body is welcome)",
         r.brief() if r else "no answer")
    for path, size in [("/api/labs/vadd/submissions", 200 * 1024),
                       ("/api/admin/users", 4 * MiB),
                       ("/api/admin/labs/vadd/rubric", 200 * 1024)]:
        method = "PUT" if path.endswith("rubric") else "POST"
        r, closed = first_answer(s, head(method, path, size))
        t.ok(r is not None and r.status == 401 and closed,
             "%s %s of %d KiB without a token: 401 and closed, no 100 Continue"
             % (method, path, size // 1024), r.brief() if r else "no answer")
    r, closed = first_answer(s, head("POST", "/api/admin/users", 4 * MiB, runner))
    t.ok(r is not None and r.status == 403 and closed,
         "a 4 MiB roster with a runner token: 403 from the headers, closed",
         r.brief() if r else "no answer")

    # Anonymous requests that may go on get a few KiB of body.
    r, closed = first_answer(s, head("POST", "/login", 100000,
                                     extra="Content-Type: application/x-www-form-urlencoded\r\n"))
    t.ok(r is not None and r.status == 413 and closed and b"4 KiB" in r.body,
         "a 100 kB sign-in form: 413 naming the 4 KiB limit, no 100 Continue",
         r.brief() if r else "no answer")
    r, _ = first_answer(s, head("POST", "/login", 300))
    t.ok(r is not None and r.status == 100, "a 300-byte sign-in form: 100 Continue",
         r.brief() if r else "no answer")
    r = s.post("/api/no/such/path", body=b"x" * 10000)
    t.error(r, 413, "payload_too_large", "10 kB to an unknown API path without a token")
    r = s.post("/api/no/such/path", token="alice_q7", body=b"x" * 10000)
    t.error(r, 404, "not_found", "the same with a token: the 404 it needs")

    # A bodiless request refused at admission keeps its connection.
    c = s.connect()
    c.sendall(b"GET /api/me HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    rd = SockReader(c)
    got = [rd.response(5), rd.response(5)]
    c.close()
    t.eq([x.status if x else None for x in got], [401, 200],
         "GET /api/me without a token (401) and a pipelined GET /healthz on one connection")
    r = s.get("/api/me")
    t.ok(r.status == 401 and "Bearer" in (r.header("www-authenticate") or ""),
         "a 401 from admission says WWW-Authenticate: Bearer", r.brief())


def memory(t):
    """75 anonymous 8 MiB result uploads pushed as fast as the server takes
    them and held open: the server's peak RSS must not grow by their size.
    (Before admission it grew by 600 MiB and met the OOM killer.)"""
    s = Server(labs=["vadd"], args=["--max-conns-per-address", "0"], tap=t)
    hwm0 = s.rss_kb("VmHWM")
    n, size, chunk = 75, 8 * MiB, b"\0" * (256 * 1024)
    socks, sent, answers = [], {}, {}
    for i in range(n):
        c = s.connect()
        c.sendall(head("POST", "/api/runner/jobs/1/result", size, expect=False))
        c.setblocking(False)
        socks.append(c)
        sent[c] = 0
        answers[c] = b""
    live = list(socks)
    end = time.time() + 60      # a safety stop, not a measurement
    while live and time.time() < end:
        _, wr, _ = select.select([], live, [], 1.0)
        for c in wr:
            try:
                sent[c] += c.send(chunk[: max(0, min(len(chunk), size - 1 - sent[c]))] or b"")
            except OSError:
                live.remove(c)          # the server closed it: fine
                continue
            if sent[c] >= size - 1:
                live.remove(c)          # all but the last byte: held open, incomplete
    hwm1 = s.rss_kb("VmHWM")
    for c in socks:
        c.settimeout(5)
        try:
            answers[c] = c.recv(4096)
        except OSError:
            pass
    total = sum(sent.values())
    grew = (hwm1 - hwm0) // 1024
    t.ok(grew < 48, "75 anonymous 8 MiB uploads held open: the server's peak memory grew by "
         "%d MiB (< 48; %d MiB of body was pushed at it)" % (grew, total // MiB))
    n401 = sum(1 for c in socks if answers[c].startswith(b"HTTP/1.1 401"))
    t.eq(n401, n, "every one of them was answered 401")
    for c in socks:
        c.close()
    t.ok(s.healthy(), "the server still serves")
    s.stop()


def throttle(t):
    """The failed-check throttle counts what failed -- a token, a session
    cookie, the token typed into the sign-in form -- not the address: a
    class behind one NAT address shares it, and one student's 31 bad tokens
    used to leave every classmate's valid token 429 for a minute."""
    s = Server(labs=["vadd"], args=["--auth-fail-limit", "5", "--auth-fail-window", "3600"],
               tap=t)
    codes = [s.get("/api/me", token=WRONG).status for _ in range(5)]
    t.eq(codes, [401] * 5, "5 wrong tokens from one address: 401 each")
    r = s.get("/api/me", token=WRONG)
    t.error(r, 429, "rate_limited", "the 6th try of that wrong token")
    ra = r.header("retry-after") or ""
    t.ok(ra.isdigit() and 1 <= int(ra) <= 3600 and (r.error() or {}).get("retry_after") == int(ra),
         "...with Retry-After (%s s) and error.retry_after" % ra, r.brief())
    r = s.post("/api/runner/jobs/1/result", token=WRONG, body=b"{}")
    t.status(r, 429, "that wrong token on a runner route: 429 before its body")
    r = s.get("/api/me", token="alice_q7")
    t.ok(r.status == 200 and (r.json() or {}).get("name") == "alice_q7",
         "a classmate's valid token from the same address: 200", r.brief())
    r = s.post("/api/runner/jobs/1/result", token="runner1", body=b"{}")
    t.ok(r.status not in (401, 429), "a runner's valid token from that address is not refused", r.brief())
    other = "cgs_" + "fedcba9876543210" * 4
    t.status(s.get("/api/me", token=other), 401, "another wrong token: 401 (its own count)")
    v = s.metric("cugrade_http_admission_refused_total", code="429", source="127.0.0.2")
    t.eq(v, 2.0, "cugrade_http_admission_refused_total{code=\"429\"} counts the 2 refusals")

    # A failing session cookie counts under itself; a valid one is served.
    sess, _ = s.login(s.tok["bob_z3"])
    bad = {"Cookie": "cugrade_session=" + "ab" * 32}
    codes = [s.get("/api/me", headers=bad).status for _ in range(6)]
    t.eq(codes, [401] * 5 + [429], "a made-up session cookie: 401 five times, then 429")
    r = s.get("/api/me", headers={"Cookie": "cugrade_session=" + (sess or "")})
    t.ok(r.status == 200 and (r.json() or {}).get("name") == "bob_z3",
         "a valid session from the same address: 200", r.brief())

    # Failed sign-ins through the web form count the token typed in.
    def signin(token):
        c = s.get("/login", source="127.0.0.3")
        m = re.search(r'name="csrf" value="([0-9a-f]+)"', c.body.decode())
        csrf = m.group(1) if m else ""
        return s.post("/login", source="127.0.0.3", body=("csrf=%s&token=%s" % (csrf, token))
                      .encode(), headers={"Content-Type": "application/x-www-form-urlencoded",
                                          "Cookie": "cugrade_login=" + csrf})
    t.error(signin(WRONG), 429, "rate_limited", "the throttled wrong token in the sign-in form: 429")
    wrong = "cgs_" + "13579bdf02468ace" * 4
    codes = [signin(wrong).status for _ in range(5)]
    t.eq(codes, [401] * 5, "5 tries of another wrong token in the sign-in form: 401 each")
    t.error(signin(wrong), 429, "rate_limited", "the 6th try of that token in the form")
    r = signin(s.tok["alice_q7"])
    t.ok(r.status in (302, 303), "then a valid token in the form from that address signs in", r.brief())

    # The window ends.
    s2 = Server(labs=["vadd"], args=["--auth-fail-limit", "2", "--auth-fail-window", "2"],
                tap=t)
    for _ in range(2):
        s2.get("/api/me", token=WRONG)
    r = s2.get("/api/me", token=WRONG)
    ra = r.header("retry-after") or "0"
    t.ok(r.status == 429 and ra.isdigit() and 1 <= int(ra) <= 2,
         "limit 2 in 2 s: after 2 failures, 429 with Retry-After <= 2", r.brief())
    t.status(s2.get("/api/me", token="alice_q7"), 200, "meanwhile a valid token is served")
    time.sleep(int(ra) + 0.3)
    t.status(s2.get("/api/me", token=WRONG), 401,
             "after waiting Retry-After seconds the token is checked again (401)")


def main(t):
    s = Server(labs=["vadd"], tap=t)
    admission(t, s)
    s.stop()
    memory(t)
    throttle(t)


t = Tap()
require_binary(t)
t.run(main)
t.exit()
