#!/usr/bin/env python3
"""Strict HTTP/1.1 framing (RFC 9112) against the real server: what a
lenient parser accepts and a proxy in front of us would read differently
(request smuggling) is refused -- a space before a header's colon,
transfer codings other than a lone chunked, Transfer-Encoding
beside Content-Length, HTTP versions other than 1.0 and 1.1. Well-formed
HTTP/1.0 and HTTP/1.1 requests still work. Prints TAP lines."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__))))
from cugrade_test import Tap, Server, require_binary  # noqa: E402


def main(t):
    s = Server(tap=t)

    def refused(raw, status, what):
        r = s.raw(raw)
        t.ok(r is not None and r.status == status and r.error() is not None,
             "%s: %d with a JSON error" % (what, status), None if r is None else r.brief())
        t.ok(s.healthy(), "after %s the server still answers" % what)

    body = b"x" * 10
    refused(b"POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
            400, "'Transfer-Encoding : chunked' (space before the colon)")
    refused(b"POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
            501, "'Transfer-Encoding: gzip, chunked'")
    refused(b"POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            501, "two Transfer-Encoding headers")
    r = s.raw(b"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
    t.ok(r is not None and r.status == 400, "Content-Length beside Transfer-Encoding: 400",
         None if r is None else r.brief())
    r = s.raw(b"GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n")
    t.ok(r is not None and r.status == 400, "HTTP/9.9: refused (%s)" % (r and r.status),
         None if r is None else r.brief())
    r = s.raw(b"GET /healthz HTTP/0.9\r\nHost: x\r\n\r\n")
    t.ok(r is not None and r.status == 400, "HTTP/0.9 with a version: refused",
         None if r is None else r.brief())
    r = s.raw(b"GET /healthz\r\n\r\n")
    t.ok(r is None or r.status == 400, "an HTTP/0.9 simple request gets no 200",
         None if r is None else r.brief())

    r = s.raw(b"GET /healthz HTTP/1.0\r\nHost: x\r\n\r\n")
    t.ok(r is not None and r.status == 200, "a well-formed HTTP/1.0 request: 200", None if r is None else r.brief())
    r = s.raw(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Custom_Name.v2: a, b\r\n\r\n")
    t.ok(r is not None and r.status == 200, "token characters in a field name are fine: 200",
         None if r is None else r.brief())
    del body


t = Tap()
require_binary(t)
t.run(main)
t.exit()
