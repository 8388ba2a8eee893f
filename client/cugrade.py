#!/usr/bin/env python3
"""cugrade - the student client of the cugrade autograder.

Submit a kernel from the terminal and watch it being graded:

    cugrade login                                  # server URL + your token
    cugrade submit reduction reduce.cu --watch     # live line, then the result
    cugrade list | cugrade show ID | cugrade scoreboard LAB | cugrade labs

or from Jupyter/IPython:

    %load_ext cugrade
    %%cugrade submit reduction
    __global__ void ...

Python 3 standard library only: install with `pip install ./client`, or copy
this one file anywhere and run `python3 cugrade.py ...`. The notebook magic
needs IPython, which the notebook already has. See client/README.md.

Exit status of `submit --watch` and `show --watch` (also in README.md):
  0  graded, and every visible correctness case passed and the sanitizers
     were clean or could not run on our side (runner_problem, not charged) (the score may still lack speed points); `submit` without
     --watch: accepted; other commands: done
  1  graded, but a visible correctness case failed or a sanitizer found a
     problem (the score and the failing cases are shown)
  2  a verdict on the code: compile_error, rejected, runtime_error, timeout
  3  not the student's fault: system_error, the server unreachable or
     answering 5xx (a submission already accepted keeps its place)
  4  usage, sign-in or refused request: bad arguments, no or unsafe config,
     401/403/404/413/429 and other 4xx answers (nothing was submitted)
  130 interrupted (Ctrl-C) while watching; the submission keeps its place
(`show` of a superseded submission: 0; `submit --watch` follows the newer one.)
"""

import argparse
import getpass
import hashlib
import html
import http.client
import json
import math
import os
import re
import shlex
import shutil
import stat
import sys
import time
import urllib.parse

__version__ = "0.2.0"

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_VERDICT = 2
EXIT_SYSTEM = 3
EXIT_USAGE = 4
EXIT_INTERRUPTED = 130

DEFAULT_SERVER = "http://127.0.0.1:8080"
PHASES = ("queued", "compiling", "checking", "running", "timing")
FINAL = ("graded", "compile_error", "rejected", "runtime_error", "timeout", "system_error",
         "superseded")
VERDICTS = ("compile_error", "rejected", "runtime_error", "timeout")
STATUS_WORDS = {
    "queued": "waiting in the queue", "compiling": "compiling",
    "checking": "checking correctness", "running": "running the sanitizers",
    "timing": "timing", "graded": "graded", "compile_error": "did not compile",
    "rejected": "rejected", "runtime_error": "crashed while running",
    "timeout": "ran out of time", "system_error": "grading failed (our fault)",
    "superseded": "replaced by a newer submission",
}
# What to do next after each end state that is not a plain "graded".
STATUS_TODO = {
    "compile_error": "Your file did not compile: fix the first error below and submit again.",
    "rejected": "Your code uses something this lab does not allow (named below): remove it "
                "and submit again.",
    "runtime_error": "Your program crashed or a kernel failed to launch: the cases and "
                     "sanitizer findings below say where.",
    "timeout": "Your program ran past the time limit: look for a loop that never ends or a "
               "kernel launched with far too many threads.",
    "system_error": "Grading failed on our side several times. This does not count against "
                    "you; the staff can see it and will regrade it. You may also submit again.",
}


class CugradeError(Exception):
    """A failure the user can act on: message (what happened), todo (what
    to do next), status (the exit status)."""

    def __init__(self, message, todo="", status=EXIT_USAGE):
        super().__init__(message)
        self.message = message
        self.todo = todo
        self.status = status

    def text(self):
        return self.message + ("\n" + self.todo if self.todo else "")


# ------------------------------------------------------------------ config

def config_path():
    """The config file: $CUGRADE_CONFIG, else $XDG_CONFIG_HOME/cugrade/
    config.json, else ~/.config/cugrade/config.json."""
    if os.environ.get("CUGRADE_CONFIG"):
        return os.environ["CUGRADE_CONFIG"]
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "cugrade", "config.json")


def config_load(path=None):
    """The saved settings ({} when there is no file). Refuses a file that
    other users could read or write, or that someone else owns: it holds a
    token that submits in the student's name."""
    path = path or config_path()
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise CugradeError("cugrade: cannot read %s: %s." % (path, e.strerror),
                           "Remove it and run `cugrade login` again.")
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise CugradeError("cugrade: %s is not a regular file." % path,
                               "Remove it and run `cugrade login` again.")
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            raise CugradeError("cugrade: refusing to read %s: it belongs to another user "
                               "(uid %d) and holds a token." % (path, st.st_uid),
                               "Remove it and run `cugrade login` to save your own token.")
        if st.st_mode & 0o077:
            raise CugradeError(
                "cugrade: refusing to read %s: other users can read or change it (mode %04o), "
                "and it holds your token." % (path, stat.S_IMODE(st.st_mode)),
                "Fix it with: chmod 600 %s\nIf others could have read it, ask your course "
                "staff for a new token and run `cugrade login` again." % shlex.quote(path))
        data = f.read()
    try:
        cfg = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise CugradeError("cugrade: %s is not valid JSON." % path,
                           "Remove it and run `cugrade login` again.")
    return cfg if isinstance(cfg, dict) else {}


