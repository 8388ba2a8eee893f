"""client_test - shared helpers for the student client's tests (tests/client/*.t).

Reuses tests/server/cugrade_test.py (Tap, Server: the real cugrade-server on a
free port) and tests/tools/fake_runner.py, and adds:

  open_server(t, labs)  a Server with the fixture lab "open": vadd with every
                        case visible, so a student sees the "k/N" case count
  Cli(server)           runs client/cugrade.py as a student would, with its own
                        HOME and XDG_CONFIG_HOME (the config file lives there)
  Lines(proc)           reads a child's stdout line by line, with a deadline,
                        so a test can wait for "the CLI showed phase X" before
                        the fake runner moves on (events, not wall-clock windows)

Python 3 stdlib only.
"""

import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
from cugrade_test import Tap, Server, require_binary, kernel, ROOT  # noqa: E402,F401
from fake_runner import canned_result  # noqa: E402,F401

CLIENT_DIR = os.path.join(ROOT, "client")
CLIENT = os.path.join(CLIENT_DIR, "cugrade.py")
sys.dont_write_bytecode = True


def open_server(t, labs=("vadd",)):
    """A started Server with the fixture labs plus "open" (vadd, both cases
    visible) and the default users."""
    s = Server(labs=list(labs), tap=t, start=False)
    src = os.path.join(s.labs_dir, "vadd") if "vadd" in labs else None
    if src is None:
        raise ValueError("open_server needs the vadd fixture")
    dst = os.path.join(s.labs_dir, "open")
    shutil.copytree(src, dst)
    with open(os.path.join(dst, "lab.json")) as f:
        lab = json.load(f)
    lab["lab"], lab["title"] = "open", "Vector add (every case visible)"
    with open(os.path.join(dst, "lab.json"), "w") as f:
        json.dump(lab, f)
    with open(os.path.join(s.rubrics_dir, "vadd.json")) as f:
        rub = json.load(f)
    rub["lab"] = "open"
    for c in rub["correctness"]:
        c["visibility"] = "visible"
    with open(os.path.join(s.rubrics_dir, "open.json"), "w") as f:
        json.dump(rub, f)
    s.init()
    s.start()
    s.add_users(s.DEFAULT_USERS)
    return s


class Cli:
    """client/cugrade.py as a student runs it: its own HOME and config dir."""

    def __init__(self, python=None):
        self.home = tempfile.mkdtemp(prefix="cugrade-client-home-")
        self.xdg = os.path.join(self.home, "xdg")
        self.python = python or sys.executable
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("CUGRADE_")}
        self.env.update(HOME=self.home, XDG_CONFIG_HOME=self.xdg, PYTHONDONTWRITEBYTECODE="1",
                        LC_ALL="C.UTF-8", COLUMNS="100")
        self.config = os.path.join(self.xdg, "cugrade", "config.json")

    def argv(self, *args):
        return [self.python, CLIENT] + [str(a) for a in args]

    def run(self, *args, stdin="", timeout=60, env=None):
        """CompletedProcess (text) of `cugrade ARGS` with stdin given."""
        e = dict(self.env)
        e.update(env or {})
        return subprocess.run(self.argv(*args), input=stdin, capture_output=True, text=True,
                              timeout=timeout, env=e, cwd=self.home)

    def popen(self, *args, env=None):
        e = dict(self.env)
        e.update(env or {})
        return subprocess.Popen(self.argv(*args), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=e, cwd=self.home)

    def login(self, server, who):
        return self.run("login", "--server", server.url, "--token-stdin",
                        stdin=server.tok.get(who, who) + "\n")

    def cleanup(self):
        shutil.rmtree(self.home, ignore_errors=True)


class Lines:
    """A child's stdout read by a thread; wait(pred) returns the first new
    line for which pred(line) is true, or None after timeout seconds."""

    def __init__(self, stream):
        self.q = queue.Queue()
        self.seen = []
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream):
        for line in iter(stream.readline, ""):
            self.q.put(line)
        self.q.put(None)

    def wait(self, pred, timeout=30):
        import time
        deadline = time.time() + timeout
        while True:
            left = deadline - time.time()
            if left <= 0:
                return None
            try:
                line = self.q.get(timeout=left)
            except queue.Empty:
                return None
            if line is None:
                self.q.put(None)
                return None
            self.seen.append(line)
            if pred(line):
                return line

    def rest(self, timeout=30):
        """Every line until EOF."""
        while self.wait(lambda line: False, timeout) is not None:
            pass
        return "".join(self.seen)
