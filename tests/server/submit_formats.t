#!/usr/bin/env python3
# Submission bodies: every valid multipart/form-data shape that browsers and
# curl send (quoted boundary, preamble, lower-case part headers, extra fields
# before and after, CRLF inside the file) and raw bodies with charset
# parameters are accepted with the source stored byte for byte; invalid UTF-8
# (overlong forms, surrogates, truncated sequences) is refused.
import os
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, kernel, sha256  # noqa: E402

B = "XyZ-boundary-42"


def part(name, filename, data, extra=b"", lower=False):
    cd = b"content-disposition" if lower else b"Content-Disposition"
    h = cd + b': form-data; name="' + name + b'"'
    if filename is not None:
        h += b'; filename="' + filename + b'"'
    return b"--" + B.encode() + b"\r\n" + h + b"\r\n" + extra + b"\r\n" + data + b"\r\n"


END = b"--" + B.encode() + b"--\r\n"


def main(t):
    s = Server(labs=["vadd"], tap=t)

    def check_stored(r, src, what):
        sid = (r.json() or {}).get("id")
        if not t.status(r, 202, "%s: accepted (202)" % what):
            return
        g = s.get("/api/submissions/%s/source" % sid, token="alice_q7")
        o = s.submission(sid) or {}
        t.ok(g.body == src and o.get("sha256") == sha256(src) and o.get("size") == len(src),
             "%s: the stored source is byte for byte the file part" % what,
             "stored %d bytes %r...%r, sent %d bytes" % (len(g.body), g.body[:20], g.body[-20:],
                                                         len(src)))

    def send_mp(body, ctype=None):
        return s.post("/api/labs/vadd/submissions", token="alice_q7", body=body,
                      headers={"Content-Type": ctype or "multipart/form-data; boundary=" + B})

    src = kernel("crlf") + b"// windows line\r\n// ends with blank lines\r\n\r\n"
    check_stored(send_mp(part(b"file", b"kernel.cu", src) + END), src,
                 "a file that ends in CRLF CRLF")
    src = kernel("no newline").rstrip(b"\n")
    check_stored(send_mp(part(b"file", b"kernel.cu", src) + END), src,
                 "a file without a final newline")
    src = kernel("dashes") + b"// --XyZ-boundary-4 almost the boundary\r\n--\r\n-- \n"
    check_stored(send_mp(part(b"file", b"kernel.cu", src) + END), src,
                 "a file containing near-boundary lines")
    src = kernel("quoted")
    check_stored(send_mp(part(b"file", b"kernel.cu", src) + END,
                         'multipart/form-data; boundary="%s"' % B), src, "a quoted boundary")
    check_stored(send_mp(part(b"file", b"kernel.cu", src) + END,
                         "multipart/form-data; charset=utf-8; boundary=%s" % B), src,
                 "a boundary after another parameter")
    check_stored(send_mp(b"This is a preamble.\r\n" + part(b"file", b"kernel.cu", src) + END
                         + b"epilogue\r\n"), src, "a preamble and an epilogue")
    check_stored(send_mp(part(b"file", b"kernel.cu", src, lower=True) + END), src,
                 "lower-case part header names")
    check_stored(send_mp(part(b"file", b"kernel.cu", src,
                              extra=b"Content-Type: text/x-cuda\r\n") + END), src,
                 "a Content-Type on the file part")
    check_stored(send_mp(part(b"comment", None, b"first try" * 100)
                         + part(b"file", b"kernel.cu", src) + part(b"submit", None, b"Submit")
                         + END), src, "other fields before and after the file")
    r = send_mp(part(b"file", b"kernel.cu", src) + END)
    t.eq((s.submission((r.json() or {}).get("id")) or {}).get("filename"), "kernel.cu",
         "the filename of the part is recorded")
    r = send_mp(part(b"file", b"my_kernel-v2.cu", src) + END)
    t.eq((s.submission((r.json() or {}).get("id")) or {}).get("filename"), "my_kernel-v2.cu",
         "a filename with _ - . digits is kept")

    # raw bodies
    for ctype in ("text/plain; charset=utf-8", "application/octet-stream", "TEXT/PLAIN"):
        src = kernel("raw " + ctype)
        r = s.post("/api/labs/vadd/submissions?filename=k2.cu", token="alice_q7", body=src,
                   headers={"Content-Type": ctype})
        check_stored(r, src, "a raw body with Content-Type %s" % ctype)
    src = "// ünïcödé, 日本語, emoji 🚀\n".encode() + kernel("utf8")
    r = s.post("/api/labs/vadd/submissions", token="alice_q7", body=src,
               headers={"Content-Type": "text/plain"})
    check_stored(r, src, "a UTF-8 source with 2-, 3- and 4-byte characters")
    src = b"\xef\xbb\xbf" + kernel("bom")
    r = s.post("/api/labs/vadd/submissions", token="alice_q7", body=src,
               headers={"Content-Type": "text/plain"})
    check_stored(r, src, "a UTF-8 source with a BOM")

    # invalid UTF-8 (C0 and C1 never begin a character, so the two-byte
    # overlongs are refused by their first byte alone; the three- and
    # four-byte ones start with a lead byte that is fine elsewhere and are
    # refused only for the value they spell)
    for what, bad in [("an overlong '/' (C0 AF)", b"\xc0\xaf"),
                      ("an overlong NUL (C0 80)", b"\xc0\x80"),
                      ("a three-byte overlong '/' (E0 80 AF)", b"\xe0\x80\xaf"),
                      ("a four-byte overlong '/' (F0 80 80 AF)", b"\xf0\x80\x80\xaf"),
                      ("a UTF-16 surrogate (ED A0 80)", b"\xed\xa0\x80"),
                      ("a code point past U+10FFFF (F4 90 80 80)", b"\xf4\x90\x80\x80"),
                      ("a truncated 3-byte sequence (E6 97)", b"\xe6\x97"),
                      ("a lone continuation byte (80)", b"\x80"),
                      ("Latin-1 (E9)", b"caf\xe9")]:
        r = s.post("/api/labs/vadd/submissions", token="alice_q7",
                   body=kernel("bad utf8") + b"// " + bad + b"\n",
                   headers={"Content-Type": "text/plain"})
        t.error(r, 400, "binary_source", "a source with %s" % what)
    t.ok(s.healthy(), "the server still serves")


t = Tap()
require_binary(t)
t.run(main)
t.exit()
