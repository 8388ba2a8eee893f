"""A GPU memory admission ledger watched from outside (runner/gpu/admit.c:
"pid token mb" lines), for the suites that check a job's reservation per
phase (pipeline.t for CUDA, python_gate.t for Python), or that look for
another job's line in it (profile_after.t, time_judge.t)."""
import os
import threading
import time


def live_lines(path):
    """The lines of the ledger at path whose process lives ([] when there
    is no ledger)."""
    out = []
    try:
        for line in open(path).read().split("\n"):
            f = line.split()
            if len(f) == 3:
                try:
                    os.kill(int(f[0]), 0)
                    out.append(line)
                except (ProcessLookupError, ValueError):
                    pass
    except FileNotFoundError:
        pass
    return out


class LedgerWatch:
    """Every distinct MiB the ledger at path holds for one job, in order,
    polled every 5 ms between start() and stop() (a phase shorter than
    that may not be seen)."""

    def __init__(self, path):
        self.path, self.seen = path, []
        self._stop = threading.Event()
        self._th = threading.Thread(target=self._watch)

    def _watch(self):
        while not self._stop.is_set():
            try:
                for line in open(self.path).read().splitlines():
                    mb = int(line.split()[2])
                    if not self.seen or self.seen[-1] != mb:
                        self.seen.append(mb)
            except (OSError, ValueError, IndexError):
                pass
            time.sleep(0.005)

    def start(self):
        self._th.start()
        return self

    def stop(self):
        self._stop.set()
        self._th.join()
        return self.seen