def config_save(cfg, path=None):
    """Write the settings with mode 0600 (its folder 0700), replacing the
    file atomically; returns the path."""
    path = path or config_path()
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, mode=0o700, exist_ok=True)
    tmp = "%s.%d.tmp" % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        os.fchmod(fd, 0o600)        # whatever the umask
        os.write(fd, (json.dumps(cfg, indent=2, sort_keys=True) + "\n").encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return path


def settings(server=None):
    """(server URL, token) from the flags, the environment ($CUGRADE_SERVER,
    $CUGRADE_TOKEN) and the config file, in that order. The token may be
    empty: commands that need one say so."""
    cfg = {}
    if not (os.environ.get("CUGRADE_TOKEN") and (server or os.environ.get("CUGRADE_SERVER"))):
        cfg = config_load()
    url = server or os.environ.get("CUGRADE_SERVER") or cfg.get("server") or ""
    token = os.environ.get("CUGRADE_TOKEN") or cfg.get("token") or ""
    return url.rstrip("/"), token.strip()


def client_from_settings(server=None):
    url, token = settings(server)
    if not url or not token:
        raise CugradeError("cugrade: you are not signed in (no server or token in %s)."
                           % config_path(),
                           "Run `cugrade login` with the server address and the token your "
                           "course staff gave you.")
    return Client(url, token)


# ------------------------------------------------------------------ HTTP

def _check_url(url):
    u = urllib.parse.urlsplit(url)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise CugradeError("cugrade: %r is not a server address." % url,
                           "Give it as http://HOST:PORT or https://HOST (ask your course "
                           "staff for it).")
    return u


class Client:
    """The cugrade JSON API over http.client: one connection per request."""

    def __init__(self, server, token, timeout=30):
        self.server = server.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.url = _check_url(self.server)

    def request(self, method, path, body=None, ctype=None):
        """(status, headers dict with lower-case names, body bytes). Raises
        CugradeError(EXIT_SYSTEM) when the server cannot be reached."""
        u = self.url
        cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
        conn = cls(u.hostname, u.port, timeout=self.timeout)
        hdrs = {"User-Agent": "cugrade-client/" + __version__, "Accept": "application/json"}
        if self.token:
            hdrs["Authorization"] = "Bearer " + self.token
        if ctype:
            hdrs["Content-Type"] = ctype
        prefix = u.path.rstrip("/")
        try:
            try:
                conn.request(method, prefix + path, body=body, headers=hdrs)
            except (BrokenPipeError, ConnectionResetError):
                # The server answers 401/413 from the headers and closes
                # without reading a large body: its answer is still there.
                if body is None:
                    raise
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        except (OSError, http.client.HTTPException) as e:
            raise CugradeError(
                "cugrade: cannot reach the server at %s (%s)." % (self.server, _oserror(e)),
                "Check the address (`cugrade login` sets it), your network or VPN, and whether "
                "the server is up; try again in a minute.", EXIT_SYSTEM)
        finally:
            conn.close()

    def call(self, method, path, body=None, ctype=None, raw=False):
        """The answer's JSON (or bytes when raw); raises CugradeError with
        the server's message and what to do for any non-2xx answer."""
        status, headers, data = self.request(method, path, body, ctype)
        if 200 <= status < 300:
            if raw:
                return data
            try:
                return json.loads(data.decode("utf-8")) if data else {}
            except (UnicodeDecodeError, ValueError):
                raise CugradeError("cugrade: the server at %s answered HTTP %d with something "
                                   "that is not JSON." % (self.server, status),
                                   "Check that the address is the cugrade server's.", EXIT_SYSTEM)
        raise api_error(status, headers, data)

    def me(self):
        return self.call("GET", "/api/me")

    def labs(self):
        return self.call("GET", "/api/labs").get("labs") or []

    def submit(self, lab, filename, source):
        path = "/api/labs/%s/submissions?filename=%s" % (
            urllib.parse.quote(lab, safe=""), urllib.parse.quote(filename, safe=""))
        return self.call("POST", path, source, "application/octet-stream")

    def submission(self, sid):
        return self.call("GET", "/api/submissions/%d" % int(sid))

    def source(self, sid):
        return self.call("GET", "/api/submissions/%d/source" % int(sid), raw=True)

    def submissions(self, lab=None, status=None, limit=None):
        q = {k: v for k, v in (("lab", lab), ("status", status), ("limit", limit)) if v}
        path = "/api/submissions" + ("?" + urllib.parse.urlencode(q) if q else "")
        return self.call("GET", path).get("submissions") or []

    def scoreboard(self, lab, csv=False):
        path = "/api/labs/%s/scoreboard" % urllib.parse.quote(lab, safe="")
        if csv:
            return self.call("GET", path + "?format=csv", raw=True)
        return self.call("GET", path)

    def page(self, sid):
        return "%s/submissions/%d" % (self.server, int(sid))


def _oserror(e):
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    return str(e) or type(e).__name__


def api_error(status, headers, data):
    """A CugradeError for a non-2xx answer: the server's own message, then
    what to do, with the exit status of the module docstring."""
    code, message, retry = "", "", headers.get("retry-after")
    try:
        err = json.loads(data.decode("utf-8")).get("error") or {}
        code, message = str(err.get("code") or ""), str(err.get("message") or "")
        retry = err.get("retry_after") or retry
    except (UnicodeDecodeError, ValueError, AttributeError):
        pass
    message = message or "HTTP %d" % status
    head = "cugrade: the server refused (%d %s): %s" % (status, code or "error", message)
    if status >= 500:
        return CugradeError("cugrade: the server failed (%d %s): %s" % (status, code or "error",
                                                                       message),
                            "This is not your fault: try again in a minute, and tell your "
                            "course staff if it keeps happening.", EXIT_SYSTEM)
    todo = {
        401: "Run `cugrade login` with a current token (your course staff can issue a new "
             "one if yours was revoked).",
        400: "Nothing was submitted: fix what the server names and submit again.",
        403: "Nothing was submitted. If you have a reason for an extension, ask your course "
             "staff." if code == "deadline_passed" else
             "Nothing was submitted; `cugrade labs` shows when each lab is open."
             if code == "lab_closed" else
             "This account may not do that; sign in with your student token (`cugrade login`).",
        404: "Check the name or number (`cugrade labs` lists the labs, `cugrade list` your "
             "submissions).",
        413: "Submit only your kernel source file: remove large tables, data or generated "
             "code from it.",
    }.get(status, "")
    if status == 429:
        todo = ("Nothing was submitted. Try again in %s seconds." % retry if retry else
                "Nothing was submitted. Wait a little and try again.")
    return CugradeError(_clean(head), todo, EXIT_USAGE)


# ------------------------------------------------------------------ language

_PY_LINE = re.compile(r"^(import\s+\w|from\s+[\w.]+\s+import\s|def\s+\w+\s*\(|"
                      r"class\s+\w+\s*(\([^)]*\))?\s*:\s*(#.*)?$|"
                      r"@\s*(cuda\.jit|numba|jit|njit|vectorize|guvectorize)\b)", re.M)
_CU_LINE = re.compile(r"^\s*#\s*include\b|__global__|__device__|<<<|extern\s+\"C\"", re.M)


def sniff_lang(source):
    """'py', 'cu' or None for a cell or file body. Python is decided first
    by its top-level statements (a CuPy RawKernel holds CUDA C in a Python
    string; CUDA C has no top-level `import` or `def`), then CUDA C by
    `#include`, `__global__`, `__device__`, `<<<` or `extern "C"`."""
    if _PY_LINE.search(source):
        return "py"
    if _CU_LINE.search(source):
        return "cu"
    return None


# ------------------------------------------------------------------ text

_CTRL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _clean(s):
    """s without terminal control characters (a compiler log or a message
    must not move the cursor or recolour the terminal)."""
    return _CTRL.sub("?", str(s).replace("\r\n", "\n"))


def fmt_num(v, unit=""):
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
        return "-"
    s = "%.3g" % v if abs(v) < 1000 else "%.0f" % v
    return s + (" " + unit if unit else "")


def fmt_score(score, max_score):
    if not isinstance(score, (int, float)) or isinstance(score, bool):
        return "-"
    s = ("%g" % round(score, 2))
    if isinstance(max_score, (int, float)) and not isinstance(max_score, bool):
        s += " / %g" % round(max_score, 2)
    return s


def case_ran(c):
    """False for a case the program never reached (the runner's "not run:
    ..." message: it stopped before, or ran past its time limit)."""
    return not str(c.get("message") or "").startswith("not run")


def status_todo(sub):
    """What to do next after an end state, or None. A timeout's or crash's
    own summary says what stopped it and where to look: the general line
    is left out then (said once)."""
    st = sub.get("status")
    res = sub.get("result") if isinstance(sub.get("result"), dict) else {}
    if st in ("timeout", "runtime_error") and res.get("output"):
        return None
    return STATUS_TODO.get(st)


def hidden_row(res, tests):
    """(score, max) of the tests a student may not see yet (the result's
    total less the visible rows), or None: one placeholder row, so the
    rows add up to the score as on the web page."""
    num = (lambda v: v if isinstance(v, (int, float)) and not isinstance(v, bool) else 0)
    hmax = num(res.get("max_score")) - sum(num(x.get("max_score")) for x in tests)
    hsc = num(res.get("score")) - sum(num(x.get("score")) for x in tests)
    return (max(0, hsc), hmax) if hmax > 1e-9 else None


def said_above(out, res):
    """A test's or case's "not run: <why>" whose why is the result's summary
    (shown above) as a short line instead of the summary again."""
    out = str(out or "")
    if out.startswith("not run: ") and len(out) > 9 and out[9:] in str(res.get("output") or ""):
        return "not run: your program stopped before this case (see above)"
    return out


HIDDEN_WORDS = "not shown yet (hidden tests show after the due date if the rubric says so)"


def fmt_eta(sec):
    if not isinstance(sec, (int, float)) or sec <= 0:
        return ""
    return "%d s" % sec if sec < 90 else "%d min" % ((sec + 59) // 60)


def fmt_elapsed(sec):
    sec = int(sec)
    return "%d:%02d" % (sec // 60, sec % 60)


def is_final(sub):
    return sub.get("status") in FINAL


def progress_words(sub):
    """The live line's words for a submission in progress (or done)."""
    st = sub.get("status") or "?"
    detail = _clean(sub.get("detail") or "")
    if st == "queued":
        pos = sub.get("queue_position")
        words = "queued"
        if isinstance(pos, int) and pos > 0:
            words += ", position %d (%s)" % (pos, "yours is next" if pos == 1 else
                                             "%d ahead" % (pos - 1))
        eta = fmt_eta(sub.get("eta_seconds"))
        if eta:
            words += ", starts in about " + eta
        if detail:
            words += "; " + detail
        return words
    if st == "checking" and re.match(r"^\d+/\d+$", detail):
        return "checking correctness, case %s" % detail
    if st in PHASES:
        return STATUS_WORDS[st] + (" (%s)" % detail if detail else "")
    return STATUS_WORDS.get(st, st)


def progress_line(sub, elapsed=None):
    """One line: '#12 reduction [###--] checking correctness, case 3/6  0:07'."""
    st = sub.get("status")
    step = PHASES.index(st) + 1 if st in PHASES else 5
    bar = "[" + "#" * step + "-" * (5 - step) + "]"
    line = "#%s %s %s %s" % (sub.get("id"), _clean(sub.get("lab") or ""), bar,
                             progress_words(sub))
    if elapsed is not None:
        line += "  " + fmt_elapsed(elapsed)
    return line


def _table(headers, rows, right=()):
    """Aligned plain-text columns; right: indexes of right-aligned columns."""
    rows = [[_clean(c).replace("\n", " ") for c in r] for r in rows]
    w = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]

    def line(cells):
        out = [c.rjust(w[i]) if i in right else c.ljust(w[i]) for i, c in enumerate(cells)]
        return "  " + "  ".join(out).rstrip()
    return "\n".join([line(headers), line(["-" * x for x in w])] + [line(r) for r in rows])


def _clip(s, n):
    s = _clean(s).replace("\n", " ")
    return s if len(s) <= n else s[:n - 3] + "..."


def timing_bars(t):
    """[(label, ms, is_student)] of a timing block, as the web page draws it."""
    bars = [("your kernel", t.get("student_ms"), True)]
    refs = t.get("reference_ms") if isinstance(t.get("reference_ms"), dict) else {}
    for k, v in list(refs.items())[:3]:
        bars.append(("reference (%s)" % k[:24], v, False))
    if _ms(t.get("cublas_ms")):     # a lab timed without cuBLAS has no cuBLAS row
        bars.append(("cuBLAS", t.get("cublas_ms"), False))
    if isinstance(t.get("cpu_ms"), (int, float)):
        bars.append(("CPU", t.get("cpu_ms"), False))
    return bars


def _ms(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0


def metric_fact(t):
    """The rubric's primary metric as the server's result describes it: its
    name, and the label and the value as shown (metric_label, metric_text)
    from the server's metric table; None when not measured. The client
    keeps no copy of the table: a result from before the label existed
    shows the name and the bare value."""
    v = t.get("metric_value")
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
        return None
    label = t.get("metric_label") if isinstance(t.get("metric_label"), str) else ""
    text = t.get("metric_text") if isinstance(t.get("metric_text"), str) else "%.3f" % v
    return "rubric metric %s%s = %s" % (t.get("metric") or "", " (%s)" % label if label else "",
                                       text)


def versus(mine, other):
    """'2.15x faster' / '1.30x slower' for your time against another."""
    if not (_ms(mine) and _ms(other)):
        return ""
    r = other / mine
    return "%.2fx faster" % r if r >= 1 else "%.2fx slower" % (1 / r)


def san_state(x):
    """What one sanitizer entry says: "clean", "problems" (it ran and found
    some), "ours" (it could not run for a reason of ours: runner_problem; not
    charged) or "not run" (it did not run, e.g. after a crash)."""
    if x.get("ran") is False or x.get("runner_problem"):
        return "ours" if x.get("runner_problem") else "not run"
    return "clean" if x.get("clean") else "problems"


SAN_WORDS = {"clean": "clean", "problems": "found problems", "ours": "not run (ours)",
             "not run": "not run"}


def san_words(x):
    """The words for one sanitizer entry, with the runner's note when it
    did not run."""
    st = san_state(x)
    note = _clean(x.get("note") or "") if st in ("ours", "not run") else ""
    return SAN_WORDS[st] + (": " + note if note else "")


def outcome(x):
    """A test's outcome: passed (all points), partial (some), not run, failed."""
    out = str(x.get("output") or "")
    sc, mx = x.get("score"), x.get("max_score")
    sc = sc if isinstance(sc, (int, float)) else 0
    mx = mx if isinstance(mx, (int, float)) else 0
    if out.startswith("not run") or out.startswith("not timed"):
        return "not run"
    if (mx > 0 and sc >= mx) or (mx <= 0 and x.get("status") == "passed"):
        return "passed"
    return "partial" if sc > 0 else "failed"


def _no_hint(out):
    """A test's feedback without its " Hint: ..." tail (hints are shown once)."""
    out = str(out or "")
    i = out.find(" Hint: ")
    return out[:i].rstrip(";") if i >= 0 else out


def fix_first(sub):
    """What to fix first, as (lines, hint shown): a rejection, the first
    compiler error, or the first failing case with its message, hint and
    line; ([], None) when there is nothing to fix."""
    res = sub.get("result") if isinstance(sub.get("result"), dict) else {}
    cg = res.get("cugrade") if isinstance(res.get("cugrade"), dict) else {}
    rej = cg.get("rejection")
    if isinstance(rej, dict):
        return (["Your code uses %s: %s" % (_clean(rej.get("symbol", "")),
                                            _clean(rej.get("reason", "")))], None)
    for line in str(cg.get("compile_log") or "").splitlines():
        if "error" in line:
            return (["The first compiler error (later ones often follow from it):",
                     "  " + _clean(line)], None)
    case = next((c for c in cg.get("cases") or [] if isinstance(c, dict)
                 and not c.get("passed") and case_ran(c)), None)
    finds = [f for x in cg.get("sanitizer") or [] if isinstance(x, dict)
             for f in x.get("findings") or [] if isinstance(f, dict)]
    if not case and not finds:
        return ([], None)
    out, hint = [], None
    if case:
        where = (" from element %d on" % case["first_bad_index"]
                 if isinstance(case.get("first_bad_index"), int) else "")
        msg = _clean(case.get("message") or "")
        out.append("Case %s is wrong%s%s" % (_clean(case.get("name", "")), where,
                                             ": " + msg if msg else "."))
        hint = next((d.get("text") for d in cg.get("hint_details") or []
                     if isinstance(d, dict) and d.get("case") == case.get("name")
                     and isinstance(d.get("text"), str)), None)
    else:
        out.append("The sanitizer found a problem: " + _clean(finds[0].get("message", "")))
    if not hint and finds and isinstance(finds[0].get("hint"), str):
        hint = finds[0]["hint"]
    if not hint:
        hint = next((h for h in cg.get("hints") or [] if isinstance(h, str)), None)
    if hint:
        out.append("Hint: " + _clean(hint))
    if finds and finds[0].get("line"):
        out.append("Line %s of %s." % (finds[0]["line"], _clean(finds[0].get("file", ""))))
    return (out, hint)


def finding_groups(findings, skip_hint=None):
    """A tool's findings grouped by source line: ([(first finding, message
    without device addresses, count)], each distinct hint once but
    skip_hint, already shown)."""
    seen, hints = {}, []
    for f in findings:
        if not isinstance(f, dict):
            continue
        key = (f.get("file"), f.get("line"))
        if key in seen:
            seen[key][1] += 1
            continue
        seen[key] = [f, 1]
        if f.get("hint") and f["hint"] != skip_hint and f["hint"] not in hints:
            hints.append(f["hint"])
    return ([(f, re.sub(r"0x[0-9a-fA-F]{4,}", "0x...", _clean(f.get("message", ""))), n)
             for f, n in seen.values()], hints)


def finding_lines(findings, skip_hint=None):
    """A tool's findings as text: one line per source line with a count,
    then each distinct hint once."""
    groups, hints = finding_groups(findings, skip_hint)
    out = []
    for f, msg, n in groups:
        where = "%s:%s: " % (_clean(f.get("file", "")), f.get("line")) if f.get("line") else ""
        out.append("  %s%s%s" % (where, msg, " (%d times)" % n if n > 1 else ""))
    return out + ["  hint: " + _clean(h) for h in hints]


def _bar_glyph():
    enc = (getattr(sys.stdout, "encoding", "") or "").lower()
    return "\u2588" if "utf" in enc else "#"


def _timing_text(t):
    """The Time section of render_text: a bar per kernel (yours, the
    references), the facts, and the flag when the timing earns nothing."""
    out = []
    out += ["", "Time (lower is better):"]
    bars = timing_bars(t)
    top = max([v for _, v, _ in bars if _ms(v)] or [1])
    glyph = _bar_glyph()
    rows = []
    for label, v, me in bars:
        rows.append([label, fmt_num(v, "ms") if _ms(v) else "n/a",
                     glyph * max(1, int(30 * v / top + 0.5)) if _ms(v) else "",
                     "" if me else versus(t.get("student_ms"), v)])
    out.append(_table(["kernel", "time", "", "yours is"], rows, right=(1,)))
    facts = []
    if isinstance(t.get("speedup"), (int, float)):
        facts.append("speedup used for ranking %s" % fmt_num(t["speedup"]))
    if metric_fact(t):
        facts.append(_clean(metric_fact(t)))
    if isinstance(t.get("gflops"), (int, float)):
        facts.append("%.1f GFLOP/s" % t["gflops"])
    if isinstance(t.get("bandwidth_gbs"), (int, float)):
        facts.append("%.1f GB/s" % t["bandwidth_gbs"])
    if isinstance(t.get("samples"), (int, float)):
        facts.append("median of %d samples (relative error %.2f%%)"
                     % (t["samples"], 100 * (t.get("rel_err") or 0)))
    if facts:
        out.append("  " + "; ".join(facts) + ".")
    if t.get("flagged"):
        out.append("  Flagged, no speed points: %s" % _clean(
            t.get("flag_reason") or "it is faster than the hardware allows."))
    return out


def render_text(sub, page=None):
    """The whole result of a finished submission as plain text."""
    st = sub.get("status") or "?"
    res = sub.get("result") if isinstance(sub.get("result"), dict) else {}
    cg = res.get("cugrade") if isinstance(res.get("cugrade"), dict) else {}
    out = []
    head = "Submission #%s to %s: %s" % (sub.get("id"), _clean(sub.get("lab") or ""),
                                         STATUS_WORDS.get(st, st))
    if isinstance(sub.get("score"), (int, float)):
        head += ", score %s" % fmt_score(sub.get("score"), sub.get("max_score"))
        if sub.get("overridden"):
            head += " (set by course staff)"
    out.append(head)
    if sub.get("late"):
        days, pct = sub.get("late_days"), sub.get("late_penalty_percent")
        out.append("Late%s%s." % (" by %g day(s)" % days if isinstance(days, (int, float)) else "",
                                  ": %g%% penalty" % pct if isinstance(pct, (int, float)) else ""))
    if status_todo(sub):
        out.append(status_todo(sub))
    if st == "superseded":
        out.append(_clean(sub.get("detail") or "") +
                   ": this one was never graded and does not count against your limits.")
    if res.get("output"):
        out.append(_clean(res["output"]))
    rej = cg.get("rejection")
    if isinstance(rej, dict):
        out += ["", "Rejected: your code uses %s. %s" % (_clean(rej.get("symbol", "")),
                                                        _clean(rej.get("reason", "")))]
    first, shown_hint = fix_first(sub)
    if first:
        out += ["", "What to fix first:"] + ["  " + l for l in first]
    if cg.get("compile_log"):
        out += ["", "Compiler output:"] + ["  " + l for l in _clean(cg["compile_log"]).splitlines()]
    tests = [x for x in res.get("tests") or [] if isinstance(x, dict)]
    if tests:
        hid = hidden_row(res, tests)
        out += ["", "Tests:", _table(
            ["test", "result", "points", "details"],
            [[x.get("name", ""), outcome(x), fmt_score(x.get("score"), x.get("max_score")),
              _no_hint(said_above(x.get("output", ""), res))] for x in tests] +
            ([["hidden tests", "hidden", fmt_score(*hid), HIDDEN_WORDS]] if hid else []),
            right=(2,))]
    cases = [x for x in cg.get("cases") or [] if isinstance(x, dict)]
    if cases:
        out += ["", "Correctness cases:", _table(
            ["case", "result", "max abs err", "max rel err", "first wrong"],
            [[x.get("name", ""), "passed" if x.get("passed") else
              "FAILED" if case_ran(x) else "not run",
              fmt_num(x.get("max_abs_err")), fmt_num(x.get("max_rel_err")),
              "index %d" % x["first_bad_index"] if isinstance(x.get("first_bad_index"), int)
              else "-"] for x in cases], right=(2, 3))]
        for x in cases:
            if x.get("message") and said_above(x["message"], res) == x["message"]:
                out.append("  %s: %s" % (_clean(x.get("name", "")), _clean(x["message"])))
    san = [x for x in cg.get("sanitizer") or [] if isinstance(x, dict)]
    if san:
        out += ["", "Sanitizers: " + ", ".join(
            "%s %s" % (_clean(x.get("tool", "")), san_words(x)) for x in san)]
        if any(san_state(x) == "ours" for x in san):
            out.append("  (not run on our side: not your problem, and not charged)")
        for x in san:
            out += finding_lines(x.get("findings") or [], shown_hint)
    t = cg.get("timing")
    if isinstance(t, dict):
        out += _timing_text(t)
    hints = [h for h in cg.get("hints") or [] if isinstance(h, str) and h != shown_hint]
    if hints:
        out += ["", "Hints:"] + ["  - " + _clean(h) for h in hints]
    out += profile_lines(sub)
    foot = []
    if cg.get("gpu"):
        foot.append("Graded on %s with rubric version %s." % (_clean(cg["gpu"]),
                                                              sub.get("rubric_version")))
    if page:
        foot.append("Web page: " + page)
    if foot:
        out += [""] + foot
    return "\n".join(out) + "\n"


def profile_of(sub):
    """The result's profile object ({} when there is none)."""
    res = sub.get("result") if isinstance(sub.get("result"), dict) else {}
    cg = res.get("cugrade") if isinstance(res.get("cugrade"), dict) else {}
    return cg.get("profile") if isinstance(cg.get("profile"), dict) else {}


def profile_pending(sub):
    """The score is final and the profile follows as an update of it."""
    return is_final(sub) and profile_of(sub).get("status") == "pending"


def profile_lines(sub):
    """The profile's lines of the text result: pending, its hints, or why
    there is none. Feedback only: the score never depends on it."""
    pf = profile_of(sub)
    st = pf.get("status")
    if not st:
        return []
    if st == "pending":
        return ["", "Profile pending: Nsight Compute's hints come as soon as the GPU has room "
                "(your score is final). `cugrade show %s` shows them." % sub.get("id")]
    if st != "ok":
        return ["", "Profile: %s" % _clean(pf.get("message") or st)]
    hints = [h.get("text") for h in pf.get("hints") or []
             if isinstance(h, dict) and isinstance(h.get("text"), str)]
    if not hints:
        return ["", "Profile (Nsight Compute): no problem found."]
    return ["", "Profile hints (Nsight Compute, feedback only):"] + \
        ["  - " + _clean(h).replace("\n", " ") for h in hints]


def exit_status(sub):
    """The exit status of a finished submission (module docstring)."""
    st = sub.get("status")
    if st == "graded":
        res = sub.get("result") if isinstance(sub.get("result"), dict) else {}
        cg = res.get("cugrade") if isinstance(res.get("cugrade"), dict) else {}
        bad_case = any(isinstance(c, dict) and c.get("passed") is False
                       for c in cg.get("cases") or [])
        bad_san = any(isinstance(s, dict) and s.get("clean") is False
                      and san_state(s) != "ours" for s in cg.get("sanitizer") or [])
        return EXIT_FAILED if bad_case or bad_san else EXIT_OK
    if st in VERDICTS:
        return EXIT_VERDICT
    if st == "system_error":
        return EXIT_SYSTEM
    return EXIT_OK                  # superseded (show only: watching follows it)


# ------------------------------------------------------------------ HTML

_BADGE = {"good": "color:#17733a;border:1px solid #9fd3b1;background:#eef9f1",
          "bad": "color:#b42318;border:1px solid #f2b8b2;background:#fdf1f0",
          "warn": "color:#8a5a00;border:1px solid #e9cf91;background:#fdf7e8",
          "busy": "color:#0b62c4;border:1px solid #9cc1ec;background:#eef5fd",
          "neutral": "color:#1d232b;border:1px solid #d9dee4;background:#f4f6f8"}
_BOX = ("font:14px/1.45 system-ui,'DejaVu Sans',sans-serif;color:#1d232b;background:#fff;"
        "max-width:56rem;padding:.2rem 0")
_TABLE = "border-collapse:collapse;margin:.3rem 0 .8rem;font-size:13px"
_CELL = "border:1px solid #d9dee4;padding:.2rem .5rem;text-align:left;vertical-align:top"
_NUM = _CELL.replace("text-align:left", "text-align:right")


def esc(s):
    return html.escape("" if s is None else str(s), quote=True)


def _badge(text, kind):
    return ('<span class="cugrade-badge %s" style="display:inline-block;padding:0 .4rem;'
            'border-radius:3px;font-weight:600;font-size:12px;%s">%s</span>'
            % (kind, _BADGE[kind], esc(text)))


def _notice(kind):
    """The inline style of a notice box: a badge's colours, a thick left rule."""
    return _BADGE[kind] + ";padding:.3rem .6rem;margin:.4rem 0;border-left-width:4px"


def _status_kind(st):
    if st == "graded":
        return "good"
    if st in PHASES:
        return "busy"
    if st in ("system_error", "superseded"):
        return "warn"
    return "bad"


def _html_table(cls, headers, rows, right=()):
    """rows: lists of cells already escaped (HTML)."""
    out = ['<table class="%s" style="%s"><thead><tr>' % (cls, _TABLE)]
    for i, h in enumerate(headers):
        out.append('<th style="%s;background:#f4f6f8">%s</th>' % (_NUM if i in right else _CELL,
                                                                 esc(h)))
    out.append("</tr></thead><tbody>")
    for r in rows:
        out.append("<tr>" + "".join('<td style="%s">%s</td>' % (_NUM if i in right else _CELL, c)
                                    for i, c in enumerate(r)) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def svg_bars(title, bars, unit):
    """An inline SVG bar chart like the web page's (server/html.c
    html_svg_bars): bars is [(label, value, highlight)]; every text escaped."""
    label_w, bar_w, row_h, pad = 150, 330, 28, 8
    width, height = label_w + bar_w + 90, len(bars) * row_h + 2 * pad + 16
    vals = [v for _, v, _ in bars if _ms(v)]
    top = max(vals or [0])
    # A log scale as the web page's: the shortest bar keeps a fifth of the
    # width (a 0.4 ms kernel beside a 106 ms CPU still shows), each decade
    # the same width.
    span = math.log10(top / min(vals)) / 0.8 if vals and top > min(vals) else 1
    base = math.log10(top) - span if vals else 0
    out = ['<svg class="cugrade-chart" role="img" xmlns="http://www.w3.org/2000/svg" '
           'viewBox="0 0 %d %d" width="%d" height="%d" style="max-width:100%%;height:auto;'
           'font:12px system-ui,\'DejaVu Sans\',sans-serif"><title>%s</title>'
           % (width, height, width, height, esc(title))]
    for i, (label, v, me) in enumerate(bars):
        y = pad + i * row_h
        out.append('<text x="%d" y="%d" text-anchor="end" fill="#1d232b">%s</text>'
                   % (label_w - 6, y + row_h // 2 + 4, esc(label)))
        if _ms(v) and top > 0:
            w = max(2, int(bar_w * (math.log10(v) - base) / span + 0.5))
            out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>'
                       % (label_w, y + 4, w, row_h - 8, "#0b62c4" if me else "#8aa4bf"))
            out.append('<text x="%d" y="%d" fill="#5a6470">%s</text>'
                       % (label_w + w + 6, y + row_h // 2 + 4, esc(fmt_num(v, unit))))
        else:
            out.append('<text x="%d" y="%d" fill="#5a6470">n/a</text>'
                       % (label_w + 6, y + row_h // 2 + 4))
    out.append('<text x="%d" y="%d" fill="#5a6470">(log scale)</text>' % (label_w, height - 6))
    out.append("</svg>")
    return "".join(out)


def _head_html(sub, page, elapsed=None):
    st = sub.get("status") or "?"
    out = ['<p class="cugrade-head" style="margin:.2rem 0"><strong>#%s %s</strong> '
           % (esc(sub.get("id")), esc(sub.get("lab"))), _badge(STATUS_WORDS.get(st, st),
                                                              _status_kind(st))]
    if isinstance(sub.get("score"), (int, float)):
        out.append(' <strong class="cugrade-score" style="font-size:18px">%s</strong>'
                   % esc(fmt_score(sub.get("score"), sub.get("max_score"))))
    if elapsed is not None:
        out.append(' <span style="color:#5a6470">%s</span>' % esc(fmt_elapsed(elapsed)))
    if page:
        out.append(' &middot; <a href="%s" target="_blank" rel="noopener">web page</a>'
                   % esc(page))
    out.append("</p>")
    return "".join(out)


def render_progress_html(sub, page=None, elapsed=None):
    """The live part while a submission is in progress: the phases, the
    queue position and ETA, the case count."""
    st = sub.get("status")
    pi = PHASES.index(st) if st in PHASES else 5
    out = ['<div class="cugrade-live" data-status="%s" style="%s">' % (esc(st), _BOX),
           _head_html(sub, page, elapsed)]
    out.append('<ol class="cugrade-phases" style="display:flex;gap:1.2rem;padding-left:1.2rem;'
               'margin:.3rem 0">')
    for i, ph in enumerate(PHASES):
        style = ("color:#17733a" if i < pi else "font-weight:700;color:#0b62c4" if i == pi
                 else "color:#5a6470")
        out.append('<li class="%s" style="%s">%s</li>'
                   % ("done" if i < pi else "now" if i == pi else "", style,
                      esc(STATUS_WORDS[ph])))
    out.append("</ol>")
    out.append('<div role="progressbar" aria-valuemin="0" aria-valuemax="5" aria-valuenow="%d" '
               'style="height:6px;background:#eef1f4;border-radius:3px;max-width:30rem">'
               '<div style="height:6px;width:%d%%;background:#0b62c4;border-radius:3px"></div>'
               '</div>' % (pi, 8 + 18 * pi))
    out.append('<p class="cugrade-now" style="margin:.3rem 0">%s</p>' % esc(progress_words(sub)))
    out.append("</div>")
    return "".join(out)


def _sanitizer_html(san, shown_hint):
    """The Sanitizers section of render_html: each tool's state, its note
    when it did not run, its findings grouped by line (a count, not the
    same line again), and each hint once (not the one shown at the top)."""
    out = ['<h4>Sanitizers</h4><ul class="cugrade-sanitizer">']
    for x in san:
        st = san_state(x)
        out.append("<li><strong>%s</strong>: %s" % (esc(x.get("tool")), _badge(
            {"clean": "clean", "problems": "problems found"}.get(st, SAN_WORDS[st]),
            {"clean": "good", "problems": "bad"}.get(st, "neutral"))))
        if st in ("ours", "not run") and x.get("note"):
            out.append(' <span style="color:#5a6470">%s</span>' % esc(x.get("note")))
        groups, hints = finding_groups(x.get("findings") or [], shown_hint)
        if groups:
            out.append("<ul>")
            for f, msg, n in groups:
                where = ("%s line %s: " % (f.get("file", ""), f.get("line"))
                         if f.get("line") else "")
                out.append("<li>%s%s%s</li>" % (esc(where), esc(msg), (
                    ' <span style="color:#5a6470">(%d times)</span>' % n if n > 1 else "")))
            out.append("</ul>")
        for h in hints:
            out.append('<br><span class="cugrade-hint" style="color:#5a6470">Hint: %s</span>'
                       % esc(h))
        out.append("</li>")
    out.append("</ul>")
    return out


def _timing_html(t):
    """The Time section of render_html: the bars (yours, the references),
    the facts beside them, and the flag when the timing earns nothing."""
    bars = timing_bars(t)
    out = ["<h4>Time (lower is better)</h4>",
           svg_bars("Kernel time in milliseconds: yours, the reference kernels and "
                    "cuBLAS", bars, "ms")]
    facts = ["%s: yours is %s" % (label, versus(t.get("student_ms"), v))
             for label, v, me in bars if not me and versus(t.get("student_ms"), v)]
    if isinstance(t.get("speedup"), (int, float)):
        facts.append("speedup used for ranking: %s" % fmt_num(t["speedup"]))
    if metric_fact(t):
        facts.append(metric_fact(t))
    if isinstance(t.get("gflops"), (int, float)):
        facts.append("%.1f GFLOP/s" % t["gflops"])
    if isinstance(t.get("bandwidth_gbs"), (int, float)):
        facts.append("%.1f GB/s" % t["bandwidth_gbs"])
    if facts:
        out.append('<p class="cugrade-speed" style="font-size:13px">%s.</p>'
                   % esc("; ".join(facts)))
    if t.get("flagged"):
        out.append('<div class="cugrade-notice warn" style="%s">This timing was flagged '
                   'and earns no speed points: %s</div>' % (_notice("warn"), esc(
                       t.get("flag_reason") or "it is faster than the hardware allows.")))
    return out


def render_html(sub, page=None):
    """The result of a finished submission as one HTML fragment with inline
    styles (a notebook has no stylesheet of ours): the same parts as the
    web page's submission view. Every string from the server is escaped."""
    st = sub.get("status") or "?"
    res = sub.get("result") if isinstance(sub.get("result"), dict) else {}
    cg = res.get("cugrade") if isinstance(res.get("cugrade"), dict) else {}
    out = ['<div class="cugrade-result" data-status="%s" style="%s">' % (esc(st), _BOX),
           _head_html(sub, page)]
    if status_todo(sub):
        kind = "warn" if st == "system_error" else "bad"
        out.append('<div class="cugrade-notice %s" style="%s">%s</div>'
                   % (kind, _notice(kind), esc(status_todo(sub))))
    if sub.get("late"):
        out.append('<p style="color:#8a5a00">Late%s.</p>' % esc(
            " by %g day(s), %g%% penalty" % (sub.get("late_days") or 0,
                                            sub.get("late_penalty_percent") or 0)))
    if res.get("output"):
        out.append('<p class="cugrade-summary">%s</p>' % esc(res["output"]))
    rej = cg.get("rejection")
    if isinstance(rej, dict):
        out.append('<div class="cugrade-notice bad" style="%s"><strong>Rejected:</strong> your '
                   'code uses <code>%s</code>. %s</div>'
                   % (_notice("bad"), esc(rej.get("symbol")), esc(rej.get("reason"))))
    first, shown_hint = fix_first(sub)
    if first:
        out.append('<div class="cugrade-fix-first" style="%s"><strong>What to fix first</strong>'
                   '<br>%s</div>' % (_notice("bad"), "<br>".join(esc(x) for x in first)))
    if cg.get("compile_log"):
        out.append('<h4>Compiler output</h4><pre class="cugrade-log" style="background:#f4f6f8;'
                   'padding:.5rem;overflow:auto;max-height:20rem">%s</pre>' % esc(cg["compile_log"]))
    tests = [x for x in res.get("tests") or [] if isinstance(x, dict)]
    if tests:
        hid = hidden_row(res, tests)
        out.append("<h4>Tests</h4>")
        out.append(_html_table("cugrade-tests", ["Test", "Result", "Points", "Details"], [
            [esc(x.get("name")), _badge(outcome(x), {"passed": "good", "partial": "warn",
                                                      "not run": "neutral"}.get(outcome(x), "bad")),
             esc(fmt_score(x.get("score"), x.get("max_score"))),
             "<code>%s</code>" % esc(said_above(x.get("output"), res))] for x in tests] +
            ([["hidden tests", _badge("hidden", "neutral"), esc(fmt_score(*hid)),
               esc(HIDDEN_WORDS)]] if hid else []), right=(2,)))
    cases = [x for x in cg.get("cases") or [] if isinstance(x, dict)]
    if cases:
        out.append("<h4>Correctness cases</h4>")
        out.append(_html_table(
            "cugrade-cases", ["Case", "Result", "Max abs error", "Max rel error",
                              "First wrong element", "Message"],
            [[esc(x.get("name")), _badge("passed" if x.get("passed") else
                                         "failed" if case_ran(x) else "not run",
                                         "good" if x.get("passed") else
                                         "bad" if case_ran(x) else "neutral"),
              esc(fmt_num(x.get("max_abs_err"))), esc(fmt_num(x.get("max_rel_err"))),
              esc("index %d" % x["first_bad_index"] if isinstance(x.get("first_bad_index"), int)
                  else "-"), esc(said_above(x.get("message"), res))] for x in cases],
            right=(2, 3)))
    san = [x for x in cg.get("sanitizer") or [] if isinstance(x, dict)]
    if san:
        out.extend(_sanitizer_html(san, shown_hint))
    t = cg.get("timing")
    if isinstance(t, dict):
        out.extend(_timing_html(t))
    hints = [h for h in cg.get("hints") or [] if isinstance(h, str) and h != shown_hint]
    if hints:
        out.append('<h4>Hints</h4><ul class="cugrade-hints">%s</ul>'
                   % "".join("<li>%s</li>" % esc(h) for h in hints))
    pl = profile_lines(sub)
    if pl:
        out.append('<h4>Profile</h4><p class="cugrade-profile">%s</p>'
                   % "<br>".join(esc(x) for x in pl[1:]))
    if cg.get("gpu"):
        out.append('<p style="color:#5a6470;font-size:12px">Graded on %s with rubric version '
                   '%s.</p>' % (esc(cg["gpu"]), esc(sub.get("rubric_version"))))
    out.append("</div>")
    return "".join(out)


def render_error_html(err):
    return ('<div class="cugrade-error" style="%s;%s"><strong>%s</strong>%s</div>'
            % (_BOX, _notice("bad"), esc(err.message),
               "<br>" + esc(err.todo).replace("\n", "<br>") if err.todo else ""))


# ------------------------------------------------------------------ watching

class TermProgress:
    """The live line on a terminal: redrawn in place on a TTY (\\r, erase
    to the end of line, clipped to the width so it never wraps), a plain
    line per change otherwise (logs, CI, pipes)."""

    def __init__(self, stream=None, tty=None):
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty() if tty is None else tty
        self.last = None
        self.drawn = False
        self.start = time.monotonic()

    def update(self, sub):
        elapsed = time.monotonic() - self.start
        if self.tty:
            width = shutil.get_terminal_size((80, 24)).columns
            self.stream.write("\r" + progress_line(sub, elapsed)[:max(10, width - 1)] + "\x1b[K")
            self.drawn = True
        else:
            # A new line when the state moves, not when only the ETA does.
            key = (sub.get("status"), sub.get("queue_position"), sub.get("detail"))
            if key != self.last:
                self.stream.write("[%s] %s\n" % (fmt_elapsed(elapsed), progress_line(sub)))
            self.last = key
        self.stream.flush()

    def note(self, text):
        self._erase()
        self.stream.write(_clean(text) + "\n")
        self.stream.flush()

    def _erase(self):
        if self.tty and self.drawn:
            self.stream.write("\r\x1b[K")
            self.drawn = False

    def finish(self, sub):
        self._erase()
        self.stream.flush()


def next_interval(sub, interval):
    """The pause before the next poll: `interval` when given, else 1 s
    while grading runs and up to 5 s deep in a queue (a thousand students
    watching on deadline night must not flood the server)."""
    if interval:
        return interval
    if sub.get("status") == "queued":
        eta = sub.get("eta_seconds")
        # No ETA: no rate measured yet, or no runner connected: 3 s.
        return max(1.0, min(5.0, eta / 10.0)) if isinstance(eta, (int, float)) else 3.0
    return 1.0


PROFILE_WAIT_S = 90.0


def wait_profile(client, sub, show, profile_wait, interval=None):
    """The score is final and its profile pending: poll for profile_wait
    seconds at most until the update lands; returns the last submission
    object seen. Never an error: the result is already there (a server
    that stops answering or a Ctrl-C ends the wait)."""
    sid = sub.get("id")
    show.note("Score is final; waiting up to %d s for the profile's hints (Ctrl-C stops "
              "waiting)." % profile_wait)
    end = time.monotonic() + profile_wait
    try:
        while profile_pending(sub) and time.monotonic() < end:
            time.sleep(min(interval or 2.0, max(0.1, end - time.monotonic())))
            sub = client.submission(sid)
    except (CugradeError, KeyboardInterrupt):
        pass
    if profile_pending(sub):
        show.note("The profile is still pending: `cugrade show %s` shows it later." % sid)
    return sub


def watch(client, sid, show, interval=None, retry_s=60.0, follow=True,
          profile_wait=PROFILE_WAIT_S):
    """Poll the submission until it reaches an end state, telling show of
    every answer; returns the final submission object. A server that stops
    answering is retried for retry_s seconds (then CugradeError
    EXIT_SYSTEM: the submission is saved there). A superseded submission
    is followed to the one that replaced it. A final one whose profile is
    pending is waited for profile_wait seconds more (wait_profile)."""
    down_since = None
    while True:
        try:
            sub = client.submission(sid)
        except CugradeError as e:
            if e.status != EXIT_SYSTEM:
                raise
            now = time.monotonic()
            if down_since is None:
                down_since = now
                show.note("cugrade: the server is not answering (%s); retrying for %d s."
                          % (e.message.split("(", 1)[-1].rstrip(")."), retry_s))
            if now - down_since >= retry_s:
                raise CugradeError(e.message, "Submission #%s is saved on the server and keeps "
                                   "its place: check it later with `cugrade show %s --watch`."
                                   % (sid, sid), EXIT_SYSTEM)
            time.sleep(min(5.0, max(interval or 1.0, 0.5)))
            continue
        down_since = None
        m = re.match(r"replaced by submission (\d+)", sub.get("detail") or "")
        if follow and sub.get("status") == "superseded" and m:
            show.note("Submission #%s was replaced by #%s (you submitted again while it was "
                      "queued); following #%s." % (sid, m.group(1), m.group(1)))
            sid = int(m.group(1))
            continue
        show.update(sub)
        if is_final(sub):
            show.finish(sub)
            if profile_pending(sub) and profile_wait > 0:
                sub = wait_profile(client, sub, show, profile_wait, interval)
                show.finish(sub)
            return sub
        time.sleep(next_interval(sub, interval))


# ------------------------------------------------------------------ commands

def _out(args, text):
    sys.stdout.write(text)
    sys.stdout.flush()


def _print_json(obj):
    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def read_source(path):
    """(file name to send, bytes) of FILE ('-' is stdin, named by --name)."""
    try:
        if path == "-":
            return None, sys.stdin.buffer.read()
        with open(path, "rb") as f:
            return os.path.basename(path), f.read()
    except OSError as e:
        raise CugradeError("cugrade: cannot read %s: %s." % (path, e.strerror),
                           "Give the path of your kernel file, e.g. `cugrade submit reduction "
                           "reduce.cu`.")


def _asking(ask):
    """ask(text) that turns "cannot prompt here" (end of input; a notebook
    run headless, whose kernel has no stdin) into a CugradeError."""
    def wrapped(text):
        try:
            return ask(text)
        except Exception as e:  # noqa: BLE001 - EOFError, IPython's StdinNotImplementedError
            if not isinstance(e, EOFError) and type(e).__name__ != "StdinNotImplementedError":
                raise
            raise CugradeError("cugrade: cannot ask for the server and token here (no input).",
                               "Run `cugrade login` in a terminal (the notebook uses the same "
                               "config), or set CUGRADE_SERVER and CUGRADE_TOKEN.")
    return wrapped


def cmd_login(args, prompt=None, secret=None):
    """Ask for the server and the token, check them with GET /api/me, save.
    input and getpass are looked up now: a Jupyter kernel swaps in its own
    for each cell, so that the prompts appear in the notebook."""
    prompt = _asking(prompt or input)
    secret = _asking(secret or getpass.getpass)
    cfg = {}
    try:
        cfg = config_load()
    except CugradeError:
        cfg = {}            # login is how an unsafe or broken file gets replaced
    interactive = args.interactive if args.interactive is not None else sys.stdin.isatty()
    server = args.server or getattr(args, "url", None) or os.environ.get("CUGRADE_SERVER") or ""
    if not server:
        default = cfg.get("server") or DEFAULT_SERVER
        server = (prompt("Server URL [%s]: " % default) if interactive else "").strip() or default
    _check_url(server)
    if args.token_stdin or not interactive:
        token = sys.stdin.readline().strip()
    else:
        token = secret("Token (starts with cgs_; from your course staff; not shown): ").strip()
    if not token:
        raise CugradeError("cugrade: no token given.",
                           "Paste the token your course staff gave you (cgs_ and 64 hex digits).")
    me = Client(server, token).me()
    path = config_save({"server": server.rstrip("/"), "token": token,
                        "user": me.get("name"), "role": me.get("role")})
    _out(args, "Signed in to %s as %s (%s, %s).\nToken saved in %s (mode 0600).\n"
         % (server.rstrip("/"), _clean(me.get("name", "?")), _clean(me.get("display_name", "")),
            _clean(me.get("role", "?")), path))
    if me.get("role") != "student":
        _out(args, "Note: this is a %s token, not a student's.\n" % _clean(me.get("role")))
    version_check(Client(server, token))
    return EXIT_OK


def cmd_logout(args):
    path = config_path()
    try:
        os.unlink(path)
        _out(args, "Signed out: removed %s.\n" % path)
    except FileNotFoundError:
        _out(args, "Not signed in (no %s).\n" % path)
    return EXIT_OK


def cmd_labs(args):
    c = client_from_settings(args.server)
    labs = c.labs()
    if args.json:
        _print_json({"labs": labs})
        return EXIT_OK
    _out(args, _table(["lab", "title", "due", "open"],
                      [[x.get("lab", ""), x.get("title", ""), x.get("due") or "-",
                        "yes" if x.get("open") else "no"] for x in labs]) + "\n")
    return EXIT_OK


def finish_watch(args, c, sub):
    if args.json:
        _print_json(sub)
    else:
        _out(args, render_text(sub, c.page(sub["id"])))
    return exit_status(sub)


def cmd_submit(args):
    c = client_from_settings(args.server)
    name, data = read_source(args.file)
    if args.name:
        name = args.name
    if not name:
        lang = args.lang or sniff_lang(data.decode("utf-8", "replace"))
        if not lang:
            raise CugradeError("cugrade: cannot tell whether stdin is CUDA C or Python.",
                               "Add --lang cu or --lang py (or --name kernel.cu).")
        name = "kernel." + lang
    acc = c.submit(args.lab, name, data)
    sid = acc.get("id")
    if not args.json or not args.watch:
        lines = []
        if not args.json:
            lines.append("Submitted %s to %s: submission #%s, %s." % (
                _clean(name), _clean(args.lab), sid, acc.get("status", "queued")))
            if acc.get("late"):
                lines.append("This submission is late: the lab's late policy applies.")
            if acc.get("superseded"):
                lines.append("It replaces your earlier submission that was still queued (that "
                             "one will not be graded).")
            if not args.watch:
                lines.append("Follow it with `cugrade show %s --watch` or at %s" % (sid,
                                                                                 c.page(sid)))
            _out(args, "\n".join(lines) + "\n")
        else:
            _print_json(acc)
    if not args.watch:
        return EXIT_OK
    return _watch_and_finish(args, c, sid)


def _watch_and_finish(args, c, sid):
    show = TermProgress(sys.stderr if args.json else sys.stdout,
                        tty=None if not args.json else sys.stderr.isatty())
    if args.json and not sys.stderr.isatty():
        show = _Quiet()
    try:
        sub = watch(c, sid, show, interval=args.interval, retry_s=args.retry,
                    profile_wait=args.profile_wait)
    except KeyboardInterrupt:
        show.note("\nStopped watching. Submission #%s keeps its place; follow it with "
                  "`cugrade show %s --watch` or at %s" % (sid, sid, c.page(sid)))
        return EXIT_INTERRUPTED
    return finish_watch(args, c, sub)


class _Quiet:
    def update(self, sub):
        pass

    def note(self, text):
        sys.stderr.write(_clean(text) + "\n")

    def finish(self, sub):
        pass


def cmd_show(args):
    c = client_from_settings(args.server)
    if args.source:
        sys.stdout.buffer.write(c.source(args.id))
        return EXIT_OK
    sub = c.submission(args.id)
    if args.watch and (not is_final(sub) or profile_pending(sub)):
        return _watch_and_finish(args, c, args.id)
    if args.json:
        _print_json(sub)
    elif is_final(sub):
        _out(args, render_text(sub, c.page(sub["id"])))
    else:
        _out(args, progress_line(sub) + "\nFollow it with `cugrade show %s --watch`.\n"
             % sub.get("id"))
    return exit_status(sub) if is_final(sub) else EXIT_OK


def cmd_list(args):
    c = client_from_settings(args.server)
    subs = c.submissions(args.lab, args.status, args.limit)
    if args.json:
        _print_json({"submissions": subs})
        return EXIT_OK
    if not subs:
        _out(args, "No submissions%s yet.\n" % (" to " + _clean(args.lab) if args.lab else ""))
        return EXIT_OK
    _out(args, _table(["id", "lab", "status", "score", "file", "submitted"],
                      [[str(s.get("id")), s.get("lab", ""), s.get("status", ""),
                        fmt_score(s.get("score"), s.get("max_score")), s.get("filename", ""),
                        (s.get("created_at") or "").replace("T", " ").rstrip("Z")]
                       for s in subs], right=(0, 3)) + "\n")
    return EXIT_OK


def cmd_scoreboard(args):
    c = client_from_settings(args.server)
    if args.csv:
        sys.stdout.buffer.write(c.scoreboard(args.lab, csv=True))
        return EXIT_OK
    sb = c.scoreboard(args.lab)
    if args.json:
        _print_json(sb)
        return EXIT_OK
    mine = set()
    try:
        me = c.me()
        mine = {me.get("name"), (me.get("pseudonyms") or {}).get(args.lab)} - {None}
    except CugradeError:
        pass
    rows = sb.get("rows") or []
    if not rows:
        _out(args, "No graded submissions to %s yet.\n" % _clean(args.lab))
        return EXIT_OK
    _out(args, "Scoreboard of %s (best score per student; ties by speedup):\n"
         % _clean(sb.get("lab") or args.lab))
    _out(args, _table(["rank", "student", "score", "speedup", "submitted", ""],
                      [[str(r.get("rank", "")), r.get("display_name") or r.get("user") or "",
                        fmt_score(r.get("score"), r.get("max_score")),
                        "%.2fx" % r["speedup"] if isinstance(r.get("speedup"), (int, float))
                        else "-", r.get("submitted_on") or r.get("submitted_at") or "",
                        "<- you" if r.get("user") in mine else ""] for r in rows],
                      right=(0, 2, 3)) + "\n")
    return EXIT_OK


# ------------------------------------------------------------------ local test
#
# `cugrade test LAB FILE` runs the student's file against the lab's public
# cases here, with the grader's own harness: the server's lab bundle
# (GET /api/labs/LAB/bundle: the harness, the generator, the owner and its
# checks, the public cases, and local.py, which does the run) is fetched,
# checked against its SHA-256 sums and cached per bundle version under
# $XDG_CACHE_HOME/cugrade/bundles/LAB/VERSION. What runs and how is the
# bundle's (labs/common/py/local.py), so it changes with the server's labs
# and not with this file. docs/client.md.

def _version_tuple(v):
    return tuple(int(x) for x in re.findall(r"\d+", str(v))[:3])


def version_check(client, stream=None):
    """Say (on stream, default stderr) when the server serves a newer client
    than this one, with the line that updates it. Best effort: any failure
    is silent. Returns the server's version or None."""
    try:
        status, _, data = client.request("GET", "/client/version")
        info = json.loads(data.decode("utf-8")) if status == 200 else {}
    except (CugradeError, ValueError, UnicodeDecodeError):
        return None
    theirs = str(info.get("version") or "")
    if theirs and _version_tuple(theirs) > _version_tuple(__version__):
        (stream or sys.stderr).write(
            "cugrade: the server has a newer client (%s; this is %s). Update it with:\n"
            "  curl -O %s\n" % (_clean(theirs), __version__,
                                _clean(info.get("url") or client.server + "/client/cugrade.py")))
    return theirs or None


def cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "cugrade", "bundles")


def bundle_version(files):
    """The bundle's version as the server computes it (server/bundle.c):
    SHA-256 of the lines "PATH SHA256\\n" over the sorted paths."""
    lines = "".join("%s %s\n" % (p, files[p]["sha256"]) for p in sorted(files))
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


def bundle_verify(doc):
    """Raise CugradeError unless every file matches its sum and the sums
    the version. Returns the version."""
    files = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(files, dict) or not files:
        raise CugradeError("cugrade: the server's lab bundle is empty or malformed.",
                           "Tell your course staff; `cugrade submit` still works.", EXIT_SYSTEM)
    for path, f in files.items():
        bad = (not isinstance(f, dict) or ".." in path.split("/") or path.startswith("/") or
               hashlib.sha256(str(f.get("text", "")).encode("utf-8")).hexdigest() != f.get("sha256"))
        if bad:
            raise CugradeError("cugrade: the lab bundle's file %s does not match its SHA-256 "
                               "(damaged on the way, or stale)." % _clean(path),
                               "Run the command again; tell your course staff if it keeps "
                               "happening.", EXIT_SYSTEM)
    if bundle_version(files) != doc.get("version"):
        raise CugradeError("cugrade: the lab bundle's version does not match its files.",
                           "Run the command again; tell your course staff if it keeps "
                           "happening.", EXIT_SYSTEM)
    return doc["version"]


def _bundle_unpack(doc, dest):
    tmp = dest + ".%d.tmp" % os.getpid()
    shutil.rmtree(tmp, ignore_errors=True)
    for path, f in doc["files"].items():
        full = os.path.join(tmp, *path.split("/"))
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8", newline="") as out:
            out.write(f["text"])
    with open(os.path.join(tmp, "bundle.json"), "w") as out:
        json.dump({"lab": doc["lab"], "version": doc["version"],
                   "public_cases": doc.get("public_cases"), "fetched": time.time()}, out)
    try:
        os.rename(tmp, dest)
    except OSError:         # another run unpacked the same version first
        shutil.rmtree(tmp, ignore_errors=True)


def bundle_fetch(client, lab, note=None):
    """The folder of lab's current bundle: the cached one when the server
    says it is current (304), else fetched, checked and unpacked. When the
    server cannot be reached, the newest cached one, saying so (note)."""
    note = note or (lambda s: sys.stderr.write(s + "\n"))
    root = os.path.join(cache_dir(), re.sub(r"[^A-Za-z0-9_.-]", "_", lab))
    current = os.path.join(root, "current")
    have = ""
    try:
        with open(current) as f:
            have = f.read().strip()
    except OSError:
        pass
    if have and not os.path.isdir(os.path.join(root, have)):
        have = ""
    path = "/api/labs/%s/bundle" % urllib.parse.quote(lab, safe="")
    try:
        status, headers, data = client.request(
            "GET", path + ("?have=" + urllib.parse.quote(have) if have else ""))
    except CugradeError:
        if not have:
            raise
        note("cugrade: the server cannot be reached; using the cached bundle %s, which may be "
             "stale." % have[:12])
        return os.path.join(root, have)
    if status == 304 and have:
        return os.path.join(root, have)
    if status != 200:
        raise api_error(status, headers, data)
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise CugradeError("cugrade: the server's lab bundle is not JSON.",
                           "Check that the address is the cugrade server's.", EXIT_SYSTEM)
    version = bundle_verify(doc)
    os.makedirs(root, mode=0o700, exist_ok=True)
    dest = os.path.join(root, version)
    if not os.path.isdir(dest):
        _bundle_unpack(doc, dest)
    part = "%s.%d.tmp" % (current, os.getpid())
    with open(part, "w") as f:
        f.write(version + "\n")
    os.replace(part, current)
    if have and have != version:
        note("cugrade: the lab's bundle changed on the server (%s -> %s): using the new one."
             % (have[:12], version[:12]))
    return dest


def local_argv(bundle, lab, path, sim=False, cases=None, as_json=False):
    """The command that runs the bundle's local.py on path."""
    argv = [sys.executable, "-B", os.path.join(bundle, "labs", "common", "py", "local.py"),
            lab, os.path.abspath(path)]
    if sim:
        argv.append("--sim")
    if cases:
        argv += ["--cases", cases]
    if as_json:
        argv.append("--json")
    return argv


def cmd_test(args):
    """cugrade test LAB FILE: the local run; its exit status is local.py's
    (0 passed, 1 a case failed, 2 compile_error/rejected, 4 this machine
    lacks something)."""
    if not os.path.isfile(args.file):
        raise CugradeError("cugrade: no file %s." % args.file, "Give the path of your .cu or "
                           ".py file.")
    if not args.file.endswith((".cu", ".py")):
        raise CugradeError("cugrade: %s is neither a .cu nor a .py file." % args.file,
                           "cugrade test runs CUDA C (.cu) or Python (.py) files.")
    c = client_from_settings(args.server)
    version_check(c)
    bundle = bundle_fetch(c, args.lab)
    sys.stdout.flush()
    return local_run(local_argv(bundle, args.lab, args.file, args.sim, args.cases, args.json))[0]


def local_run(argv, capture=False):
    """Run the local test (argv): (its exit status, its output when capture
    (stdout and stderr together) else None). When a signal ended it (the
    kernel's OOM killer sends SIGKILL and leaves no message), a
    CugradeError that says so and what to try."""
    import signal
    import subprocess
    if capture:
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        rc, out = r.returncode, r.stdout.decode("utf-8", "replace")
    else:
        rc, out = subprocess.call(argv), None
    if rc >= 0:
        return rc, out
    try:
        name = signal.Signals(-rc).name
    except ValueError:
        name = "signal %d" % -rc
    hint = ("This machine probably ran out of memory (the system killed it). Run fewer cases "
            "(--cases), close other programs, or submit: the grader runs every case."
            if -rc == signal.SIGKILL else
            "Run it again; if it keeps happening, submit: the grader runs every case.")
    raise CugradeError("cugrade test: the local run was ended by %s before it could report."
                       % name, hint, EXIT_SYSTEM)


class _Parser(argparse.ArgumentParser):
    """argparse that raises (usage errors are exit 4; the magic must not
    exit the kernel)."""

    def error(self, message):
        raise CugradeError("cugrade: %s" % message, "See `cugrade %s--help`."
                           % (self.prog.split(" ", 1)[1] + " " if " " in self.prog else ""))


def build_parser(prog="cugrade"):
    p = _Parser(prog=prog, description="The student client of the cugrade autograder.",
                epilog="Exit status: 0 graded and correct / done, 1 graded with a failed case "
                       "or sanitizer finding, 2 compile_error/rejected/runtime_error/timeout, "
                       "3 system_error or server unreachable, 4 usage, sign-in or a refused "
                       "request, 130 interrupted.")
    p.add_argument("--version", action="version", version="cugrade " + __version__)
    p.add_argument("--server", help="server URL (default: from `cugrade login`, or "
                                    "$CUGRADE_SERVER)")
    common = _Parser(add_help=False)
    common.add_argument("--server", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND", parser_class=_Parser)
    real_add = sub.add_parser
    sub.add_parser = lambda *a, **kw: real_add(*a, parents=[common], **kw)

    s = sub.add_parser("login", help="save the server URL and your token (checked first)")
    s.add_argument("url", nargs="?", help="the server's address (as on its /help page)")
    s.add_argument("--token-stdin", action="store_true",
                   help="read the token from standard input (for scripts)")
    s.set_defaults(fn=cmd_login, interactive=None)

    s = sub.add_parser("logout", help="forget the saved token")
    s.set_defaults(fn=cmd_logout)

    s = sub.add_parser("labs", help="the labs and their due dates")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_labs)

    s = sub.add_parser("submit", help="submit a file (.cu or .py) to a lab")
    s.add_argument("lab")
    s.add_argument("file", help="your source file ('-': standard input)")
    s.add_argument("--watch", "-w", action="store_true",
                   help="follow it live until it is graded, then show the result")
    s.add_argument("--name", help="the file name the server sees (default: the file's own)")
    s.add_argument("--lang", choices=("cu", "py"), help="for '-' (stdin): the language")
    _watch_opts(s)
    s.set_defaults(fn=cmd_submit)

    s = sub.add_parser("show", help="one submission: its result, or its progress")
    s.add_argument("id", type=int)
    s.add_argument("--watch", "-w", action="store_true", help="follow it until it is graded")
    s.add_argument("--source", action="store_true", help="print the source that was submitted")
    _watch_opts(s)
    s.set_defaults(fn=cmd_show)

    s = sub.add_parser("list", help="your submissions, newest first")
    s.add_argument("--lab")
    s.add_argument("--status")
    s.add_argument("--limit", type=int, default=20)
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_list)

    s = sub.add_parser("scoreboard", help="a lab's scoreboard")
    s.add_argument("lab")
    s.add_argument("--json", action="store_true")
    s.add_argument("--csv", action="store_true")
    s.set_defaults(fn=cmd_scoreboard)

    s = sub.add_parser("test", help="run a file on the lab's public cases here (local, not a "
                                    "grade)")
    s.add_argument("lab")
    s.add_argument("file", help="your .cu or .py file")
    s.add_argument("--sim", action="store_true",
                   help="Python: run in Numba's CUDA simulator even if there is a GPU")
    s.add_argument("--cases", help="only these public cases (comma-separated)")
    s.add_argument("--json", action="store_true", help="the result as JSON")
    s.set_defaults(fn=cmd_test)
    return p


def _watch_opts(s):
    s.add_argument("--json", action="store_true", help="print the submission as JSON")
    s.add_argument("--interval", type=float, default=None, help=argparse.SUPPRESS)
    s.add_argument("--retry", type=float, default=60.0,
                   help="seconds to keep retrying an unreachable server while watching")
    s.add_argument("--profile-wait", type=float, default=PROFILE_WAIT_S,
                   help="seconds to wait for a pending profile once the score is in "
                        "(0: do not wait)")


def main(argv=None):
    """The command line; returns the exit status."""
    try:
        args = build_parser().parse_args(argv)
        if not getattr(args, "fn", None):
            build_parser().print_help()
            return EXIT_USAGE
        return args.fn(args)
    except CugradeError as e:
        sys.stdout.flush()
        sys.stderr.write(e.text() + "\n")
        return e.status
    except KeyboardInterrupt:
        sys.stderr.write("\ncugrade: interrupted.\n")
        return EXIT_INTERRUPTED


# ------------------------------------------------------------------ IPython

class NotebookProgress:
    """The live part in a notebook: one display, updated in place."""

    def __init__(self, page):
        from IPython.display import HTML, display
        self.HTML = HTML
        self.page = page
        self.start = time.monotonic()
        self.handle = display(HTML('<div class="cugrade-live">Submitting...</div>'),
                              display_id=True)

    def show(self, markup):
        self.handle.update(self.HTML(markup))

    def update(self, sub):
        self.show(render_progress_html(sub, self.page, time.monotonic() - self.start))

    def note(self, text):
        from IPython.display import display
        display(self.HTML('<p class="cugrade-note" style="color:#5a6470">%s</p>' % esc(text)))

    def finish(self, sub):
        self.show(render_html(sub, self.page))


def rich_display(shell):
    """True where display() of HTML is rendered (a Jupyter kernel, a
    capture); False in a terminal IPython, whose base DisplayPublisher
    prints text/plain only."""
    try:
        from IPython.core.displaypub import DisplayPublisher
    except ImportError:
        return False
    return shell is not None and type(shell.display_pub) is not DisplayPublisher


def magic_parser():
    p = _Parser(prog="%%cugrade submit", add_help=False)
    p.add_argument("lab")
    p.add_argument("--lang", choices=("cu", "py"),
                   help="the cell's language (default: sniffed from the code)")
    p.add_argument("--name", help="the file name the server sees (default: cell.cu / cell.py)")
    p.add_argument("--no-watch", action="store_true", help="submit and return at once")
    p.add_argument("--text", action="store_true", help="plain text instead of HTML")
    p.add_argument("--interval", type=float, default=None)
    p.add_argument("--retry", type=float, default=60.0)
    p.add_argument("--profile-wait", type=float, default=PROFILE_WAIT_S)
    return p


def magic_submit(shell, argv, cell):
    """%%cugrade submit LAB [--lang cu|py] [--name F] [--no-watch] [--text]:
    submit the cell's body; render progress and the result inline. Returns
    the final submission object (None on failure, shown as a message)."""
    rich = rich_display(shell)
    try:
        a = magic_parser().parse_args(argv)
        rich = rich and not a.text
        lang = a.lang or sniff_lang(cell)
        if not a.name and not lang:
            raise CugradeError("cugrade: cannot tell whether this cell is CUDA C or Python.",
                               "Add --lang cu or --lang py to the %%cugrade line.")
        name = a.name or "cell." + lang
        c = client_from_settings()
        acc = c.submit(a.lab, name, cell.encode("utf-8"))
        sid = acc["id"]
        page = c.page(sid)
        if a.no_watch:
            msg = "Submitted %s to %s: submission #%s. Follow it at %s" % (name, a.lab, sid, page)
            _magic_show(rich, '<p>%s</p>' % esc(msg), msg)
            return c.submission(sid)
        show = NotebookProgress(page) if rich else TermProgress(sys.stdout, tty=False)
        if not rich:
            print("Submitted %s to %s: submission #%s." % (_clean(name), _clean(a.lab), sid))
        if acc.get("superseded"):
            show.note("It replaces your earlier submission that was still queued.")
        sub = watch(c, sid, show, interval=a.interval, retry_s=a.retry,
                    profile_wait=a.profile_wait)
        if not rich:
            sys.stdout.write(render_text(sub, page))
        return sub
    except CugradeError as e:
        _magic_show(rich, render_error_html(e), e.text(), stream=sys.stderr)
        return None
    except KeyboardInterrupt:
        _magic_show(rich, "<p>Stopped watching; the submission keeps its place.</p>",
                    "Stopped watching; the submission keeps its place.")
        return None


def magic_test(shell, argv, cell):
    """%%cugrade test LAB [--lang cu|py] [--sim] [--cases a,b]: the cell's
    body, saved as cell.cu / cell.py in a temporary folder, through
    `cugrade test`; its table is shown below the cell. Returns local.py's
    exit status (None when it could not start)."""
    import tempfile
    p = _Parser(prog="%%cugrade test", add_help=False)
    p.add_argument("lab")
    p.add_argument("--lang", choices=("cu", "py"))
    p.add_argument("--sim", action="store_true")
    p.add_argument("--cases")
    rich = rich_display(shell)
    try:
        a = p.parse_args(argv)
        lang = a.lang or sniff_lang(cell)
        if not lang:
            raise CugradeError("cugrade: cannot tell whether this cell is CUDA C or Python.",
                               "Add --lang cu or --lang py to the %%cugrade line.")
        c = client_from_settings()
        notes = []
        version_check(c, stream=sys.stderr)
        bundle = bundle_fetch(c, a.lab, note=notes.append)
        tmp = tempfile.mkdtemp(prefix="cugrade-cell-")
        try:
            path = os.path.join(tmp, "cell." + lang)
            with open(path, "w", encoding="utf-8") as f:
                f.write(cell)
            rc, out = local_run(local_argv(bundle, a.lab, path, a.sim, a.cases), capture=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        text = "\n".join(notes + [out.rstrip()])
        _magic_show(rich, '<pre class="cugrade-test">%s</pre>' % esc(text), text)
        return rc
    except CugradeError as e:
        _magic_show(rich, render_error_html(e), e.text(), stream=sys.stderr)
        return None


def _magic_show(rich, markup, text, stream=None):
    if rich:
        from IPython.display import HTML, display
        display(HTML(markup))
    else:
        (stream or sys.stdout).write(text + "\n")


def magic_line(shell, line):
    """%cugrade login|labs|list|show ID|scoreboard LAB: the CLI's commands;
    `show ID` renders the result as HTML in a notebook."""
    argv = shlex.split(line)
    try:
        if argv[:1] == ["show"] and len(argv) == 2 and rich_display(shell):
            c = client_from_settings()
            sub = c.submission(int(argv[1]) if argv[1].isdigit() else -1)
            _magic_show(True, render_html(sub, c.page(sub["id"])) if is_final(sub)
                        else render_progress_html(sub, c.page(sub["id"])), "")
            return None
        args = build_parser("%cugrade").parse_args(argv)
        if not getattr(args, "fn", None):
            raise CugradeError("cugrade: say what to do.",
                               "Use %cugrade login | labs | list | show ID | scoreboard LAB, "
                               "or %%cugrade submit LAB as a cell magic.")
        if args.cmd == "login":
            args.interactive = True     # a kernel's stdin is no TTY, but it can prompt
        args.fn(args)
    except CugradeError as e:
        _magic_show(rich_display(shell), render_error_html(e), e.text(), stream=sys.stderr)
    except SystemExit:              # --help, --version
        pass
    return None


last = None     # the final submission object of the last %%cugrade submit


def load_ipython_extension(ipython):
    """%load_ext cugrade: registers %cugrade (line) and %%cugrade (cell)."""

    def cugrade(line, cell=None):
        if cell is None:
            return magic_line(ipython, line)
        argv = shlex.split(line)
        if argv[:1] == ["test"]:
            magic_test(ipython, argv[1:], cell)
            return None
        if argv[:1] != ["submit"]:
            msg = CugradeError("cugrade: the cell magic is %%cugrade submit LAB or %%cugrade "
                               "test LAB [--lang cu|py].",
                               "Put the line `%%cugrade submit LAB` (graded) or `%%cugrade test "
                               "LAB` (local, public cases) first in the cell.")
            _magic_show(rich_display(ipython), render_error_html(msg), msg.text(),
                        stream=sys.stderr)
            return None
        global last
        last = magic_submit(ipython, argv[1:], cell)
        return None

    ipython.register_magic_function(cugrade, magic_kind="line_cell", magic_name="cugrade")


if __name__ == "__main__":
    sys.exit(main())
