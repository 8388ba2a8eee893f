#!/usr/bin/env python3
# The happy path with the real curl binary: `curl -F file=@kernel.cu` and
# `curl --data-binary @kernel.cu` are answered 202 {"id","status","url"}; the
# submission reads back; its source is byte-for-byte what was sent.
import os
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, curl, kernel, sha256  # noqa: E402

ISO = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$"


def check_accept(t, s, how, status, body, src, filename):
    import json
    import re
    t.eq(status, 202, "%s: POST /api/labs/vadd/submissions answers 202" % how, body[:300])
    try:
        j = json.loads(body)
    except ValueError:
        j = {}
    sid = j.get("id")
    t.ok(isinstance(sid, int) and sid > 0, "%s: 202 body has an integer id" % how, body[:300])
    t.eq(j.get("status"), "queued", "%s: 202 body says status queued" % how)
    t.eq(j.get("url"), "/api/submissions/%s" % sid, "%s: 202 body has url /api/submissions/ID" % how)
    t.eq(j.get("late"), False, "%s: 202 body has late:false" % how)
    r = s.get("/api/submissions/%s" % sid, token="alice_q7")
    t.status(r, 200, "%s: the owner can GET /api/submissions/ID" % how)
    o = r.json() or {}
    t.eq(o.get("id"), sid, "%s: submission object has the same id" % how)
    t.eq(o.get("lab"), "vadd", "%s: submission object has lab vadd" % how)
    t.eq(o.get("user"), "alice_q7", "%s: submission object names the owner" % how)
    t.eq(o.get("status"), "queued", "%s: submission is queued" % how)
    t.eq(o.get("filename"), filename, "%s: filename kept" % how)
    t.eq(o.get("size"), len(src), "%s: size is the byte count sent" % how)
    t.eq(o.get("sha256"), sha256(src), "%s: sha256 is the hash of the bytes sent" % how)
    t.ok(isinstance(o.get("queue_position"), int) and o["queue_position"] >= 1,
         "%s: queued submission has a 1-based queue_position" % how, o.get("queue_position"))
    t.ok(isinstance(o.get("created_at"), str) and re.match(ISO, o["created_at"]),
         "%s: created_at is ISO 8601 UTC" % how, o.get("created_at"))
    t.ok("result" in o and o["result"] is None, "%s: result is null before grading" % how)
    keys = {"id", "lab", "user", "status", "phase", "detail", "filename", "sha256", "size",
            "late", "created_at", "updated_at", "attempts", "queue_position", "score",
            "max_score", "rubric_version", "result"}
    t.eq(sorted(keys - set(o)), [], "%s: the submission object has every documented field" % how)
    r = s.get("/api/submissions/%s/source" % sid, token="alice_q7")
    t.status(r, 200, "%s: GET .../source answers 200" % how)
    t.eq(r.body, src, "%s: GET .../source returns exactly the bytes sent" % how)
    t.ok((r.header("content-type") or "").startswith("text/plain"),
         "%s: source is served as text/plain" % how, r.header("content-type"))
    return sid


