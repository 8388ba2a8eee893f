#!/usr/bin/env python3
# What the server hands a student for their own machine (server/bundle.c):
#   - GET /client/cugrade.py: the client of this build, byte for byte, to
#     anyone, with its version (header) and an ETag; GET /client/version;
#   - /help with copyable lines carrying the server's own address (the Host
#     it was reached by, or CUGRADE_PUBLIC_URL);
#   - GET /api/labs/LAB/bundle for every lab of the repo: what it ships is
#     listed here, and it fails when a bundle carries a case the rubric does
#     not show from the start, a seed, the generated cases.h, anything of
#     reference/ (reference kernels, judges) or a reference file's text;
#     each file's SHA-256 and the version check out; ?have=VERSION is 304;
#     a changed file on the server gives another version (stale copies are
#     seen); 401 without a token, 404 for an unknown lab or no manifest.
import hashlib
import json
import os
import re
import shutil
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, ROOT  # noqa: E402

CLIENT = os.path.join(ROOT, "client", "cugrade.py")


def repo_server(t, env=None, manifest=True):
    s = Server(labs="repo", tap=t, start=False, env=env)
    shutil.copytree(os.path.join(ROOT, "labs", "common"), os.path.join(s.labs_dir, "common"),
                    dirs_exist_ok=True)
    if manifest:
        shutil.copy(os.path.join(ROOT, "labs", "bundle.json"), s.labs_dir)
    s.init()
    s.start()
    s.add_users(s.DEFAULT_USERS)
    return s


def version(files):
    lines = "".join("%s %s\n" % (p, files[p]["sha256"]) for p in sorted(files))
    return hashlib.sha256(lines.encode()).hexdigest()


def check_client(t, s):
    want = open(CLIENT, "rb").read()
    ver = re.search(rb'\n__version__ = "([^"]+)"', want).group(1).decode()
    r = s.get("/client/cugrade.py")
    t.ok(r.status == 200 and r.body == want, "GET /client/cugrade.py without a token is "
         "client/cugrade.py byte for byte", r.brief())
    t.eq(r.header("X-Cugrade-Client-Version"), ver, "...with its __version__ in a header")
    r2 = s.get("/client/cugrade.py", headers={"If-None-Match": r.header("ETag") or "x"})
    t.status(r2, 304, "...and 304 for its ETag")
    r = s.get("/client/version")
    j = r.json() or {}
    t.ok(r.status == 200 and j.get("version") == ver and
         j.get("sha256") == hashlib.sha256(want).hexdigest() and
         j.get("url") == s.url + "/client/cugrade.py",
         "GET /client/version: version, SHA-256 and the URL by the Host it was asked", r.brief())


def check_help(t, s, url):
    r = s.get("/help", token="alice_q7")
    body = r.body.decode("utf-8", "replace")
    for line in ("curl -O %s/client/cugrade.py" % url, "python3 cugrade.py login %s" % url,
                 "python3 cugrade.py test LAB kernel.cu", "python3 cugrade.py submit LAB",
                 "%s/api/labs/LAB/submissions" % url, "%%cugrade test LAB"):
        t.ok(r.status == 200 and line in body, "/help shows `%s`" % line, body[:3000])
    t.ok("THIS_SERVER" not in body, "/help has no placeholder host left")
    for lab in ("reduction", "matmul", "embedding", "pipeline", "profiling"):
        r = s.get("/labs/" + lab, token="alice_q7")
        body = r.body.decode("utf-8", "replace")
        t.ok(r.status == 200 and "curl -O %s/client/cugrade.py" % url in body and
             "python3 cugrade.py login %s" % url in body and "{{server}}" not in body and
             re.search(r"pip install %s/client/cugrade-[0-9][^ <]*-py3-none-any\.whl" %
                       re.escape(url), body) and "{{wheel}}" not in body,
             "the %s handout on its lab page has the copyable lines with %s (curl, login, "
             "pip install of the served wheel)" % (lab, url),
             body[:200])


def forbidden_texts():
    """Every file of reference/: none may ship, nor its text."""
    out = {}
    for d, _, names in os.walk(os.path.join(ROOT, "reference")):
        for n in names:
            p = os.path.join(d, n)
            out[os.path.relpath(p, ROOT)] = open(p, "rb").read().decode("utf-8", "replace")
    return out


