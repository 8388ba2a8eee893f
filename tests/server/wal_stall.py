"""The WAL read-lock stall of tests/server/read_stall.t, for the suites
beside it: another process (the test) holds SQLite's WAL read locks (bytes
123..127 of the database's -shm file, WAL_READ_LOCK(0..4)), so a connection
beginning a read retries in SQLite's own back-off (about 10 s in all before
it gives up) -- on the thread that asked. No root, no fsfreeze."""
import fcntl
import json
import os
import threading
import time

HOLD_S = 6.0      # reads stall this long
BOUND_S = 3.0     # /healthz must answer well inside the stall (generous: loaded machines)
READ_LOCKS = (123, 5)  # offset and length in the -shm of WAL_READ_LOCK(0..4)


class Stall:
    """Hold the WAL read locks of db from start() for HOLD_S seconds (a
    timer lets them go, whatever the server does meanwhile)."""

    def __init__(self, db, hold=HOLD_S):
        self.fd = os.open(db + "-shm", os.O_RDWR)
        self.timer = None
        self.hold = hold

    def start(self, timeout=10):
        end = time.time() + timeout
        while True:  # the server may hold a shared read lock for an instant
            try:
                fcntl.lockf(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB, READ_LOCKS[1],
                            READ_LOCKS[0], os.SEEK_SET)
                break
            except OSError:
                if time.time() > end:
                    os.close(self.fd)
                    return False
                time.sleep(0.001)
        self.timer = threading.Timer(self.hold, self.release)
        self.timer.start()
        return True

    def release(self):
        fcntl.lockf(self.fd, fcntl.LOCK_UN, READ_LOCKS[1], READ_LOCKS[0], os.SEEK_SET)
        os.close(self.fd)

    def wait(self):
        if self.timer:
            self.timer.join()


def healthz_during(t, s, what):
    """/healthz while reads stall: answered, inside BOUND_S."""
    t0 = time.time()
    try:
        h = s.get("/healthz", timeout=HOLD_S + 15)
    except OSError as e:
        h = e
    took = time.time() - t0
    t.ok(getattr(h, "status", None) == 200 and took < BOUND_S,
         "%s: /healthz answers while it waits for the stalled read (%.2f s, bound %.0f s; "
         "reads stalled %.0f s)" % (what, took, BOUND_S, HOLD_S), h)


def stalled(t, s, what, path, token=None, headers=None, warm=None, method="GET", body=None,
            want=200):
    """Stall reads, send method path (token or headers, body) in a thread,
    then /healthz; the request must still be waiting then, and get want once
    reads go. Returns the answer (or the error)."""
    if warm:  # a token looked up now is in the 2 s cache: the path's own reads stall
        t.status(s.get(warm, token=token, headers=headers), 200, "%s: %s first" % (what, warm))
    st = Stall(s.db)
    if not t.ok(st.start(), "%s: the WAL read locks are taken" % what):
        return None
    out = []

    def go():
        t0 = time.time()
        try:
            out.append((s.request(method, path, token=token, headers=headers, body=body,
                                  timeout=40), time.time() - t0))
        except Exception as e:  # noqa: BLE001
            out.append((e, time.time() - t0))
    th = threading.Thread(target=go)
    th.start()
    time.sleep(0.5)  # the request is in the server, its read waiting
    healthz_during(t, s, what)
    busy = not out
    st.wait()
    th.join(40)
    t.ok(busy, "%s: the request was still waiting when /healthz was answered" % what, out)
    r, secs = out[0] if out else (None, 0)
    t.ok(getattr(r, "status", None) == want,
         "%s: answered %d once reads go again (after %.1f s)" % (what, want, secs), r)
    return r


def warm_runner(t, s, what, runner="stall-gpu0"):
    """runner1's token looked up now (a runner token may use only
    /api/runner/*): in the 2 s cache, the claim's own reads are what waits."""
    r = s.request("POST", "/api/runner/jobs/999999/progress", token="runner1",
                  json_body={"phase": "running", "runner": runner, "attempt": 1})
    t.status(r, 404, "%s: runner1's token first (a progress of no job)" % what)


def claim_hung_up(t, s, what, runner, wait):
    """runner1 (as runner) claims while reads stall, with `wait` seconds of
    long poll, and hangs up while its claim's try waits on the writer; then
    reads go. False when the stall could not be taken."""
    warm_runner(t, s, what, runner)
    st = Stall(s.db)
    if not t.ok(st.start(), "%s: the WAL read locks are taken" % what):
        return False
    body = json.dumps({"runner": runner, "wait": wait}).encode()
    c = s.connect()
    c.sendall(("POST /api/runner/claim HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
               "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
               % (s.tok["runner1"], len(body))).encode() + body)
    time.sleep(0.5)  # its try waits on the writer
    c.close()
    st.wait()
    return True
