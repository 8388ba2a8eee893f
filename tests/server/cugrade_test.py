"""cugrade_test - shared helpers for the black-box server tests (tests/server/*.t).

Starts the real `cugrade-server` binary ($CUGRADE_BUILD/cugrade-server) on a
free port in a fresh temp dir, with copies of the fixture labs/rubrics under
tests/server/fixtures/ (or the repo's labs/ and rubrics/), creates one user per
role, and speaks real HTTP to it (http.client, raw sockets, the curl binary).

Python 3 stdlib only.  Typical use:

    from cugrade_test import Tap, Server
    t = Tap()
    with Server(labs=["vadd"]) as s:
        r = s.post("/api/labs/vadd/submissions", token=s.tok["alice"], body=b"...")
        t.eq(r.status, 202, "raw body submission is accepted")
    t.exit()

Environment: CUGRADE_BUILD (binary folder), CUGRADE_ROOT (repo root),
KEEP=1 keeps the temp dir (and prints where it is), VERBOSE=1 prints every
request.
"""

import atexit
import hashlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

ROOT = os.environ.get("CUGRADE_ROOT") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BUILD = os.environ.get("CUGRADE_BUILD") or os.path.join(ROOT, "build")
BINARY = os.path.join(BUILD, "cugrade-server")
FIXTURES = os.path.join(ROOT, "tests", "server", "fixtures")
VERBOSE = os.environ.get("VERBOSE") == "1"

# No __pycache__ in tests/tools (a folder shared with other areas).
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))

TOKEN_RE = re.compile(r"\bcg([star])_[0-9a-f]{64}\b")
# A small valid CUDA source used as a submission everywhere.
KERNEL = (b"// vadd: c = a + b\n"
          b"__global__ void vadd_kernel(const float* a, const float* b, float* c, int n)\n"
          b"{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
          b"    if (i < n) c[i] = a[i] + b[i];\n}\n\n"
          b"extern \"C\" void vadd(const float* a, const float* b, float* c, int n)\n"
          b"{\n    vadd_kernel<<<(n + 255) / 256, 256>>>(a, b, c, n);\n}\n")


def kernel(tag=""):
    """A distinct valid source (tag goes in a comment), as bytes."""
    return KERNEL + ("// %s\n" % tag).encode() if tag else KERNEL


# ---------------------------------------------------------------- TAP output

class Tap:
    """TAP printer: every check prints `ok - name` or `not ok - name` and,
    on failure, `# ` diagnostics.  exit() ends the script (status 1 if any
    check failed)."""

    def __init__(self):
        self.n = 0
        self.failed = 0
        self.server = None          # set by Server: its log tail is shown on failure
        self.servers = []           # every Server started with tap=self
        sys.stdout.reconfigure(line_buffering=True)

    def ok(self, cond, name, diag=None):
        self.n += 1
        name = name.replace("\n", " ")
        if cond:
            print("ok %d - %s" % (self.n, name))
        else:
            self.failed += 1
            print("not ok %d - %s" % (self.n, name))
            if diag is not None:
                for line in str(diag).splitlines()[:40]:
                    print("#   " + line)
        return bool(cond)

    def eq(self, got, want, name, diag=None):
        d = "got: %r\n want: %r" % (got, want)
        if diag:
            d += "\n" + str(diag)
        return self.ok(got == want, name, d)

    def status(self, resp, want, name):
        """Check an HTTP status (want: int or a set of ints); diag shows the body."""
        wants = want if isinstance(want, (set, tuple, list)) else (want,)
        return self.ok(resp is not None and resp.status in wants, name,
                       "got %s, want %s\n%s" % (
                           None if resp is None else resp.status,
                           " or ".join(map(str, sorted(wants))),
                           _brief(resp)))

    def error(self, resp, status, code, name):
        """Check a JSON error answer: the status, {"error":{"code","message"}}
        with the given code (None: any) and a non-empty message."""
        okk = self.status(resp, status, name + " (status %s)" % status)
        err = resp.error() if resp is not None else None
        desc = "%s: JSON error object" % name
        if code:
            desc += " with code %s" % code
        good = (err is not None and isinstance(err.get("message"), str)
                and len(err["message"]) > 0 and (code is None or err.get("code") == code))
        self.ok(good, desc, _brief(resp))
        return okk and good

    def skip(self, name, why):
        self.n += 1
        print("ok %d - %s # SKIP %s" % (self.n, name, why))

    def diag(self, msg):
        for line in str(msg).splitlines():
            print("# " + line)

    def exit(self):
        for srv in self.servers:    # ASan/UBSan builds (make asan) report here
            if srv.alive():         # a graceful stop lets LeakSanitizer run
                srv.stop(timeout=20)
            bad = srv.sanitizer_reports()
            self.ok(not bad, "the server log has no AddressSanitizer/UBSan/leak reports",
                    "\n".join(bad))
        print("1..%d" % self.n)
        sys.exit(1 if self.failed else 0)

    def run(self, fn, *args):
        """Run fn(self, *args); an exception becomes one failed check with
        the traceback and the server log tail as diagnostics."""
        try:
            fn(self, *args)
        except Exception as e:  # noqa: BLE001 - a crash is a test failure
            self.ok(False, "%s ran to the end without an exception (%s: %s)"
                    % (fn.__name__, type(e).__name__, e), traceback.format_exc())
            if self.server is not None:
                self.diag("server log tail:\n" + self.server.log_tail())


