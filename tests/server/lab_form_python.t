#!/usr/bin/env python3
# The lab page's submit form and Python (docs/python.md): a lab with a CUDA
# harness only offers .cu; a lab with a Python interface or starter and no
# CUDA one offers .py (accept, the pasted name's pattern and default, its
# starter.py shown); a lab with both (the repo's reduction) offers both and
# shows both starters; a .py file sent through the form is accepted and
# queued with its name. The label's <code> is markup, never shown raw. The
# starter downloads from /labs/LAB/starter/starter.py (nothing else does).
import os
import re
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, multipart  # noqa: E402


def form(html):
    m = re.search(r'<form id="submit-form".*?</form>', html, re.S)
    return m.group(0) if m else ""


def main(t):
    s = Server(labs=["vadd", "pylab"], tap=t)
    sess, _ = s.login("alice_q7")
    ck = {"Cookie": "cugrade_session=%s" % sess}
    html = s.get("/labs/vadd", headers=ck).body.decode()
    f = form(html)
    t.ok('accept=".cu"' in f and ".py" not in f and 'value="kernel.cu"' in f,
         "a CUDA-only lab: the form takes .cu only", f[:800])
    t.ok("Upload your <code>.cu</code> file" in f and "&lt;code&gt;" not in f,
         "the label's <code> is markup, not shown raw as &lt;code&gt;", f[:800])
    html = s.get("/labs/pylab", headers=ck).body.decode()
    f = form(html)
    t.ok('accept=".py"' in f and 'value="kernel.py"' in f and r'\.py"' in f and ".cu" not in f,
         "a Python-only lab: the form takes .py (accept, pattern, default name)", f[:800])
    t.ok("Starter file (<code>starter.py</code>)" in html and "Starter file (<code>starter.cu" not in html,
         "its starter.py is shown", html[-1500:])
    t.ok('href="/labs/pylab/starter/starter.py"' in html and "Download starter.py" in html,
         "the lab page links a download of its starter.py", html[-1500:])
    r = s.get("/labs/pylab/starter/starter.py", headers=ck)
    want = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "labs",
                             "pylab", "starter.py"), "rb").read()
    t.ok(r.status == 200 and r.body == want
         and 'attachment; filename="starter.py"' in (r.header("content-disposition") or ""),
         "...which downloads the file itself", r.brief())
    t.eq([s.get(u, headers=ck).status for u in ("/labs/pylab/starter/starter.cu",
                                                 "/labs/pylab/starter/lab.json",
                                                 "/labs/pylab/starter/..%2flab.json")],
         [404, 404, 404], "no other file of the lab downloads (a missing starter, lab.json, ../)")
    t.eq(s.get("/labs/pylab/starter/starter.py").status in (302, 303, 401), True,
         "a visitor without a session gets no starter")
    csrf = re.search(r'name="csrf" value="([^"]+)"', html).group(1)
    ctype, body = multipart([("csrf", None, csrf.encode()),
                             ("file", "vadd.py", b"def vadd(a, b, c, n):\n    pass\n")])
    r = s.post("/labs/pylab/submit", body=body, headers=dict(ck, **{"Content-Type": ctype}))
    loc = r.header("location") or ""
    t.ok(r.status in (302, 303) and loc.startswith("/submissions/"),
         "a .py file sent through the form is accepted", r.brief())
    sid = loc.rsplit("/", 1)[-1]
    o = s.submission(sid) or {}
    t.ok(o.get("filename") == "vadd.py" and o.get("lab") == "pylab",
         "it is queued with its .py name", o)
    s.cleanup()

    s = Server(labs="repo", tap=t)
    sess, _ = s.login("alice_q7")
    html = s.get("/labs/reduction", headers={"Cookie": "cugrade_session=%s" % sess}).body.decode()
    f = form(html)
    t.ok('accept=".cu,.py"' in f and "(cu|py)" in f and 'value="kernel.cu"' in f,
         "a lab with both (reduction): the form takes .cu and .py", f[:800])
    t.ok("(<code>.py</code> for Python)" in f and "&lt;code&gt;" not in f,
         "...its labels' <code> is markup, not shown raw", f[:1200])
    t.ok("<code>starter.cu</code>" in html and "<code>starter.py</code>" in html,
         "both starters are shown", html[-600:])
    s.cleanup()


t = Tap()
require_binary(t)
t.run(main)
t.exit()
