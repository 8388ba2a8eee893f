#!/usr/bin/env python3
# A file in a language the lab does not take is refused by the server (400
# wrong_language, naming the lab's languages) before it is stored, so it
# never supersedes the student's queued file: a .cu to a Python-only lab
# (a starter.py and no CUDA harness; lab.json "language": "python" as the
# repo's pipeline lab), a .py to a CUDA-only lab, through the API (raw body
# and multipart) and the web form (the lab page shows why, the pasted
# source kept).
import os
import re
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, multipart  # noqa: E402

PY = b"def vadd(a, b, c, n):\n    pass\n"
CU = b"__global__ void k(float* x) { x[0] = 1; }\n"


def main(t):
    s = Server(labs=["vadd", "pylab"], tap=t)
    r = s.submit("pylab", PY, filename="good.py")
    t.eq(r.status, 202, "a .py to the Python lab is accepted", r.brief())
    good = (r.json() or {}).get("id")
    r = s.submit("pylab", CU, filename="kernel.cu")
    t.error(r, 400, "wrong_language", "a .cu to a Python-only lab: 400 wrong_language")
    msg = (r.error() or {}).get("message", "")
    t.ok("Python (.py)" in msg and "kernel.cu" in msg, "...naming the lab's language and the file", msg)
    r = s.submit("pylab", CU, filename="kernel.cu", multipart_form=True)
    t.error(r, 400, "wrong_language", "...also as a multipart upload")
    t.eq((s.submission(good) or {}).get("status"), "queued",
         "the queued .py was not superseded by the refused .cu")
    r = s.get("/api/submissions?lab=pylab&limit=20", token="alice_q7")
    t.eq(len((r.json() or {}).get("submissions", [])), 1, "nothing else was stored")
    r = s.submit("vadd", PY, filename="kernel.py")
    t.error(r, 400, "wrong_language", "a .py to a CUDA-only lab: 400 wrong_language")
    t.ok("CUDA C (.cu)" in (r.error() or {}).get("message", ""), "...naming CUDA C (.cu)")

    sess, _ = s.login("alice_q7")
    ck = {"Cookie": "cugrade_session=%s" % sess}
    html = s.get("/labs/pylab", headers=ck).body.decode()
    csrf = re.search(r'name="csrf" value="([^"]+)"', html).group(1)
    ctype, body = multipart([("csrf", None, csrf.encode()), ("source", None, CU),
                             ("filename", None, b"mine.cu")])
    r = s.post("/labs/pylab/submit", body=body, headers=dict(ck, **{"Content-Type": ctype}))
    page = r.body.decode()
    t.eq(r.status, 400, "the web form: a pasted .cu to the Python lab is refused with 400")
    t.ok('id="problem"' in page and "takes only Python (.py) files" in page,
         "...the lab page says which language the lab takes", page[:3000])
    t.ok("__global__ void k(float* x)" in page, "...and keeps the pasted source in the box")
    t.eq((s.submission(good) or {}).get("status"), "queued", "...and the queued .py keeps its place")
    s.cleanup()

    s = Server(labs="repo", tap=t)
    r = s.submit("pipeline", CU, filename="kernel.cu")
    t.error(r, 400, "wrong_language", "the repo's pipeline lab (\"language\": \"python\") refuses a .cu")
    s.cleanup()


t = Tap()
require_binary(t)
t.run(main)
t.exit()
