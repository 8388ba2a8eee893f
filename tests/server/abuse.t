#!/usr/bin/env python3
# suite: idle  (tests/run.sh: it waits on the server's timeouts; its CPU is under 5% of its wall time)
# Hostile HTTP: pipelining, request smuggling, NULs and encoded traversal in
# paths, absurd ids, deeply nested JSON, a client that never reads its
# responses, and a connection flood from one address.  Every case: a 4xx (never 5xx, never a
# crash) and the server keeps serving.
import os
import resource
import socket
import sys
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, kernel, SockReader  # noqa: E402


def raise_nofile(want=4096):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    new = min(hard, max(soft, want)) if hard != resource.RLIM_INFINITY else max(soft, want)
    resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
    return new


def main(t):
    nofile = raise_nofile()     # the server inherits it
    s = Server(labs=["vadd"], tap=t)
    tok = s.tok["alice_q7"]
    r = s.submit("vadd", kernel("alice"))
    sid = (r.json() or {}).get("id")
    r = s.submit("vadd", kernel("bob"), token="bob_z3")
    bid = (r.json() or {}).get("id")

    def alive(what):
        t.ok(s.healthy(), "after %s: GET /healthz still answers 200" % what)

    # --- pipelining
    c = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
              b"GET /api/me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + tok.encode() +
              b"\r\n\r\nGET /api/nope HTTP/1.1\r\nHost: x\r\n\r\n")
    got = []
    rd = SockReader(c)
    for _ in range(3):
        rr = rd.response(5)
        got.append(rr.status if rr else None)
        if rr and rr.status == 200 and b"alice_q7" in rr.body:
            got[-1] = "me"
    c.close()
    t.eq(got, [200, "me", 404], "three pipelined requests are answered in order")

    c = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    n = 1000
    c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" * n)
    buf = b""
    deadline = time.time() + 15
    while buf.count(b"HTTP/1.1 200") < n and time.time() < deadline:
        try:
            d = c.recv(1 << 20)
        except socket.timeout:
            break
        if not d:
            break
        buf += d
    c.close()
    t.eq(buf.count(b"HTTP/1.1 200"), n, "%d pipelined GET /healthz in one write: all answered" % n)

    # --- smuggling
    body = kernel("smuggle")
    req = (b"POST /api/labs/vadd/submissions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
           + tok.encode() + b"\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
           b"Transfer-Encoding: chunked\r\n\r\n%x\r\n" % (len(body) + 8, len(body))
           + body + b"\r\n0\r\n\r\n")
    r = s.raw(req)
    t.ok(r is not None and r.status == 400,
         "Content-Length together with Transfer-Encoding is refused (400)",
         None if r is None else r.brief())
    r = s.raw(b"POST /api/labs/vadd/submissions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
              + tok.encode() + b"\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n"
              b"Content-Length: 50\r\n\r\nhello")
    t.ok(r is not None and r.status == 400, "two different Content-Length headers: 400",
         None if r is None else r.brief())
    alive("smuggling attempts")

    # --- paths
    r = s.raw(b"GET /api/labs\x00/vadd HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
              + tok.encode() + b"\r\n\r\n")
    t.ok(r is not None and r.status == 400, "a NUL byte in the request path: 400",
         None if r is None else r.brief())
    # Other spellings of an id: of alice's own (a lenient parser or a path
    # normalizer would answer 200 with it: bob's would be refused to her
    # anyway, whatever the spelling) and of bob's.
    r = s.get("/api/submissions/%d" % sid, token="alice_q7")
    t.ok(r.status == 200 and (r.json() or {}).get("id") == sid,
         "GET /api/submissions/%d (alice's, spelled plainly) as alice: 200" % sid, r.brief())
    for path in ["/api/labs/%00", "/api/submissions/%d%%00" % sid,
                 "/api/submissions/%d%%2f..%%2f%d" % (sid, bid),
                 "/api/submissions/%d/../%d" % (sid, bid),
                 "/api/submissions/%d%%2f..%%2f%d" % (bid, sid),
                 "/api/submissions/%d/../%d" % (bid, sid),
                 "/api/labs/..%2f..%2f..%2fetc%2fpasswd", "/api/labs/vadd%2f..%2fvadd",
                 "/api/submissions/99999999999999999999999999", "/api/submissions/-1",
                 "/api/submissions/0x1", "/api/submissions/0%d" % sid,
                 "/api/submissions/%d.0" % sid, "/api/submissions/+%d" % sid,
                 "/api/submissions/%d.0" % bid, "/api/submissions/+%d" % bid]:
        r = s.get(path, token="alice_q7")
        t.ok(400 <= r.status < 500 and r.error() is not None and b"bob" not in r.body,
             "GET %s as alice: a 4xx JSON error, never bob's submission" % path, r.brief())
    r = s.post("/api/labs/..%2fvadd/submissions", token="alice_q7", body=kernel(),
               headers={"Content-Type": "text/plain"})
    t.error(r, 404, "not_found", "POST /api/labs/..%2fvadd/submissions")
    r = s.post("/api/lab/vadd/submissions", token="alice_q7", body=kernel(),
               headers={"Content-Type": "text/plain"})
    t.error(r, 404, "not_found", "POST /api/lab/vadd/submissions (a typo in 'labs') with a body")
    long_url = "/api/labs/" + "a" * (20 * 1024)
    r = s.raw(("GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % long_url).encode())
    t.ok(r is not None and r.status in (414, 431) and r.error() is not None,
         "a 20 KiB URL: 414 or 431 with a JSON error", None if r is None else r.brief())
    alive("hostile paths")

    # --- deeply nested JSON (a parser recursing per level would overflow its stack)
    for what, path, method in [("users", "/api/admin/users", "POST"),
                               ("rubric", "/api/admin/labs/vadd/rubric", "PUT")]:
        deep = b"[" * 200000 + b"]" * 200000
        r = s.request(method, path, token="admin", body=deep,
                      headers={"Content-Type": "application/json"}, timeout=20)
        t.ok(r.status in (400, 413) and r.error() is not None,
             "%s %s with 200,000 nested arrays: 400/413 JSON error" % (method, path), r.brief())
    r = s.post("/api/runner/claim", token="runner1", body=b'{"wait":' + b"9" * 400 + b"}",
               headers={"Content-Type": "application/json"})
    t.ok(r.status in (200, 204, 400), "claim with a 400-digit wait: 200/204/400, no crash",
         r.brief())
    r = s.post("/api/runner/claim", token="runner1", body=b'{"wait":-5}',
               headers={"Content-Type": "application/json"})
    t.ok(r.status in (200, 204, 400), "claim with a negative wait: 200/204/400", r.brief())
    alive("deep JSON")

    # --- a client that pipelines and never reads: bounded memory, others served
    rss0 = s.rss_kb()
    c = socket.create_connection(("127.0.0.1", s.port), timeout=2)
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    one = (b"GET /api/labs/vadd HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
           + tok.encode() + b"\r\n\r\n")
    c.setblocking(False)
    sent = 0
    end = time.time() + 4
    while time.time() < end and sent < 200 * 1024 * 1024:
        try:
            sent += c.send(one * 200)
        except BlockingIOError:
            time.sleep(0.01)
        except OSError:
            break
    rss1 = s.rss_kb()
    t.ok(s.healthy(), "while a client pipelines without reading, others are served")
    t.ok(rss1 - rss0 < 64 * 1024,
         "...and the server's memory stays bounded (+%d kB after %d bytes of requests)"
         % (rss1 - rss0, sent))
    c.close()
    alive("a client that never reads")

    # --- connection flood from one address: it gets its share (64), no more
    # (a newcomer replaces its idle connection), and a client from another
    # address is still served
    conns = []
    want = min(1000, nofile - 100)
    try:
        for _ in range(want):
            conns.append(socket.create_connection(("127.0.0.1", s.port), timeout=5))
    except OSError as e:
        t.diag("opened %d connections, then: %s" % (len(conns), e))
    t0 = time.time()
    h = s.healthy(timeout=5, source="127.0.0.2")
    t.ok(h, "with %d connections opened from 127.0.0.1, a client from 127.0.0.2 is served "
         "(%.2f s)" % (len(conns), time.time() - t0))

    def still_open():
        n = 0
        for c in conns:
            c.setblocking(False)
            try:
                n += c.recv(1) != b""      # the server sends nothing unasked
            except BlockingIOError:
                n += 1
            except OSError:
                pass
        return n
    n_open = still_open()
    end = time.time() + 15      # the server sheds them as it accepts them
    while n_open > 64 and time.time() < end:
        time.sleep(0.2)
        n_open = still_open()
    t.eq(n_open, 64, "of %d connections from one address, the server keeps 64 open "
         "(each newcomer in the place of the one idle longest)" % len(conns))
    shed = s.metric("cugrade_http_connections_shed_total", reason="idle_client",
                    source="127.0.0.2")
    t.eq(shed, float(len(conns) - 64), "cugrade_http_connections_shed_total"
         "{reason=\"idle_client\"} counts the ones closed")
    for c in conns:
        c.close()
    time.sleep(0.5)
    alive("a connection flood")
    t.ok(s.alive(), "the server process is still running")


t = Tap()
require_binary(t)
t.run(main)
t.exit()