def main(t):
    s = Server(labs=["vadd"], tap=t)
    path = os.path.join(s.dir, "kernel.cu")
    auth = "Authorization: Bearer " + s.tok["alice_q7"]
    url = s.url + "/api/labs/vadd/submissions"

    # curl -F file=@kernel.cu
    src1 = kernel("multipart") + "// ünïcödé is fine\n".encode()
    with open(path, "wb") as f:
        f.write(src1)
    status, body, err = curl("-H", auth, "-F", "file=@" + path, url)
    sid1 = check_accept(t, s, "curl -F", status, body, src1, "kernel.cu")

    # curl --data-binary @kernel.cu (curl sends Content-Type
    # application/x-www-form-urlencoded by default; the doc lists octet-stream,
    # text/plain or none, so say what a student following the README types)
    src2 = kernel("raw body")
    with open(path, "wb") as f:
        f.write(src2)
    status, body, err = curl("-H", auth, "-H", "Content-Type: application/octet-stream",
                             "--data-binary", "@" + path, url + "?filename=kernel.cu")
    sid2 = check_accept(t, s, "curl --data-binary", status, body, src2, "kernel.cu")
    t.ok(sid2 != sid1, "two submissions get two ids", (sid1, sid2))

    # raw body without any Content-Type and without ?filename
    status, body, err = curl("-H", auth, "-H", "Content-Type:", "--data-binary", "@" + path, url)
    t.eq(status, 202, "raw body with no Content-Type is accepted", body[:300])

    # listing: newest first, own only
    r = s.get("/api/submissions?lab=vadd", token="alice_q7")
    t.status(r, 200, "GET /api/submissions?lab=vadd answers 200")
    ids = [x.get("id") for x in (r.json() or {}).get("submissions", [])]
    t.ok(sid1 in ids and sid2 in ids, "listing has both submissions", ids)
    t.ok(ids == sorted(ids, reverse=True), "listing is newest first", ids)

    # limit/offset
    r = s.get("/api/submissions?lab=vadd&limit=2", token="alice_q7")
    page1 = [x.get("id") for x in (r.json() or {}).get("submissions", [])]
    r = s.get("/api/submissions?lab=vadd&limit=2&offset=2", token="alice_q7")
    page2 = [x.get("id") for x in (r.json() or {}).get("submissions", [])]
    t.ok(len(page1) == 2 and len(page2) == 1 and page1 + page2 == ids,
         "limit=2 then offset=2 page through the listing", (page1, page2, ids))
    r = s.get("/api/submissions?status=graded", token="alice_q7")
    t.ok(r.status == 200 and (r.json() or {}).get("submissions") == [],
         "status=graded filters (none graded yet)", r.brief())

    # /api/me, /api/labs, /api/labs/{lab}
    r = s.get("/api/me", token="alice_q7")
    me = r.json() or {}
    t.ok(r.status == 200 and me.get("name") == "alice_q7" and me.get("role") == "student"
         and me.get("display_name") == "Alice Quartermaine" and "id" in me,
         "GET /api/me names the user, role and display_name", r.brief())
    r = s.get("/api/labs", token="alice_q7")
    labs = (r.json() or {}).get("labs") or []
    row = [x for x in labs if isinstance(x, dict) and x.get("lab") == "vadd"]
    t.ok(r.status == 200 and row and row[0].get("open") is True
         and row[0].get("title", "").startswith("Vector add")
         and row[0].get("due") == "2099-12-01T23:59:00Z"
         and row[0].get("hard_deadline") == "2099-12-31T23:59:00Z",
         "GET /api/labs lists vadd with title, due, hard_deadline, open", r.brief())
    r = s.get("/api/labs/vadd", token="alice_q7")
    lab = r.json() or {}
    t.ok(r.status == 200 and lab.get("lab") == "vadd" and lab.get("due") == "2099-12-01T23:59:00Z"
         and lab.get("hard_deadline") == "2099-12-31T23:59:00Z"
         and (lab.get("title") or "").startswith("Vector add"),
         "GET /api/labs/vadd has lab, title, due and hard_deadline", r.brief())
    t.ok(r.status == 200 and "extern \"C\" void vadd" in (lab.get("interface") or "")
         and "Write" in (lab.get("handout") or ""),
         "GET /api/labs/vadd has the interface and the README handout", r.brief())

    # the demo student printed by init works too
    if "demo" in s.tok:
        r = s.get("/api/me", token="demo")
        t.ok(r.status == 200 and (r.json() or {}).get("role") == "student",
             "the demo student token printed by init is a student", r.brief())
    else:
        t.ok(False, "init prints a demo student token (cgs_...)")

    # keep-alive: two requests on one connection
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=5)
    c.request("GET", "/healthz")
    r1 = c.getresponse(); r1.read()
    c.request("GET", "/api/submissions/%s" % sid1, headers={"Authorization": "Bearer " + s.tok["alice_q7"]})
    r2 = c.getresponse(); r2.read()
    c.close()
    t.ok(r1.status == 200 and r2.status == 200, "HTTP/1.1 keep-alive: two requests on one connection",
         (r1.status, r2.status))


t = Tap()
require_binary(t)
t.run(main)
t.exit()