def _brief(resp):
    """A short printable form of a Response (ours or fake_runner's)."""
    if resp is None:
        return "no response (connection closed)"
    if hasattr(resp, "brief"):
        return resp.brief()
    return "HTTP %s %r" % (resp.status, resp.body[:600])


def require_binary(t):
    """Fail (one `not ok`) and exit when the server binary is missing."""
    if not os.access(BINARY, os.X_OK):
        t.ok(False, "cugrade-server binary exists at %s" % BINARY,
             "build it with: make BUILD=build-bb build-bb/cugrade-server")
        t.exit()


# ---------------------------------------------------------------- HTTP

class Response:
    def __init__(self, status, headers, body, reason=""):
        self.status = status
        self.reason = reason
        self.headers = {k.lower(): v for k, v in headers}   # the last of each name
        self.header_list = list(headers)
        self.body = body
        self._json = None

    def header(self, name, default=None):
        return self.headers.get(name.lower(), default)

    def header_all(self, name):
        """Every value of a header that may repeat (Set-Cookie)."""
        return [v for k, v in self.header_list if k.lower() == name.lower()]

    def json(self):
        if self._json is None:
            try:
                self._json = json.loads(self.body.decode("utf-8"))
            except Exception:  # noqa: BLE001
                self._json = False
        return self._json if self._json is not False else None

    def error(self):
        """The error object {"code","message",...} or None."""
        j = self.json()
        if isinstance(j, dict) and isinstance(j.get("error"), dict):
            return j["error"]
        return None

    def brief(self):
        b = self.body[:600]
        try:
            b = b.decode("utf-8")
        except UnicodeDecodeError:
            b = repr(b)
        return "HTTP %s %s\n%s" % (self.status, self.header("content-type"), b)

    def __repr__(self):
        return "<Response %s %r>" % (self.status, self.body[:200])


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class SockReader:
    """Buffered reader of HTTP/1.1 responses on one socket, so pipelined
    responses that arrive in one recv() are not lost between calls."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def _fill(self):
        """Read more; False on EOF/reset/timeout."""
        try:
            d = self.sock.recv(65536)
        except (ConnectionResetError, socket.timeout, BrokenPipeError, OSError):
            return False
        if not d:
            return False
        self.buf += d
        return True

    def _take(self, n):
        while len(self.buf) < n:
            if not self._fill():
                break
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _line(self):
        while b"\r\n" not in self.buf:
            if not self._fill():
                return None
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def response(self, timeout=10.0):
        """The next Response, or None when the peer closed (or reset) before
        sending a whole header block."""
        self.sock.settimeout(timeout)
        while b"\r\n\r\n" not in self.buf:
            if not self._fill():
                return None
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/"):
            return None
        headers = []
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                headers.append((k.strip(), v.strip()))
        resp = Response(int(parts[1]), headers, b"", parts[2] if len(parts) > 2 else "")
        n = resp.header("content-length")
        if resp.status in (204, 304) or (100 <= resp.status < 200):
            body = b""
        elif n is not None:
            body = self._take(int(n))
        elif (resp.header("transfer-encoding") or "").lower() == "chunked":
            body = b""
            while True:
                size_line = self._line()
                if size_line is None:
                    break
                size = int(size_line.split(b";")[0], 16)
                body += self._take(size)
                self._line()
                if size == 0:
                    break
        else:
            while self._fill():
                pass
            body, self.buf = self.buf, b""
        resp.body = body
        return resp


def read_response(sock, timeout=10.0):
    """Read one HTTP/1.1 response from a socket (bytes after it are lost: use
    SockReader for pipelining).  None when the peer closed before answering."""
    return SockReader(sock).response(timeout)


def multipart(fields, boundary="cugradeBoundary7MA4YWxkTrZu0gW"):
    """Build a multipart/form-data body.  fields: list of (name, filename or
    None, bytes).  Returns (content_type, body)."""
    out = b""
    for name, filename, data in fields:
        out += b"--" + boundary.encode() + b"\r\n"
        disp = b'Content-Disposition: form-data; name="' + name.encode() + b'"'
        if filename is not None:
            fn = filename if isinstance(filename, bytes) else filename.encode("utf-8")
            disp += b'; filename="' + fn + b'"'
        out += disp + b"\r\n"
        if filename is not None:
            out += b"Content-Type: application/octet-stream\r\n"
        out += b"\r\n" + data + b"\r\n"
    out += b"--" + boundary.encode() + b"--\r\n"
    return "multipart/form-data; boundary=" + boundary, out


# ---------------------------------------------------------------- the server

class ServerError(Exception):
    pass


class Server:
    """One cugrade-server process in its own temp dir.

    labs:   list of fixture lab names to install (tests/server/fixtures), or
            "repo" for the repo's labs/ and rubrics/ (all of them).
    users:  extra users to create through POST /api/admin/users, as
            (name, role, display_name).  The defaults give: alice and bob
            (students), tina (ta), runner1 (runner), plus the admin and the
            demo student printed by `init` (keys "admin" and "demo").
    args:   extra `serve` arguments; env: extra environment variables.

    Attributes: url, port, db, dir, proc, tok (name -> token), names.
    """

    DEFAULT_USERS = [("alice_q7", "student", "Alice Quartermaine"),
                     ("bob_z3", "student", "Bob Zebulon"),
                     ("tina_ta", "ta", "Tina Teaching"),
                     ("runner1", "runner", "runner one")]

    def __init__(self, labs=("vadd",), users=None, args=(), env=None, start=True,
                 tap=None):
        self.dir = tempfile.mkdtemp(prefix="cugrade-bb-")
        self.db = os.path.join(self.dir, "cugrade.db")
        self.labs_dir = os.path.join(self.dir, "labs")
        self.rubrics_dir = os.path.join(self.dir, "rubrics")
        self.log = os.path.join(self.dir, "server.log")
        self.args = list(args)
        self.env = dict(os.environ)
        self.env.update(env or {})
        self.proc = None
        self.port = None
        self.url = None
        self.tok = {}
        self.names = {}
        self.exit_status = None
        self.tap = tap
        if tap is not None:
            tap.server = self
            tap.servers.append(self)
        self._install_labs(labs)
        atexit.register(self.cleanup)
        if start:
            self.init()
            self.start()
            self.add_users(users if users is not None else self.DEFAULT_USERS)

    # -- setup

    def _install_labs(self, labs):
        os.makedirs(self.labs_dir)
        os.makedirs(self.rubrics_dir)
        if labs == "repo":
            src_l, src_r = os.path.join(ROOT, "labs"), os.path.join(ROOT, "rubrics")
            names = [n for n in sorted(os.listdir(src_l))
                     if os.path.exists(os.path.join(src_l, n, "lab.json"))]
        else:
            src_l = os.path.join(FIXTURES, "labs")
            src_r = os.path.join(FIXTURES, "rubrics")
            names = list(labs)
        if labs == "repo":
            # The shared allow-lists the repo's lab.json files name by "base".
            os.makedirs(os.path.join(self.labs_dir, "common"))
            shutil.copy(os.path.join(src_l, "common", "allow.json"),
                        os.path.join(self.labs_dir, "common"))
        for n in names:
            shutil.copytree(os.path.join(src_l, n), os.path.join(self.labs_dir, n))
            r = os.path.join(src_r, n + ".json")
            if os.path.exists(r):
                shutil.copy(r, os.path.join(self.rubrics_dir, n + ".json"))
        self.lab_names = names

    def cli(self, *argv, check=True, timeout=30):
        """Run `cugrade-server ARGV...` (in the temp dir); returns
        CompletedProcess with text stdout/stderr."""
        p = subprocess.run([BINARY] + list(argv), cwd=self.dir, env=self.env,
                           capture_output=True, text=True, timeout=timeout)
        if check and p.returncode != 0:
            raise ServerError("cugrade-server %s exited %d:\n%s%s" % (
                " ".join(argv), p.returncode, p.stdout, p.stderr))
        return p

    def init(self):
        """`cugrade-server init --db F`; keeps the admin and demo student
        tokens it prints."""
        p = self.cli("init", "--db", self.db)
        out = p.stdout + p.stderr
        for m in TOKEN_RE.finditer(out):
            role = m.group(1)
            if role == "a" and "admin" not in self.tok:
                self.tok["admin"] = m.group(0)
            elif role == "s" and "demo" not in self.tok:
                self.tok["demo"] = m.group(0)
        if "admin" not in self.tok:
            raise ServerError("init printed no admin token (cga_ + 64 hex):\n" + out)

    def serve_argv(self):
        return [BINARY, "serve", "--db", self.db, "--listen",
                "127.0.0.1:%d" % self.port, "--labs", self.labs_dir,
                "--rubrics", self.rubrics_dir] + self.args

    def start(self, timeout=15):
        """Start `serve` on a free port and wait for GET /healthz = 200 (or
        503 for a low disk only: tests start it with --min-free-mb huge)."""
        last = None
        for _ in range(3):      # a free port can be taken between probe and bind
            self.port = free_port()
            self.url = "http://127.0.0.1:%d" % self.port
            logf = open(self.log, "ab")
            logf.write(("\n=== %s\n" % " ".join(self.serve_argv())).encode())
            logf.flush()
            self.proc = subprocess.Popen(self.serve_argv(), cwd=self.dir, env=self.env,
                                         stdout=logf, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)
            logf.close()
            deadline = time.time() + timeout
            while time.time() < deadline:
                if self.proc.poll() is not None:
                    last = "server exited with %s" % self.proc.returncode
                    break
                try:
                    r = self.get("/healthz", timeout=1)
                    j = r.json() or {}
                    if r.status == 200 or (r.status == 503 and j.get("disk") == "low"
                                           and j.get("db") == "ok"):
                        return self
                except OSError as e:
                    last = e
                time.sleep(0.05)
            else:
                last = "no 200 from /healthz in %ds" % timeout
            self.stop(sig=signal.SIGKILL)
        raise ServerError("cugrade-server did not start: %s\n%s" % (last, self.log_tail()))

    def add_users(self, users):
        """Create users through POST /api/admin/users (JSON); falls back to
        the `user add` CLI if the API refuses.  Fills self.tok[name]."""
        if not users:
            return
        body = {"users": [{"name": n, "role": r, "display_name": d} for n, r, d in users]}
        r = self.post("/api/admin/users", token=self.tok["admin"], json_body=body)
        got = {}
        j = r.json()
        if r.status == 201 and isinstance(j, dict):
            for u in j.get("users", []):
                if isinstance(u, dict) and u.get("name") and u.get("token"):
                    got[u["name"]] = u["token"]
        for n, role, d in users:
            if n not in got:      # fallback: the CLI
                p = self.cli("user", "add", n, role, "--display-name", d, "--db", self.db,
                             check=False)
                m = TOKEN_RE.search(p.stdout + p.stderr)
                if not m:
                    raise ServerError("could not create user %s: API said %s; CLI said %s"
                                      % (n, r.brief(), p.stdout + p.stderr))
                got[n] = m.group(0)
            self.tok[n] = got[n]
            self.names[n] = d

    # -- process control

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=15):
        """Send sig and wait; returns the exit status (None if it had to be
        SIGKILLed after timeout)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(sig)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self.exit_status = None
                return None
        self.exit_status = self.proc.returncode
        return self.exit_status

    def kill9(self):
        return self.stop(sig=signal.SIGKILL)

    def restart(self):
        self.stop()
        return self.start()

    def rss_kb(self, field="VmRSS"):
        """The server's resident memory in kB (field="VmHWM": its peak)."""
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        return None

    def metric(self, name, token="admin", source=None, **labels):
        """The value of one sample of GET /metrics (name and labels exact),
        or None when absent.  source: as in request()."""
        body = self.get("/metrics", token=token, source=source).body.decode("utf-8", "replace")
        want = ",".join('%s="%s"' % kv for kv in sorted(labels.items()))
        for line in body.splitlines():
            if line.startswith("#") or " " not in line:
                continue
            key, value = line.rsplit(" ", 1)
            n, _, lab = key.partition("{")
            lab = ",".join(sorted(lab.rstrip("}").split(","))) if lab else ""
            if n == name and lab == want:
                return float(value)
        return None

    def sanitizer_reports(self):
        """Lines of the server log that are sanitizer reports (with context)."""
        try:
            with open(self.log, "rb") as f:
                lines = f.read().decode("utf-8", "replace").splitlines()
        except OSError:
            return []
        pat = re.compile(r"(ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|"
                         r"SUMMARY: (Address|Undefined|Leak)Sanitizer)")
        out = []
        for i, line in enumerate(lines):
            if pat.search(line):
                out.extend(lines[i:i + 12])
                if len(out) > 60:
                    break
        return out

    def log_tail(self, n=30):
        try:
            with open(self.log, "rb") as f:
                lines = f.read().decode("utf-8", "replace").splitlines()
            return "\n".join(lines[-n:])
        except OSError:
            return "(no log)"

    def cleanup(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if os.environ.get("KEEP") == "1":
            print("# kept %s" % self.dir)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.cleanup()
        return False

    # -- HTTP

    def request(self, method, path, token=None, body=None, json_body=None,
                headers=None, timeout=10, source=None):
        """One request on a fresh connection.  token: a token string or a
        user name in self.tok.  source: the client address to connect from
        (any 127.x.y.z is this host: per-address limits see another client).
        Returns a Response."""
        hdrs = {"Connection": "close"}
        if token is not None:
            hdrs["Authorization"] = "Bearer " + self.tok.get(token, token)
        if json_body is not None:
            body = json.dumps(json_body).encode()
            hdrs["Content-Type"] = "application/json"
        if headers:
            hdrs.update(headers)
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout,
                                       source_address=(source, 0) if source else None)
        try:
            c.request(method, path, body=body, headers=hdrs)
            r = c.getresponse()
            resp = Response(r.status, r.getheaders(), r.read(), r.reason)
        finally:
            c.close()
        if VERBOSE:
            print("# %s %s -> %s %r" % (method, path, resp.status, resp.body[:120]))
        return resp

    def get(self, path, token=None, **kw):
        return self.request("GET", path, token=token, **kw)

    def post(self, path, token=None, body=None, **kw):
        return self.request("POST", path, token=token, body=body, **kw)

    def put(self, path, token=None, body=None, **kw):
        return self.request("PUT", path, token=token, body=body, **kw)

    def connect(self, timeout=10, source=None):
        """A new TCP connection to the server (from source, an address like
        127.0.0.2, when given)."""
        return socket.create_connection(("127.0.0.1", self.port), timeout=timeout,
                                        source_address=(source, 0) if source else None)

    def raw(self, data, timeout=10, shut_wr=False):
        """Send raw bytes on a new connection and read one response (or None
        when the server closed without answering)."""
        s = self.connect(timeout)
        try:
            try:
                s.sendall(data)
                if shut_wr:
                    s.shutdown(socket.SHUT_WR)
            except (BrokenPipeError, ConnectionResetError):
                pass
            return read_response(s, timeout)
        finally:
            s.close()

    def healthy(self, timeout=3, source=None):
        """True when GET /healthz answers 200 {"ok":true,...}."""
        try:
            r = self.get("/healthz", timeout=timeout, source=source)
        except OSError:
            return False
        j = r.json()
        return r.status == 200 and isinstance(j, dict) and j.get("ok") is True

    # -- domain helpers

    def submit(self, lab, source, token="alice_q7", filename=None, multipart_form=False):
        """POST a submission (raw body, or multipart with part `file`)."""
        if multipart_form:
            ctype, body = multipart([("file", filename or "kernel.cu", source)])
            return self.post("/api/labs/%s/submissions" % lab, token=token, body=body,
                             headers={"Content-Type": ctype})
        q = "?filename=" + filename if filename else ""
        return self.post("/api/labs/%s/submissions%s" % (lab, q), token=token, body=source,
                         headers={"Content-Type": "application/octet-stream"})

    def submission(self, sid, token="admin"):
        r = self.get("/api/submissions/%s" % sid, token=token)
        return r.json() if r.status == 200 else None

    def wait_status(self, sid, statuses, timeout=10, token="admin"):
        """Poll GET /api/submissions/ID until status is in statuses; returns
        the last object seen (or None)."""
        if isinstance(statuses, str):
            statuses = (statuses,)
        deadline = time.time() + timeout
        obj = None
        while time.time() < deadline:
            obj = self.submission(sid, token)
            if obj and obj.get("status") in statuses:
                return obj
            time.sleep(0.2)
        return obj

    def graded(self, lab, source, token="alice_q7", score=50):
        """Submit source as token and grade it through a fake runner (the
        canned result at score). Returns (the submission's id, the last
        object seen: graded unless something went wrong)."""
        from fake_runner import canned_result
        sid = (self.submit(lab, source, token=token).json() or {}).get("id")
        run = self.runner()
        job = run.claim(wait=2) or {}
        run.result(job.get("id"), "graded", canned_result(job, score=score))
        return sid, self.wait_status(sid, "graded")

    def login(self, token, headers=None):
        """Sign in through the pages (GET /login, then POST /login with the
        double-submit cookie), as a browser does.  token: a token or a user
        name in self.tok; headers: sent with both requests (behind an HTTPS
        proxy: X-Forwarded-Proto).  Returns (the session cookie's value --
        cugrade_session, or __Host-cugrade_session over HTTPS -- or None,
        the POST's Response)."""
        import urllib.parse
        r = self.get("/login", headers=headers)
        m = re.search(r"cugrade_login=([^;]+)", r.header("set-cookie") or "")
        f = re.search(r'name="csrf" value="([^"]+)"', r.body.decode("utf-8", "replace"))
        if not (m and f):
            return None, r
        body = urllib.parse.urlencode({"token": self.tok.get(token, token),
                                       "csrf": f.group(1)}).encode()
        r = self.post("/login", body=body, headers=dict(headers or {}, **{
            "Content-Type": "application/x-www-form-urlencoded",
            "Cookie": "cugrade_login=" + m.group(1)}))
        for sc in r.header_all("set-cookie"):
            m = re.search(r"cugrade_session=([^;]+)", sc)
            if m and m.group(1):
                return m.group(1), r
        return None, r

    def runner(self, name="runner1", **kw):
        """A FakeRunner (tests/tools/fake_runner.py) logged in as `name`."""
        from fake_runner import FakeRunner
        return FakeRunner(self.url, self.tok[name], name=kw.pop("runner_name", name + "-gpu0"),
                          **kw)


def sha256(b):
    return hashlib.sha256(b).hexdigest()


def curl(*args, timeout=20):
    """Run the curl binary; returns (status, body bytes, stderr).  Adds -sS
    and `-w '\\n%{http_code}'` to read the status."""
    p = subprocess.run(["curl", "-sS", "--max-time", str(timeout), "-w", "\n%{http_code}"]
                       + list(args), capture_output=True, timeout=timeout + 5)
    out = p.stdout
    body, _, code = out.rpartition(b"\n")
    try:
        status = int(code)
    except ValueError:
        status = None
    return status, body, p.stderr.decode("utf-8", "replace")
