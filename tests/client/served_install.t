#!/usr/bin/env python3
# The served client installs in a fresh venv and signs in, with nothing but
# the server (issue 28): GET /client/version names the wheel,
# GET /client/cugrade-VERSION-py3-none-any.whl is a wheel built by the
# server from the module it embeds (server/wheel.c: the module byte for
# byte, METADATA matching client/pyproject.toml, the `cugrade` console
# script, RECORD's hashes right, the same bytes on every request, an ETag);
# `python3 -m venv` WITHOUT the system's site-packages + `pip install
# --no-index <served URL>` (no index, no build backend: nothing else is
# downloaded) gives a `cugrade` command that logs in and lists the
# student's submission, which needs the token; /help shows the pip line.
# The single file works the same way: fetched from the server (what
# `curl -O` does) and run with the venv's python.
import base64
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client_test import Tap, require_binary, open_server, Cli, CLIENT, CLIENT_DIR  # noqa: E402

DEBIAN_PY = "/usr/bin/python3"


def pyproject():
    text = open(os.path.join(CLIENT_DIR, "pyproject.toml")).read()
    name = re.search(r'^name = "([^"]+)"', text, re.M).group(1)
    ver = re.search(r'^version = "([^"]+)"', text, re.M).group(1)
    script = re.search(r'^cugrade = "([^"]+)"', text, re.M).group(1)
    return name, ver, script


def check_wheel(t, s):
    module = open(CLIENT, "rb").read()
    ver = re.search(rb'\n__version__ = "([^"]+)"', module).group(1).decode()
    name = "cugrade-%s-py3-none-any.whl" % ver
    j = s.get("/client/version").json() or {}
    t.eq(j.get("wheel"), "%s/client/%s" % (s.url, name), "/client/version names the wheel's URL")
    r = s.get("/client/" + name)
    t.ok(r.status == 200 and r.header("Content-Type") == "application/zip" and
         r.header("X-Cugrade-Client-Version") == ver, "GET /client/%s without a token" % name,
         r.brief())
    again = s.get("/client/" + name)
    t.ok(again.body == r.body, "...the same bytes on the next request")
    t.status(s.get("/client/" + name, headers={"If-None-Match": r.header("ETag") or "x"}), 304,
             "...and 304 for its ETag")
    t.status(s.get("/client/cugrade-0.0.1-py3-none-any.whl"), 404, "another version's name: 404")
    try:
        z = zipfile.ZipFile(io.BytesIO(r.body))
        bad = z.testzip()
    except zipfile.BadZipFile as e:
        t.ok(False, "the wheel is a zip", str(e))
        return None
    t.ok(bad is None, "the wheel is a zip whose CRCs check out")
    info = "cugrade-%s.dist-info/" % ver
    t.eq(sorted(z.namelist()), sorted(["cugrade.py"] + [info + n for n in (
        "METADATA", "WHEEL", "entry_points.txt", "RECORD")]), "the wheel's files")
    t.ok(z.read("cugrade.py") == module, "its cugrade.py is client/cugrade.py byte for byte")
    meta = z.read(info + "METADATA").decode()
    pname, pver, script = pyproject()
    t.ok("\nName: %s\n" % pname in meta and "\nVersion: %s\n" % pver in meta and pver == ver,
         "METADATA's name and version are pyproject.toml's (and the module's)", meta)
    t.ok("cugrade = %s" % script in z.read(info + "entry_points.txt").decode(),
         "the console script is pyproject.toml's")
    t.ok("Tag: py3-none-any" in z.read(info + "WHEEL").decode(), "WHEEL: py3-none-any")
    good = True
    listed = []
    for line in z.read(info + "RECORD").decode().splitlines():
        path, digest, size = line.split(",")
        listed.append(path)
        if path == info + "RECORD":
            continue
        data = z.read(path)
        want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode().rstrip("=")
        good = good and digest == want and int(size) == len(data)
    # Every file of the wheel listed once: a RECORD that left a file out
    # (an empty one most of all) had no hash to get wrong.
    t.ok(good and sorted(listed) == sorted(z.namelist()),
         "RECORD lists every file of the wheel once, its hash and size right", listed)
    body = s.get("/help", token="alice_q7").body.decode("utf-8", "replace")
    t.ok("pip install %s/client/%s" % (s.url, name) in body, "/help shows the pip install line")
    return j.get("wheel")


def no_network_env(venv, home):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("CUGRADE_") and k.lower() not in ("http_proxy", "https_proxy")}
    env.update(HOME=home, XDG_CONFIG_HOME=os.path.join(home, "xdg"), PIP_NO_INDEX="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_CACHE_DIR="1", NO_PROXY="*",
               no_proxy="*", PATH=os.path.join(venv, "bin") + ":" + os.environ.get("PATH", ""),
               PYTHONDONTWRITEBYTECODE="1")
    return env


def main(t):
    s = open_server(t)
    url = check_wheel(t, s)
    tmp = tempfile.mkdtemp(prefix="cugrade-served-")
    try:
        venv = os.path.join(tmp, "venv")
        r = subprocess.run([DEBIAN_PY, "-m", "venv", venv], capture_output=True, text=True)
        t.eq(r.returncode, 0, "python3 -m venv (a fresh venv, no system site-packages)", r.stderr)
        py = os.path.join(venv, "bin", "python")
        home = os.path.join(tmp, "home")
        os.makedirs(home)
        env = no_network_env(venv, home)
        r = subprocess.run([py, "-m", "pip", "install", "--no-index", url or "missing"],
                           capture_output=True, text=True, timeout=300, env=env, cwd=home)
        t.eq(r.returncode, 0, "pip install --no-index <the served wheel's URL>",
             r.stdout[-1500:] + r.stderr[-1500:])
        exe = os.path.join(venv, "bin", "cugrade")
        r = subprocess.run([exe, "login", "--server", s.url, "--token-stdin"],
                           input=s.tok["bob_z3"] + "\n", capture_output=True, text=True, env=env,
                           cwd=home, timeout=60)
        t.ok(r.returncode == 0 and "as bob_z3" in r.stdout, "the installed `cugrade` logs in",
             r.stdout + r.stderr)
        s.submit("open", b"__global__ void k() {}\n", token="bob_z3")
        r = subprocess.run([exe, "list"], capture_output=True, text=True, env=env, cwd=home,
                           timeout=60)
        t.ok(r.returncode == 0 and " open " in r.stdout and "queued" in r.stdout,
             "...and `cugrade list` (needs the token) shows bob's queued submission",
             r.stdout + r.stderr)

        one = os.path.join(tmp, "one")
        os.makedirs(one)
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
                s.url + "/client/cugrade.py") as f, open(os.path.join(one, "cugrade.py"), "wb") as o:
            o.write(f.read())
        cli = Cli(python=py)
        r = subprocess.run([py, "cugrade.py", "login", "--server", s.url, "--token-stdin"],
                           input=s.tok["bob_z3"] + "\n", capture_output=True, text=True,
                           env=cli.env, cwd=one, timeout=60)
        t.ok(r.returncode == 0 and "as bob_z3" in r.stdout,
             "the served single file (curl -O) logs in with the venv's python",
             r.stdout + r.stderr)
        r = subprocess.run([py, "cugrade.py", "list"], capture_output=True, text=True,
                           env=cli.env, cwd=one, timeout=60)
        t.ok(r.returncode == 0 and " open " in r.stdout, "...and lists", r.stdout + r.stderr)
        cli.cleanup()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


t = Tap()
require_binary(t)
t.run(main)
t.exit()
