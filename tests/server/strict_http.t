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
from cugrade_test import Tap, Server, SockReader, kernel, require_binary  # noqa: E402


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
    # http-parser (not strict) took any bytes for most of "HTTP/": its
    # "version" ran on past the head's end, and the server aborted (assert)
    # on one packet from anyone
    refused(b"GET /healthz H\r\n\r\nTTP/1.1\r\n\r\n", 400,
            "a request line ending in 'H' (its 'version' read on past the head)")
    refused(b"GET /healthz H\r\nP/1.1\r\nHost: x\r\n\r\n", 400,
            "a version spread over two lines ('H' CRLF 'P/1.1')")
    refused(b"GET /healthz HTTP/1.1 \r\nHost: x\r\n\r\n", 400,
            "a space after the version")
    # http-parser reads a byte >= 0x80 in a chunk size as the digit 0: the
    # chunk below was 512 bytes to it and 2 to the framing (the server aborted)
    refused(b"POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"2\xff\xff\r\nab\r\n0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 400,
            "a chunk size with bytes >= 0x80 after its digits")
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

    # obs-fold (RFC 9112 5.2): a proxy may unfold it, or take the folded
    # line for a header of its own.
    refused(b"POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n",
            400, "a folded 'Transfer-Encoding:\\r\\n chunked'")
    refused(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\r\n\tb\r\n\r\n", 400, "a folded ordinary header")
    # A bare LF (RFC 9112 2.2): a proxy that wants CRLF reads one header
    # where we would read two.
    refused(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-B: y\nContent-Length: 31\r\n\r\n",
            400, "a bare LF hiding Content-Length")
    refused(b"GET /healthz HTTP/1.1\nHost: x\r\n\r\n", 400, "a bare LF after the request line")
    refused(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\n", 400, "a bare LF ending the head")
    refused(b"GET /healthz HTTP/1.1\r\nHost: x\rX: y\r\n\r\n", 400, "a bare CR in the head")
    auth = b"Authorization: Bearer " + s.tok["alice_q7"].encode() + b"\r\n"
    sub = b"POST /api/labs/vadd/submissions HTTP/1.1\r\nHost: x\r\n" + auth + \
        b"Content-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    src = kernel("chunked")
    size = b"%x" % len(src)
    for frame, what in ((size + b";a=b\n" + src + b"\r\n0\r\n\r\n", "a chunk extension ended by a bare LF"),
                        (size + b"\n" + src + b"\r\n0\r\n\r\n", "a chunk size line ended by a bare LF"),
                        (size + b"\r\n" + src + b"\n0\r\n\r\n", "chunk data ended by a bare LF"),
                        (size + b"\r\n" + src + b"\r\n0\n\r\n", "the last chunk ended by a bare LF"),
                        (size + b"\r\n" + src + b"\r\n0\r\nX-T: 1\n\r\n", "a trailer ended by a bare LF"),
                        (size + b"\r\n" + src + b"\r\n0\r\nX-T: 1\r\n 2\r\n\r\n", "a folded trailer")):
        refused(sub + frame, 400, what)
    # Well-formed chunked framing with an extension and a trailer, then a
    # pipelined request whose body holds bare LFs (data, not framing).
    c = s.connect()
    c.sendall(sub + size + b" ;a=\"b\"\r\n" + src + b"\r\n0\r\nX-T: 1\r\n\r\n" +
              sub.replace(b"Transfer-Encoding: chunked", b"Content-Length: %d" % len(src)) + src +
              b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    rd = SockReader(c)
    got = [rd.response(), rd.response(), rd.response()]
    c.close()
    t.ok([g and g.status for g in got] == [202, 202, 200],
         "chunked with an extension and a trailer, a Content-Length body with bare LFs, then GET: 202 202 200",
         [g and g.brief() for g in got])

    # Host (RFC 9112 3.2): exactly one in HTTP/1.1.
    refused(b"GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "two Host headers")
    refused(b"GET /healthz HTTP/1.1\r\n\r\n", 400, "HTTP/1.1 without Host")
    refused(b"GET /healthz HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", 400, "HTTP/1.0 with two Host headers")
    r = s.raw(b"GET /healthz HTTP/1.0\r\n\r\n")
    t.ok(r is not None and r.status == 200, "HTTP/1.0 without Host: 200", None if r is None else r.brief())
    r = s.raw(b"\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    t.ok(r is not None and r.status == 200, "an empty line before the request line is ignored: 200",
         None if r is None else r.brief())


t = Tap()
require_binary(t)
t.run(main)
t.exit()
