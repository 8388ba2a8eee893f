#!/usr/bin/env python3
"""CI (no GPU): the runner's two lanes (docs/runner.md "Two lanes"). The GPU
lane is held full by hand -- a GPU memory ledger (runner/admit.c) whose one
live entry, another process's, takes all of CUGRADE_GPU_MEMORY_MB -- and a
correct submission that compiled and linked waits there, holding nothing.
With a CPU lane of one (--jobs 1) the runner must still claim the next job
and answer its compile error while the first one waits; once the GPU lane
has room the waiting job is graded. A scripted fake server; the fake lab of
pipeline.t. Prints TAP."""
import json, os, shutil, signal, subprocess, sys, tempfile, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = os.environ.get("CUGRADE_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
BUILD = os.environ.get("CUGRADE_BUILD") or os.path.join(ROOT, "build")
RUNNER = os.path.join(BUILD, "cugrade-runner")
FAKE = os.path.join(ROOT, "tests/runner/fakelab")
sys.path.insert(0, FAKE)
import tree  # noqa: E402  (the fake lab laid out as a course tree)
TOKEN = "cgr_" + "cd" * 32
failures = 0

def ok(cond, name, detail=""):
    global failures
    print(("ok" if cond else "not ok") + " - " + name)
    if not cond:
        failures += 1
        for line in str(detail).splitlines()[:20]:
            print("#   " + line)

if not os.path.exists("/usr/local/cuda/bin/nvcc") or os.geteuid() != 0:
    print("not ok - needs nvcc and root (the sandbox): CI has the CUDA toolkit at /usr/local/cuda and runs as root: a runner suite that cannot run there is a failure, not a skip")
    sys.exit(1)

tmp = tempfile.mkdtemp(prefix="cugrade-lanes-")
os.chmod(tmp, 0o755)
root = tree.lay_out(os.path.join(tmp, "root"))
rubric = json.load(open(os.path.join(FAKE, "rubric.json")))
cache = os.path.join(tmp, "cache")
os.makedirs(cache)

GOOD = 'extern "C" void fill(float* o, int n) { for (int i = 0; i < n; i++) o[i] = 2.0f * i; }\n'
BAD = 'extern "C" void fill(float* o, int n) { o[0] = ; }\n'
def job(i, src):
    return {"id": i, "lab": "fakelab", "attempt": 1, "lease_seconds": 60, "filename": "kernel.cu",
            "source": src, "sha256": "x" * 64, "seed": "0123456789abcdef0123456789abcdef",
            "rubric_version": 1, "rubric": rubric}

lock = threading.Lock()
state = {"queue": [job(1, GOOD), job(2, BAD)], "progress": {}, "results": {}, "result_at": {}}

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
            if self.path == "/api/runner/claim":
                if state["queue"]:
                    return self.reply(200, {"job": state["queue"].pop(0)})
            elif self.path.endswith("/progress"):
                jid = int(self.path.split("/")[4])
                state["progress"].setdefault(jid, []).append((body.get("phase"), body.get("detail")))
                return self.reply(200, {"lease_expires_in": 60})
            elif self.path.endswith("/result"):
                jid = int(self.path.split("/")[4])
                state["results"][jid] = body
                state["result_at"][jid] = time.time()
                return self.reply(200, {"ok": True})
        time.sleep(0.3)  # the long poll, shortened
        self.reply(204)

srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
port = srv.server_address[1]
threading.Thread(target=srv.serve_forever, daemon=True).start()

# The GPU lane, full: a live process holds all of the GPU's memory.
holder = subprocess.Popen(["sleep", "600"])
open(os.path.join(cache, "gpu-0.admit"), "w").write(f"{holder.pid} 1 1000\n")
tok = os.path.join(tmp, "token")
open(tok, "w").write(TOKEN + "\n")
log = open(os.path.join(tmp, "runner.log"), "w+")
env = dict(os.environ, CUGRADE_GPU_MEMORY_MB="1000", CUGRADE_GPU_HOLD="0")
p = subprocess.Popen([RUNNER, "--server", f"http://127.0.0.1:{port}", "--token-file", tok,
                      "--root", root, "--cache", cache, "--work", os.path.join(tmp, "work"),
                      "--arch", "sm_90", "--jobs", "1", "--queue", "4"],
                     stdout=log, stderr=log, env=env, start_new_session=True)

def wait_for(cond, seconds):
    end = time.time() + seconds
    while time.time() < end:
        with lock:
            if cond():
                return True
        time.sleep(0.2)
    return False

try:
    got2 = wait_for(lambda: 2 in state["results"], 180)
    # The compile error comes from the front pass, maybe before the first
    # job's own CPU work ended: then let that work end.
    wait_for(lambda: ("compiling", "linking") in [tuple(x) for x in state["progress"].get(1, [])], 120)
    time.sleep(2)
    with lock:
        r2 = state["results"].get(2)
        r1_early = state["results"].get(1)
        prog1 = list(state["progress"].get(1, []))
    ok(got2 and r2["status"] == "compile_error",
       "the compile error is answered while the GPU lane is full", json.dumps(r2)[:800])
    ok(r1_early is None, "the correct submission waits for the GPU lane meanwhile", json.dumps(r1_early)[:800])
    ok(("compiling", "linking") in [tuple(x) for x in prog1],
       "it waits after its CPU work (compiled and linked) in the CPU lane's stead", prog1)
    holder.kill()
    holder.wait()
    got1 = wait_for(lambda: 1 in state["results"], 180)
    with lock:
        r1 = state["results"].get(1)
    ok(got1 and r1["status"] == "graded" and r1["result"]["score"] > 0,
       "once the GPU lane has room the waiting job is graded", json.dumps(r1)[:800])
    ph = (r1 or {}).get("result", {}).get("cugrade", {}).get("phases", {})
    ok("admit_wait" in ph and "check_run" in ph, "its wait is the GPU memory admission's (phases.admit_wait), then it ran", ph)
finally:
    if holder.poll() is None:
        holder.kill()
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()
    log.seek(0)
    if failures:
        for line in log.read().splitlines()[-30:]:
            print("#   log: " + line)
    srv.shutdown()
    shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if failures else 0)
