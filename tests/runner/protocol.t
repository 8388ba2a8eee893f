#!/usr/bin/env python3
"""CI: the runner's main loop against a scripted fake server (docs/api.md
runner protocol). The runner must survive a server error on claim, send the
token, report phases, retry a result after a 500, abandon a job on 409
without posting a result, keep claiming, and stop on SIGTERM. Prints TAP."""
import json, os, shutil, signal, subprocess, sys, tempfile, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import FIX, ROOT, RUNNER, failures, ok, require_nvcc_root  # noqa: E402  (paths, TAP)
TOKEN = "cgr_" + "ab" * 32

require_nvcc_root()

rubric = json.load(open(os.path.join(ROOT, "rubrics/matmul.json")))
def job(i, fixture):
    return {"id": i, "lab": "matmul", "attempt": i + 2, "lease_seconds": 30, "filename": "kernel.cu",
            "source": open(os.path.join(FIX, fixture)).read(), "sha256": "x" * 64,
            "seed": "0123456789abcdef0123456789abcdef", "rubric_version": 2, "rubric": rubric}

lock = threading.Lock()
state = {"claims": 0, "auth_bad": 0, "progress": {}, "results": {}, "result_tries": {},
         "queue": [job(1, "syntax_error.cu"), job(2, "cublas_matmul.cu")]}

class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def reply(self, code, doc=None):
        body = json.dumps(doc).encode() if doc is not None else b""
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(n) or b"{}")
        with lock:
            if self.headers.get("Authorization") != "Bearer " + TOKEN:
                state["auth_bad"] += 1
                return self.reply(401, {"error": {"code": "unauthorized", "message": "no"}})
            if self.path == "/api/runner/claim":
                state["claims"] += 1
                state["claim_body"] = body
                state.setdefault("fresh", []).append(body.get("fresh"))
                if state["claims"] == 1:
                    return self.reply(503, {"error": {"code": "internal", "message": "restarting"}})
                if state["queue"]:
                    return self.reply(200, {"job": state["queue"].pop(0)})
            elif self.path.endswith("/progress"):
                jid = int(self.path.split("/")[4])
                state["progress"].setdefault(jid, []).append((body.get("phase"), body.get("detail")))
                state.setdefault("progress_lease", {}).setdefault(jid, []).append((body.get("runner"), body.get("attempt")))
                if jid == 2:
                    return self.reply(409, {"error": {"code": "conflict", "message": "lease lost"}})
                return self.reply(200, {"lease_expires_in": 30})
            elif self.path.endswith("/result"):
                jid = int(self.path.split("/")[4])
                state["result_tries"][jid] = state["result_tries"].get(jid, 0) + 1
                if state["result_tries"][jid] == 1 and jid == 1:
                    return self.reply(500, {"error": {"code": "internal", "message": "db busy"}})
                state["results"][jid] = body
                return self.reply(200, {"ok": True})
        time.sleep(0.3)  # the long poll, shortened
        self.reply(204)

srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
port = srv.server_address[1]
threading.Thread(target=srv.serve_forever, daemon=True).start()
tmp = tempfile.mkdtemp(prefix="cugrade-proto-")
os.chmod(tmp, 0o755)
tok = os.path.join(tmp, "token")
open(tok, "w").write(TOKEN + "\n")
log = open(os.path.join(tmp, "runner.log"), "w+")
p = subprocess.Popen([RUNNER, "--server", f"http://127.0.0.1:{port}", "--token-file", tok,
                      "--root", ROOT, "--cache", os.path.join(tmp, "cache"), "--work", os.path.join(tmp, "work"),
                      "--arch", "sm_90", "--lazy-build"], stdout=log, stderr=log)
try:
    deadline = time.time() + 180
    while time.time() < deadline:
        with lock:
            done = 1 in state["results"] and 2 in state["progress"] and state["claims"] >= 5
        if done:
            break
        time.sleep(0.2)
    time.sleep(3)  # give job 2's child time to (wrongly) post a result
    alive = p.poll() is None
    with lock:
        s = json.loads(json.dumps(state, default=str))
    ok(s["auth_bad"] == 0, "every request carries the runner token")
    ok(s["claims"] >= 3, "the runner kept claiming after a 503", s["claims"])
    cb = s.get("claim_body", {})
    ok(cb.get("runner", "").endswith("-gpu0") and isinstance(cb.get("wait"), int), "claim names the runner and the long-poll wait", cb)
    fr = s.get("fresh", [])
    ok(fr[:2] == [True, True] and len(fr) >= 3 and not any(fr[2:]),
       "claims say fresh until one is answered (the 503 does not count), then not", fr)
    phases = [ph for ph, _ in s["progress"].get("1", [])]
    ok("compiling" in phases, "job 1 reported the compiling phase", phases)
    r1 = s["results"].get("1")
    ok(r1 is not None and r1["status"] == "compile_error" and "(6): error" in r1["result"]["cugrade"]["compile_log"],
       "job 1 posted compile_error with the compiler's line", json.dumps(r1)[:1500])
    ok(s["result_tries"].get("1") == 2, "the result was retried after a 500", s["result_tries"])
    leases = s.get("progress_lease", {}).get("1", []) + s.get("progress_lease", {}).get("2", [])
    ok(leases and all(r == cb.get("runner") for r, _ in leases) and
       all(a == 3 for r, a in s.get("progress_lease", {}).get("1", [])) and
       all(a == 4 for r, a in s.get("progress_lease", {}).get("2", [])),
       "every progress post names this runner and the job's attempt (the lease)", leases)
    ok(r1 is not None and r1.get("runner") == cb.get("runner") and r1.get("attempt") == 3,
       "the result names this runner and the job's attempt", {k: (r1 or {}).get(k) for k in ("runner", "attempt")})
    ok(r1 is not None and r1["result"]["cugrade"]["rubric_version"] == 2 and r1["result"]["max_score"] == 80,
       "the result uses the claimed rubric and its version")
    ok("2" not in s["results"], "job 2 (409 on progress) was abandoned: no result posted", s["results"].keys())
    ok(alive, "the runner is still running after both jobs")
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=60)
        ok(True, "SIGTERM stops the runner")
    except subprocess.TimeoutExpired:
        ok(False, "SIGTERM stops the runner")
finally:
    if p.poll() is None:
        p.kill()
        p.wait()
    log.seek(0)
    if failures():
        for line in log.read().splitlines()[-30:]:
            print("#   log: " + line)
    srv.shutdown()
    shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if failures() else 0)
