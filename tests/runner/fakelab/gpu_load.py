"""The fake GPU lane of tests/runner/timing_load.t and timing_hang.t: the
fake lab laid out with room for the share clock to stretch (run_seconds
30), a correct and a hanging source, and the GPU's users ledger
(CACHE/gpu-0.active) filled with the lines of n live processes, as n other
jobs' check runs would."""
import json, os, subprocess, tempfile

from suite import grade_fakelab  # a starved compile retried
import tree  # the fake lab laid out as a course tree

SOURCES = {
    "good.cu": 'extern "C" void fill(float* o, int n) { for (int i = 0; i < n; i++) o[i] = 2.0f * i; }\n',
    # Correct in the check run (two calls), hangs from the third call on:
    # in the timing run's samples, after the gate.
    "hang_timed.cu": 'static int calls;\nextern "C" void fill(float* o, int n) { if (++calls > 2) { volatile int x = 1; while (x) { } }'
                     ' for (int i = 0; i < n; i++) o[i] = 2.0f * i; }\n',
}
PLAIN = "0123456789abcdef0123456789abcdef"


class Lane:
    def __init__(self, prefix):
        self.tmp = tempfile.mkdtemp(prefix=prefix)
        os.chmod(self.tmp, 0o755)
        # run_seconds, the ceiling: room for the share clock to stretch
        self.root = tree.lay_out(os.path.join(self.tmp, "root"), limits={"run_seconds": 30})
        self.cache = os.path.join(self.tmp, "cache")
        os.makedirs(self.cache)

    def grade(self, name, seed):
        """(result document, runner log, wall seconds) of one grade."""
        return grade_fakelab(self.tmp, self.root, self.cache, name, SOURCES[name], seed)

    def built(self, ok):
        """First, alone and quick: a correct file graded, so that the lab is
        built and its naive limit measured (checked with ok)."""
        d, log, _ = self.grade("good.cu", PLAIN)
        ok(d["status"] == "graded", "a correct file is graded (the lab built, its limits measured)",
           summary(d, log))

    def grade_beside(self, n, name, seed):
        """grade(name, seed) with n other jobs' lines in the users ledger."""
        procs = [subprocess.Popen(["sleep", "600"]) for _ in range(n)]
        ledger = os.path.join(self.cache, "gpu-0.active")
        with open(ledger, "w") as f:
            f.writelines(f"{p.pid} {i + 1} 0\n" for i, p in enumerate(procs))
        try:
            return self.grade(name, seed)
        finally:
            for p in procs:
                p.kill()
                p.wait()
            open(ledger, "w").close()

    def remove(self):
        subprocess.run(["rm", "-rf", self.tmp])


def phases(d):
    return (d.get("result", {}).get("cugrade") or {}).get("phases") or {}


def timing(d):
    return (d.get("result", {}).get("cugrade") or {}).get("timing") or {}


def summary(d, log):
    r = d.get("result", {})
    return json.dumps({"status": d.get("status"), "message": r.get("status_message") or r.get("message"),
                       "phases": (r.get("cugrade") or {}).get("phases")}) + "\n" + log
