#!/usr/bin/env python3
# suite: idle  (tests/run.sh: it waits on the server's timeouts; its CPU is under 5% of its wall time)
# Bad input: each is answered with a clear 4xx JSON error, and the server
# still serves GET /healthz afterwards.  Ends with a slowloris client (headers
# at one byte a second), which must be dropped while others are served.
import os
import random
import socket
import sys
import threading
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import (Tap, Server, require_binary, kernel, multipart,  # noqa: E402
                          read_response)

SUB = "/api/labs/vadd/submissions"


def main(t):
    s = Server(labs=["vadd"], tap=t)
    alice = s.tok["alice_q7"]
    auth = ("Authorization: Bearer %s\r\n" % alice).encode()

    def alive(what):
        t.ok(s.healthy(), "after %s: GET /healthz still answers 200" % what)

    def post_sub(body, ctype="application/octet-stream", query="", token="alice_q7"):
        h = {"Content-Type": ctype} if ctype is not None else {}
        return s.post(SUB + query, token=token, body=body, headers=h)

    # --- HTTP framing
    r = s.raw(b"GARBAGE\r\n\r\n")
    t.error(r, 400, "bad_request", "malformed request line 'GARBAGE'")
    alive("a malformed request line")

    r = s.raw(b"GET /healthz HTTP/9.9 extra\r\nHost: x\r\n\r\n")
    t.ok(r is not None and 400 <= r.status < 500 and r.error() is not None,
         "request line with a bogus version gets a 4xx JSON error",
         None if r is None else r.brief())
    alive("a bogus HTTP version")

    big = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Filler: " + b"a" * (17 * 1024) + b"\r\n\r\n"
    r = s.raw(big)
    t.error(r, 431, "header_too_large", "17 KiB header")
    alive("an oversized header")

    many = b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"".join(
        b"X-H%d: %s\r\n" % (i, b"b" * 60) for i in range(400)) + b"\r\n"
    r = s.raw(many)
    t.error(r, 431, "header_too_large", "400 headers of 64 bytes (25 KiB in all)")
    alive("many headers")

    rng = random.Random(1234)
    junk = bytes([0x00, 0xff, 0x16, 0x03]) + bytes(rng.getrandbits(8) for _ in range(4096))
    r = s.raw(junk)
    t.ok(r is not None and r.status == 400 and r.error() is not None,
         "4 KiB of binary junk (TLS-looking) gets 400 with a JSON error",
         None if r is None else r.brief())
    alive("binary junk")

    # Junk that stops mid-request and then closes: nothing to answer, no crash.
    for chunk in (b"POST /api/labs/vadd/submissions HTTP/1.1\r\nContent-Length: 100\r\n\r\nabc",
                  b"\x00" * 10, b"GET / HTTP/1.1\r\nHost"):
        c = socket.create_connection(("127.0.0.1", s.port))
        c.sendall(chunk)
        c.close()
    alive("three connections that close mid-request")

    # --- bodies
    body = b"/" * (256 * 1024 + 1)
    req = (b"POST " + SUB.encode() + b" HTTP/1.1\r\nHost: x\r\n" + auth +
           b"Content-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n" % len(body))
    r = s.raw(req + body)
    t.error(r, 413, "payload_too_large", "raw body of 256 KiB + 1 byte")
    alive("an oversized raw body")

    r = s.raw(req.replace(b"Content-Length: %d" % len(body), b"Content-Length: 1000000000"))
    t.error(r, 413, "payload_too_large", "Content-Length of 1 GB (answered before the body)")
    alive("a 1 GB Content-Length")

    ctype, mp = multipart([("file", "kernel.cu", b"x" * (300 * 1024))])
    r = post_sub(mp, ctype)
    t.error(r, 413, "payload_too_large", "multipart file of 300 KiB")
    alive("an oversized multipart body")

    chunked = (b"POST " + SUB.encode() + b" HTTP/1.1\r\nHost: x\r\n" + auth +
               b"Content-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
    piece = b"/" * 65536
    for _ in range(5):
        chunked += b"%x\r\n" % len(piece) + piece + b"\r\n"
    chunked += b"0\r\n\r\n"
    r = s.raw(chunked)
    t.error(r, 413, "payload_too_large", "chunked body of 320 KiB")
    alive("an oversized chunked body")

    ok = kernel("exactly at the cap")
    ok = ok + b"/" * (256 * 1024 - len(ok) - 1) + b"\n"
    r = post_sub(ok)
    t.status(r, 202, "a source of exactly 256 KiB is accepted")

    r = post_sub(b"")
    t.error(r, 400, None, "an empty source")
    alive("an empty source")

    r = post_sub(b"__global__ void k() {}\n\x00\x01\x02 binary")
    t.error(r, 400, "binary_source", "a source with NUL bytes")
    r = post_sub(b"__global__ void k() {}\n// \xff\xfe not utf-8\n")
    t.error(r, 400, "binary_source", "a source that is not UTF-8")
    alive("binary sources")

    r = post_sub(kernel(), ctype="application/json")
    t.error(r, 415, "unsupported_media_type", "a raw body sent as application/json")
    alive("a wrong Content-Type")

    # --- multipart
    _, mp = multipart([("file", "kernel.cu", kernel())], boundary="RealBoundary123")
    r = post_sub(mp, "multipart/form-data; boundary=OtherBoundary999")
    t.error(r, 400, None, "multipart whose boundary is not the declared one")
    alive("a bad multipart boundary")

    r = post_sub(mp, "multipart/form-data")
    t.error(r, 400, None, "multipart without a boundary parameter")
    alive("multipart without boundary")

    trunc = mp[: len(mp) // 2]
    r = post_sub(trunc, "multipart/form-data; boundary=RealBoundary123")
    t.error(r, 400, None, "multipart cut off before its closing boundary")
    alive("a truncated multipart body")

    ctype, mp2 = multipart([("notfile", "kernel.cu", kernel()), ("comment", None, b"hi")])
    r = post_sub(mp2, ctype)
    t.error(r, 400, None, "multipart without a part named file")
    err = r.error() or {}
    t.ok("file" in (err.get("message") or ""), "the missing-part message names the 'file' part",
         err)
    alive("a missing file part")

    # --- filenames (path traversal and friends)
    for name in ["../../etc/passwd", "..\\x.cu", "/etc/x.cu", "../kernel.cu",
                 b"a\x00.cu", "kernel.txt", "ker nel.cu", "x" * 70 + ".cu", ".cu/../../a.cu",
                 "--dryrun.cu", "-o.py"]:
        ctype, mp3 = multipart([("file", name, kernel())])
        r = post_sub(mp3, ctype)
        t.error(r, 400, None, "multipart filename %r is refused" % (name,))
    r = post_sub(kernel(), query="?filename=../../etc/passwd")
    t.error(r, 400, None, "raw body with ?filename=../../etc/passwd is refused")
    r = post_sub(kernel(), query="?filename=%2e%2e%2fx.cu")
    t.error(r, 400, None, "raw body with ?filename=%2e%2e%2fx.cu (encoded ../x.cu) is refused")
    # A control byte in a name is refused, never cut off: "a\x00.cu" above is
    # refused for its tail anyway ("a"); these names' heads would pass ("a.cu",
    # or the default kernel.cu for a ?filename= that did not decode).
    for name in [b"a.cu\x00.txt", b"a.cu\n.txt", b"k\x1bernel.cu"]:
        ctype, mp4 = multipart([("file", name, kernel())])
        r = post_sub(mp4, ctype)
        t.error(r, 400, None, "multipart filename %r (a control byte) is refused" % (name,))
        t.ok("control" in ((r.error() or {}).get("message") or ""),
             "... and the message says why (a control character)", r.brief())
    for q in ["?filename=a%00.cu", "?filename=a.cu%00.x", "?filename=a.cu%0a.x", "?filename=%zz.cu"]:
        r = post_sub(kernel(), query=q)
        t.error(r, 400, None, "raw body with %s is refused, not stored as kernel.cu" % q)
    alive("path-traversal filenames")

    # --- auth
    r = post_sub(kernel(), token=None)
    t.error(r, 401, "unauthorized", "submission without a token")
    r = post_sub(kernel(), token="cgs_" + "f" * 64)
    t.error(r, 401, "unauthorized", "submission with a wrong token")
    r = post_sub(kernel(), token=alice[:-1])
    t.error(r, 401, "unauthorized", "submission with a truncated token")
    r = s.post(SUB, body=kernel(), headers={"Authorization": "Basic YWxpY2U6cHc=",
                                            "Content-Type": "text/plain"})
    t.error(r, 401, "unauthorized", "submission with Basic auth instead of Bearer")
    alive("wrong and absent tokens")

    # --- routing
    r = s.post("/api/labs/nosuchlab/submissions", token="alice_q7", body=kernel(),
               headers={"Content-Type": "text/plain"})
    t.error(r, 404, "not_found", "submission to an unknown lab")
    r = s.get("/api/labs/nosuchlab", token="alice_q7")
    t.error(r, 404, "not_found", "GET an unknown lab")
    r = s.get("/api/submissions/999999", token="admin")
    t.error(r, 404, "not_found", "GET an unknown submission id")
    r = s.get("/api/submissions/abc", token="admin")
    t.ok(r.status in (400, 404) and r.error() is not None,
         "GET /api/submissions/abc is a 400/404 JSON error", r.brief())
    r = s.get("/api/no/such/route", token="admin")
    t.error(r, 404, "not_found", "an unknown route")
    r = s.request("DELETE", "/api/labs", token="admin")
    t.error(r, 405, "method_not_allowed", "DELETE /api/labs")
    alive("unknown labs and routes")

    # --- JSON bodies
    r = s.post("/api/admin/users", token="admin", body=b'{"users": [{"name": "x",',
               headers={"Content-Type": "application/json"})
    t.error(r, 400, "malformed_json", "POST /api/admin/users with truncated JSON")
    r = s.post("/api/runner/claim", token="runner1", body=b"{not json}",
               headers={"Content-Type": "application/json"})
    t.error(r, 400, "malformed_json", "POST /api/runner/claim with malformed JSON")
    r = s.put("/api/admin/labs/vadd/rubric", token="admin", body=b"[1,2",
              headers={"Content-Type": "application/json"})
    t.error(r, 400, "malformed_json", "PUT rubric with malformed JSON")
    r = s.post("/api/admin/users", token="admin",
               json_body={"users": [{"name": "eve", "role": "superuser"}]})
    t.error(r, 400, None, "POST /api/admin/users with an unknown role")
    r = s.put("/api/admin/labs/vadd/rubric", token="admin",
              json_body={"lab": "vadd", "due": "2099-12-01T23:59:00Z",
                         "correctness": [{"case": "small", "points": "ten"}]})
    t.error(r, 400, None, "PUT a rubric whose points is a string")
    t.ok("points" in ((r.error() or {}).get("message") or ""),
         "the rubric error message names the bad field (points)", r.brief())
    alive("malformed JSON")

    # --- slowloris
    slowloris(t, s)


def slowloris(t, s):
    """50 idle half-open connections plus one client trickling its headers at
    one byte per second: others are still served at once, and the trickler is
    dropped (within 60 s)."""
    idle = []
    for _ in range(50):
        c = socket.create_connection(("127.0.0.1", s.port))
        c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        idle.append(c)
    state = {"dropped_after": None, "answered": None}
    start = time.time()

    def trickle():
        c = socket.create_connection(("127.0.0.1", s.port))
        c.settimeout(1.0)
        msg = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"z" * 200
        for i in range(len(msg)):
            try:
                c.send(msg[i:i + 1])
            except OSError:
                state["dropped_after"] = time.time() - start
                return
            try:
                d = c.recv(4096)
                if d == b"":
                    state["dropped_after"] = time.time() - start
                    return
                state["answered"] = d[:100]     # a 408 before closing is fine
            except socket.timeout:
                pass
            except OSError:
                state["dropped_after"] = time.time() - start
                return
            if time.time() - start > 60:
                return
        c.close()

    th = threading.Thread(target=trickle, daemon=True)
    th.start()
    time.sleep(2)
    worst = 0.0
    for _ in range(5):
        t0 = time.time()
        h = s.healthy(timeout=2)
        worst = max(worst, time.time() - t0)
        if not h:
            worst = 99
        time.sleep(0.3)
    t.ok(worst < 2.0, "with 50 idle connections and a slowloris client, /healthz answers "
         "within 2 s (worst %.3f s)" % worst)
    r = s.submit("vadd", kernel("during slowloris"))
    t.status(r, 202, "a submission is accepted while the slowloris client trickles")
    th.join(65)
    t.ok(state["dropped_after"] is not None,
         "the slowloris client (1 byte/s) is dropped by the server within 60 s",
         "dropped after: %s" % state["dropped_after"])
    if state["dropped_after"] is not None:
        t.diag("slowloris dropped after %.1f s" % state["dropped_after"])
    dropped = 0
    for c in idle:
        c.settimeout(0.5)
        try:
            c.recv(4096)        # b"" (closed) or an error answer: both count
            dropped += 1
        except socket.timeout:
            pass
        except OSError:
            dropped += 1
        c.close()
    t.ok(dropped == 50, "the 50 idle half-open connections were answered or dropped "
         "by then (%d/50)" % dropped)
    t.ok(s.healthy(), "after slowloris: GET /healthz still answers 200")


t = Tap()
require_binary(t)
t.run(main)
t.exit()
