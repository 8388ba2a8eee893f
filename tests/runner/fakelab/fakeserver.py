"""A scripted stand-in for the server's runner protocol (docs/api.md
"Runner protocol"), for the runner suites that serve: a queue of jobs for
the fake lab, every claim, progress post and result recorded with its
time. Used by tests/runner/lanes.t, front.t, health.t and profile_after.t."""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from suite import overloaded

GOOD = 'extern "C" void fill(float* o, int n) { for (int i = 0; i < n; i++) o[i] = 2.0f * i; }\n'
BAD = 'extern "C" void fill(float* o, int n) { o[0] = ; }\n'


def job(i, rubric, src=GOOD, seed="0123456789abcdef0123456789abcdef"):
    """A claimed job of the fake lab, as the server sends it."""
    return {"id": i, "lab": "fakelab", "attempt": 1, "lease_seconds": 60, "filename": "kernel.cu",
            "source": src, "sha256": "x" * 64, "seed": seed, "rubric_version": 1, "rubric": rubric}


class FakeServer:
    """Serves on 127.0.0.1 (self.port) until stop(). Hold self.lock to read
    or change self.state: queue (jobs to hand out, in order), claims (the
    time of every claim request), claimed {id: time}, claimed_by {id: the
    claiming runner's name}, progress {id: [(phase,
    detail)]}, progress_at {(id, detail): first time}, results {id: body},
    result_at {id: time}, retried [id], released [(id, runner)] (a job
    handed back: it goes back to the head of the queue), release_refused
    [id] (refuse_release set: a release is answered 409, as the server
    answers one whose lease is another's). An empty queue answers 204 after
    0.3 s (the long poll, shortened). With retry, a system_error result of
    an overloaded host (a compile starved of CPU: runner/grade/compile.h)
    puts the job back at the head of the queue with its next attempt, as
    the server retries it (suite.overloaded), instead of being its result."""

    def __init__(self, queue, retry=False):
        self.lock = threading.Lock()
        self.state = {"queue": list(queue), "claims": [], "claimed": {}, "progress": {},
                      "progress_at": {}, "results": {}, "result_at": {}, "profiles": {},
                      "profile_at": {}, "claimed_by": {}, "retried": [], "released": [], "release_refused": []}
        self.retry = retry
        self.refuse_release = False
        jobs = {j["id"]: j for j in queue}
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def reply(self, code, doc=None):
                body = json.dumps(doc).encode() if doc is not None else b""
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except BrokenPipeError:  # the runner killed at the end, mid long poll
                    pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(n) or b"{}")
                st, now = fake.state, time.time()
                with fake.lock:
                    if self.path == "/api/runner/claim":
                        st["claims"].append(now)
                        if st["queue"]:
                            j = st["queue"].pop(0)
                            st["claimed"][j["id"]] = now
                            st["claimed_by"][j["id"]] = body.get("runner")
                            return self.reply(200, {"job": j})
                    elif self.path.endswith("/progress"):
                        jid = int(self.path.split("/")[4])
                        st["progress"].setdefault(jid, []).append((body.get("phase"), body.get("detail")))
                        st["progress_at"].setdefault((jid, body.get("detail")), now)
                        return self.reply(200, {"lease_expires_in": 60})
                    elif self.path.endswith("/release"):
                        jid = int(self.path.split("/")[4])
                        if fake.refuse_release:
                            st["release_refused"].append(jid)
                            return self.reply(409, {"error": {"code": "conflict"}})
                        if jid not in jobs or st["claimed_by"].get(jid) != body.get("runner") or \
                                jid in st["results"]:
                            return self.reply(409, {"error": {"code": "conflict"}})
                        st["released"].append((jid, body.get("runner")))
                        st["claimed_by"].pop(jid, None)
                        st["queue"].insert(0, jobs[jid])
                        return self.reply(200, {"status": "queued"})
                    elif self.path.endswith("/result"):
                        jid = int(self.path.split("/")[4])
                        if fake.retry and overloaded(body.get("status"), json.dumps(body)) and \
                                jid in jobs:
                            jobs[jid] = dict(jobs[jid], attempt=jobs[jid]["attempt"] + 1)
                            st["queue"].insert(0, jobs[jid])
                            st["retried"].append(jid)
                            return self.reply(200, {"ok": True})
                        st["results"][jid] = body
                        st["result_at"][jid] = now
                        return self.reply(200, {"ok": True})
                    elif self.path.endswith("/profile"):
                        jid = int(self.path.split("/")[4])
                        key = (st["results"].get(jid) or {}).get("profile_key")
                        if not key or body.get("profile_key") != key:
                            return self.reply(409, {"error": {"code": "conflict"}})
                        st["profiles"][jid] = body
                        st["profile_at"][jid] = now
                        return self.reply(200, {"id": jid, "stored": True})
                time.sleep(0.3)
                self.reply(204)

        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def wait_for(self, cond, seconds):
        """Poll cond() (under the lock) until true or seconds pass."""
        end = time.time() + seconds
        while time.time() < end:
            with self.lock:
                if cond():
                    return True
            time.sleep(0.2)
        return False

    def stop(self):
        self.srv.shutdown()
