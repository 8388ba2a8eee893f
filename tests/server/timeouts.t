#!/usr/bin/env python3
# suite: idle  (tests/run.sh: it waits on the server's timeouts; its CPU is under 5% of its wall time)
# Slow and idle clients with short timeouts (serve --request-timeout 2
# --idle-timeout 2): a request whose headers trickle is dropped (408 or a
# close) after about 2 s; a body that trickles after about 3x that; an idle
# keep-alive connection is closed after about 2 s; a steady client is served.
import os
import socket
import sys
import time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, kernel, SockReader  # noqa: E402


def trickle(s, data, per_byte, limit):
    """Send data one byte per per_byte seconds until the server answers or
    closes; returns (seconds, status or None)."""
    c = socket.create_connection(("127.0.0.1", s.port), timeout=limit)
    c.settimeout(per_byte)
    t0 = time.time()
    rd = SockReader(c)
    try:
        for i in range(len(data)):
            try:
                c.send(data[i:i + 1])
            except OSError:
                return time.time() - t0, None
            try:
                d = c.recv(65536)
                if not d:
                    return time.time() - t0, None
                rd.buf += d
                c.settimeout(3)
                r = rd.response(3)
                return time.time() - t0, (r.status if r else None)
            except socket.timeout:
                pass
            except OSError:
                return time.time() - t0, None
            if time.time() - t0 > limit:
                return time.time() - t0, "still open"
        return time.time() - t0, "sent everything"
    finally:
        c.close()


def main(t):
    s = Server(labs=["vadd"], args=["--request-timeout", "2", "--idle-timeout", "2"], tap=t)

    # In the background: a claim asking to wait 100 s on an empty queue is
    # capped at 30 s (docs/api.md) and answered 204; the idle timeout does
    # not cut a parked long-poll.
    import threading
    lp = {}

    def longpoll():
        run = s.runner()
        t0 = time.time()
        try:
            job = run.claim(wait=100)
            lp["status"], lp["job"] = run.last.status, job
        except Exception as e:  # noqa: BLE001
            lp["error"] = repr(e)
        lp["took"] = time.time() - t0
    th = threading.Thread(target=longpoll, daemon=True)
    th.start()

    took, st = trickle(s, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"z" * 100, 0.25, 12)
    t.ok(st in (408, None) and 1.5 <= took <= 4,
         "headers trickling at 4 bytes/s are cut off after about 2 s (408 or close)",
         "after %.2f s: %r" % (took, st))

    body = kernel("slow body") * 4
    head = ("POST /api/labs/vadd/submissions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
            "Content-Type: text/plain\r\nContent-Length: %d\r\n\r\n"
            % (s.tok["alice_q7"], len(body))).encode()
    # The headers arrive at once; the body trickles.
    c = socket.create_connection(("127.0.0.1", s.port), timeout=20)
    c.sendall(head)
    t0 = time.time()
    c.settimeout(0.25)
    st = "still open"
    rd = SockReader(c)
    for i in range(len(body)):
        try:
            c.send(body[i:i + 1])
            d = c.recv(65536)
            if not d:
                st = None
                break
            rd.buf += d
            r = rd.response(3)
            st = r.status if r else None
            break
        except socket.timeout:
            pass
        except OSError:
            st = None
            break
        if time.time() - t0 > 20:
            break
    took = time.time() - t0
    c.close()
    t.ok(st in (408, None) and 4 <= took <= 9,
         "a body trickling at 4 bytes/s is cut off after about 3 x 2 s (408 or close)",
         "after %.2f s: %r" % (took, st))
    t.ok(s.healthy(), "the server still serves after the slow clients")

    # idle keep-alive
    c = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    rd = SockReader(c)
    r = rd.response(5)
    t0 = time.time()
    try:
        c.settimeout(10)
        d = c.recv(100)
    except OSError:
        d = b""
    took = time.time() - t0
    c.close()
    t.ok(r is not None and r.status == 200 and d == b"" and 1.5 <= took <= 5,
         "an idle keep-alive connection is closed after about 2 s (%.2f s)" % took, d)

    # a steady client is not cut off: 10 requests on one connection, 0.5 s apart
    c = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    rd = SockReader(c)
    codes = []
    for _ in range(6):
        c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        r = rd.response(5)
        codes.append(r.status if r else None)
        time.sleep(0.5)
    c.close()
    t.eq(codes, [200] * 6, "a keep-alive client sending every 0.5 s is served throughout")

    th.join(45)
    t.ok(lp.get("status") == 204 and 29 <= lp.get("took", 0) <= 33,
         "a claim with wait 100 on an empty queue answers 204 after the 30 s cap "
         "(%.1f s)" % lp.get("took", -1), lp)


t = Tap()
require_binary(t)
t.run(main)
t.exit()
