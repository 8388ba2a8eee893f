#!/usr/bin/env python3
"""nvcc behind a content-addressed cache, for the suites' compiles outside
the runner: the fake lab's build under the runner suites
(tests/runner/fakelab/build-lab.sh), which several suites build at once
with the same command (the first to reach a file compiles it, the others
wait for it and find it), and the test solutions' objects under
client/local_test.t (the client's verdict on each). A hit is a result nvcc gave on the same inputs in this cache
(below), so "it compiles, with these warnings" means the same from a hit;
a failed compile is never stored, so a file that must fail always runs the
real nvcc. The runner's sandboxed compile of a student's file never comes
here (it runs $CUDA_HOME/bin/nvcc inside the sandbox). A link alone (no
source) is not cached. tests/labs/nvcc_cache.t checks the rules below.

    NVCC=tests/tools/nvcc_cached.py sh labs/build-lab.sh ...

tests/run.sh exports CUGRADE_TEST_NVCC (this file) and
CUGRADE_TEST_NVCC_CACHE ($BUILD/nvcc-cache): the suites pass the first as
NVCC to the builds they only need.

A hit is sound the way ccache's direct mode is: the key is the real nvcc and
the host compiler (path, size, mtime), the environment they read and the
command line (the output's path left out: identity()); an entry holds the
content hash of every file the compile read (nvcc -MD: the sources and every
header, the toolkit's too; a relative one as named, from the working
directory), and is taken only when all of them are unchanged. nvcc's outputs
are not reproducible byte for byte anyway (its temporary files' names, with
its pid, are in every object), so a stored object is one nvcc could have
written. Only successful compiles are stored, with their stdout and stderr,
replayed on a hit. A command it does not understand (no single -o, an option
outside the few the builds use) runs the real nvcc unchanged. Identical
compiles at once wait for the first (a lock per key).
Environment: CUGRADE_TEST_NVCC_REAL (default /usr/local/cuda/bin/nvcc),
CUGRADE_TEST_NVCC_CACHE (the folder; unset: no cache, the real nvcc)."""
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

REAL = os.environ.get("CUGRADE_TEST_NVCC_REAL") or "/usr/local/cuda/bin/nvcc"
CACHE = os.environ.get("CUGRADE_TEST_NVCC_CACHE") or ""
# Options that take the next argument; options matched whole or by prefix
# that need no special care. Anything else: not cached.
WITH_ARG = {"-o", "-Xcompiler", "-Xlinker", "-I", "-x", "-cudart", "-L", "-l", "-D"}
PLAIN = {"-c", "-lineinfo", "-shared", "-g", "-G", "-m64", "-w", "--use_fast_math",
         "-Werror", "--expt-relaxed-constexpr"}
PREFIX = ("-O", "-arch=", "-std=", "-I", "-L", "-l", "-D", "-rdc=", "-code=", "-gencode=")


def real():
    os.execv(REAL, [REAL] + sys.argv[1:])


def parse(args):
    """(output path, the command with the output left out, input files),
    or None when the command is not one this cache understands."""
    out, rest, inputs, i = None, [], [], 0
    while i < len(args):
        a = args[i]
        if a in WITH_ARG:
            if i + 1 >= len(args):
                return None
            if a == "-o":
                if out is not None:
                    return None
                out = args[i + 1]
            else:
                rest += [a, args[i + 1]]
            i += 2
            continue
        if a.startswith("-"):
            if a not in PLAIN and not a.startswith(PREFIX):
                return None
        elif os.path.isfile(a):
            inputs.append(a)
        else:
            return None
        rest.append(a)
        i += 1
    # A link alone (objects in, no source) is cheap and reads libraries
    # this cache does not follow: not cached.
    if not out or not any(not p.endswith((".o", ".a", ".so")) for p in inputs):
        return None
    return out, rest, inputs


def identity(rest):
    """What a compile's output depends on besides the files it reads: the
    real nvcc and the host compiler it finds on PATH (path, size, mtime),
    the environment nvcc and gcc read, the command. Not the working
    directory: a relative source is named as given in the object, and the
    files it resolves to are hashed (deps); with -g/-G (the debug info
    names the directory) it is part of the key."""
    tools = []
    for t in (REAL, shutil.which("gcc") or "", shutil.which("g++") or ""):
        try:
            st = os.stat(t)
            tools.append([os.path.realpath(t), st.st_size, st.st_mtime_ns])
        except OSError:
            tools.append([t])
    env = [[k, os.environ.get(k)] for k in ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN",
                                            "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH")]
    cwd = os.getcwd() if {"-g", "-G"} & set(rest) else ""
    return [tools, env, cwd, rest]


def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def deps_of(depfile):
    """The files a make rule (nvcc -MD's) lists after its colon."""
    with open(depfile) as f:
        text = f.read().replace("\\\n", " ")
    files = []
    for line in text.splitlines():
        if ":" not in line:
            continue
        body = line.split(":", 1)[1].replace("\\ ", "\0")
        files += [p.replace("\0", " ") for p in body.split()]
    return files


def hit(entries, out):
    """Copy the newest stored output whose inputs are all unchanged to out and
    replay its stdout and stderr; False when none matches."""
    for e in reversed(entries):  # the newest first
        try:
            if all(sha(p) == h for p, h in e["deps"].items()):
                tmp = "%s.%d.tmp" % (out, os.getpid())
                shutil.copy2(os.path.join(CACHE, e["object"]), tmp)
                os.replace(tmp, out)
                sys.stdout.buffer.write(e["stdout"].encode("latin-1"))
                sys.stderr.buffer.write(e["stderr"].encode("latin-1"))
                return True
        except OSError:
            continue
    return False


def main():
    parsed = parse(sys.argv[1:]) if CACHE else None
    if parsed is None:
        real()
    out, rest, inputs = parsed
    key = hashlib.sha256(json.dumps(identity(rest)).encode()).hexdigest()
    os.makedirs(CACHE, exist_ok=True)
    manifest = os.path.join(CACHE, key + ".json")
    with open(os.path.join(CACHE, key + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(manifest) as f:
                entries = json.load(f)
        except (OSError, ValueError):
            entries = []
        if hit(entries, out):
            return 0
        work = tempfile.mkdtemp(prefix="nvcc-cached-", dir=CACHE)
        try:
            dep = os.path.join(work, "deps")
            p = subprocess.run([REAL] + sys.argv[1:] + ["-MD", "-MF", dep], capture_output=True)
            sys.stdout.buffer.write(p.stdout)
            sys.stderr.buffer.write(p.stderr)
            if p.returncode != 0 or not os.path.isfile(out):
                return p.returncode
            files = deps_of(dep) + inputs
            obj = key + "." + sha(out)[:16]
            shutil.copy2(out, os.path.join(CACHE, obj))
            entries.append({"deps": {f: sha(f) for f in files}, "object": obj,
                            "stdout": p.stdout.decode("latin-1"),
                            "stderr": p.stderr.decode("latin-1")})
            tmp = os.path.join(work, "manifest")
            with open(tmp, "w") as f:
                json.dump(entries[-8:], f)
            os.replace(tmp, manifest)
            return 0
        finally:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