def check_bundle(t, s, lab, refs):
    r = s.get("/api/labs/%s/bundle" % lab, token="alice_q7")
    doc = r.json() or {}
    files = doc.get("files") or {}
    t.ok(r.status == 200 and files, "GET /api/labs/%s/bundle" % lab, r.brief())
    if not files:
        return
    t.diag("%s ships: %s" % (lab, ", ".join(sorted(files))))
    t.diag("%s public cases: %s" % (lab, ", ".join(doc.get("public_cases") or [])))
    lab_json = json.load(open(os.path.join(ROOT, "labs", lab, "lab.json")))
    rub = json.load(open(os.path.join(ROOT, "rubrics", lab + ".json")))
    vis = {c["case"]: c.get("visibility", "visible") for c in rub.get("correctness", [])}
    hidden = [c for c in lab_json["cases"] if vis.get(c["name"]) != "visible"]
    shipped = json.loads(files["labs/%s/lab.json" % lab]["text"])
    t.eq(sorted(c["name"] for c in shipped["cases"]),
         sorted(c["name"] for c in lab_json["cases"] if vis.get(c["name"]) == "visible"),
         "%s: the shipped lab.json has exactly the cases the rubric shows from the start" % lab)
    t.eq(sorted(doc.get("public_cases") or []), sorted(c["name"] for c in shipped["cases"]),
         "%s: public_cases names them" % lab)
    # The allow-list ships whole: a lab.json naming a shared list of
    # labs/common/allow.json by "base" ships that list merged in (the
    # student's `cugrade test` checks symbols against it, local.py).
    allow = lab_json.get("allow") or {}
    want = dict(allow)
    if "base" in allow:
        base = json.load(open(os.path.join(ROOT, "labs", "common", "allow.json")))[allow["base"]]
        want = {"undefined": base.get("undefined", []) + allow.get("undefined", []),
                "forbidden": dict(base.get("forbidden", {}), **allow.get("forbidden", {}))}
    t.eq(shipped.get("allow"), want, "%s: the shipped allow-list is the lab's whole list "
         "(%d undefined, %d forbidden patterns)" % (lab, len(want.get("undefined", [])),
                                                    len(want.get("forbidden", {}))))
    leaks = []
    for c in hidden:
        if c["name"] in json.dumps(shipped) or c["name"] in (doc.get("public_cases") or []):
            leaks.append("hidden case %s named" % c["name"])
        if c in shipped["cases"]:
            leaks.append("hidden case %s's parameters" % c["name"])
    for p, f in files.items():
        if p.startswith("reference/") or "/reference/" in p or "cases.generated" in p or \
                os.path.basename(p).startswith("judge"):
            leaks.append("ships " + p)
        for rp, text in refs.items():
            if len(text) > 200 and text in f["text"]:
                leaks.append("%s holds the text of %s" % (p, rp))
    if re.search(r'"seeds?"\s*:', files["labs/%s/lab.json" % lab]["text"]):
        leaks.append("the lab.json has a seed")
    t.eq(leaks, [], "%s: no hidden case (%d of them), seed, cases.h, judge or reference file "
         "ships" % (lab, len(hidden)))
    bad = [p for p, f in files.items()
           if hashlib.sha256(f["text"].encode()).hexdigest() != f["sha256"]]
    t.ok(not bad and version(files) == doc.get("version"),
         "%s: every file matches its SHA-256 and the version is the hash of the sums" % lab, bad)
    r = s.get("/api/labs/%s/bundle?have=%s" % (lab, doc.get("version")), token="alice_q7")
    t.status(r, 304, "%s: ?have=<current version> is 304 Not Modified" % lab)
    return doc


def main(t):
    s = repo_server(t)
    check_client(t, s)
    check_help(t, s, s.url)
    refs = forbidden_texts()
    labs = sorted(n for n in os.listdir(os.path.join(ROOT, "labs"))
                  if os.path.exists(os.path.join(ROOT, "labs", n, "lab.json")))
    docs = {lab: check_bundle(t, s, lab, refs) for lab in labs}
    red = docs.get("reduction") or {}
    t.ok("2^26" not in json.dumps(red) and "67108864" not in
         red.get("files", {}).get("labs/reduction/lab.json", {}).get("text", "x"),
         "reduction: the after_due_date case 2^26 (n = 67108864) is in no file of the bundle")
    t.ok("labs/common/py/local.py" in red.get("files", {}) and
         "labs/common/py/owner.py" in red.get("files", {}) and
         "labs/reduction/harness.cu" in red.get("files", {}),
         "reduction ships the local runner, the owner and the harness")
    t.error(s.get("/api/labs/reduction/bundle"), 401, "unauthorized", "no token: 401")
    t.error(s.get("/api/labs/nosuch/bundle", token="alice_q7"), 404, "not_found",
            "an unknown lab: 404")
    # A file changed on the server: a new version, so a cached copy is stale.
    with open(os.path.join(s.labs_dir, "common", "py", "gen.py"), "a") as f:
        f.write("\n# changed\n")
    r = s.get("/api/labs/reduction/bundle?have=%s" % red.get("version"), token="alice_q7")
    t.ok(r.status == 200 and (r.json() or {}).get("version") not in (None, red.get("version")),
         "after a shipped file changed, the old version is not current: 200 with a new one",
         r.brief())
    s.stop()

    s2 = repo_server(t, env={"CUGRADE_PUBLIC_URL": "https://grader.example.edu/"}, manifest=False)
    check_help(t, s2, "https://grader.example.edu")
    j = s2.get("/client/version").json() or {}
    t.eq(j.get("url"), "https://grader.example.edu/client/cugrade.py",
         "CUGRADE_PUBLIC_URL names the address in /client/version")
    t.error(s2.get("/api/labs/reduction/bundle", token="alice_q7"), 404, "no_bundle",
            "no labs/bundle.json: 404 no_bundle (nothing ships by default)")


t = Tap()
require_binary(t)
t.run(main)
t.exit()
