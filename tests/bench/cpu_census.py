#!/usr/bin/env python3
"""Where a host's CPU goes, by kind of process (a benchmark's instrument:
prints a table, asserts nothing). Every INTERVAL seconds it reads
/proc/PID/stat of every process, adds each one's CPU ticks since the last
look to its kind, and names the kind from the command line: a Python
check run's owner, a timing run's owner, a warm pool member's, a
sanitizer's tool, the compiler, the runner, the server... A process with
no kind of its own (the student's tenant, Python under compute-sanitizer,
bwrap's init) takes its parent's. A process that lives less than one
interval is missed, and a process's CPU in its last interval too: the
table's total says how much of the host's busy time it saw.

deadline_bench.py runs one beside its burst; alone:

    python3 tests/bench/cpu_census.py SECONDS
"""
import os, sys, threading, time

TICK = os.sysconf("SC_CLK_TCK")
INTERVAL = 0.25
TOP = 15

# (substring of the command line, kind), first match wins.
RULES = [
    ("compute-sanitizer", None),     # by its --tool below
    ("/ncu", "profile (ncu)"),
    ("owner.py", None),              # by its mode below
    ("/lab.py", None),               # a lab's own owner (the profiling lab), by its mode
    ("cugrade-runner", "runner"),
    ("cugrade-server", "server"),
    ("deadline_bench", "bench"),
    ("alone_bench", "bench"),
    ("judge", "judge"),
]
# Kinds whose children with no kind of their own are named by their own
# command ("other: NAME"), not counted as the runner's or bwrap's.
INFRA = ("runner", "runner's fork (a run's reaper)", "sandbox set-up (bwrap)")
COMPILERS = ("nvcc", "cicc", "ptxas", "cudafe++", "fatbinary", "nvlink", "cc1plus", "cc1", "gcc",
             "g++", "ld", "as", "collect2")


def own_kind(argv):
    """The kind a command line names, or None (its parent's)."""
    line = " ".join(argv)
    base = os.path.basename(argv[0]) if argv else ""
    if base in COMPILERS:
        return "compile"
    if base == "bwrap":
        return "sandbox set-up (bwrap)"
    if len(argv) > 1 and argv[0] in ("/work/prog", "/lab/prog"):
        # the student's CUDA program (a check or timing run), or a
        # reference's (a baseline, the naive limit's measure)
        return "cuda %s%s" % (argv[1], "" if argv[0] == "/work/prog" else " (reference)")
    for sub, kind in RULES:
        if sub not in line:
            continue
        if sub == "compute-sanitizer":
            if "--tool" in argv[:-1]:
                return "sanitizer " + argv[argv.index("--tool") + 1]
            if os.path.basename(argv[0]) == "compute-sanitizer":
                return "sanitizer memcheck"   # the tool's default
            # One of the tool's own helpers (a path under compute-sanitizer/,
            # no --tool of its own): its parent's run. Named memcheck, it
            # took every racecheck run's target as memcheck's (a Python
            # burst of 100 counted 451 memcheck processes and 76 racecheck).
            return None
        if sub in ("owner.py", "/lab.py"):
            # the script as an argument of its own (a shell line that only
            # mentions it, such as a bench's sampler, is not one)
            hits = [k for k, a in enumerate(argv) if a.endswith(sub.lstrip("/"))]
            if not hits:
                continue
            i = hits[0]
            mode = argv[i + 2] if len(argv) > i + 2 else "?"
            own = " (the lab's own owner)" if sub == "/lab.py" else ""
            return "python %s%s%s" % (mode, " (pool)" if "--pool" in argv else "", own)
        return kind
    return None


def read_stat(pid):
    """(ppid, start ticks, cpu ticks, nice) of pid, or None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            s = f.read().decode("ascii", "replace")
    except OSError:
        return None
    rest = s[s.rfind(")") + 2:].split()   # after "pid (comm) "
    return int(rest[1]), int(rest[19]), int(rest[11]) + int(rest[12]), int(rest[16])


def read_argv(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


class Census:
    def __init__(self, interval=INTERVAL):
        self.interval = interval
        self.seen = {}      # (pid, start) -> [kind, CPU ticks at the last look, argv, ticks counted]
        self.bypid = {}     # pid -> its latest (pid, start)
        self.ticks = {}     # kind -> ticks
        self.procs = {}     # kind -> processes seen
        self.niced = {}     # kind -> {nice (not 0): ticks spent at it}
        self.host0 = self.host1 = None
        self.stop_ev = threading.Event()
        self.thread = None

    def look(self):
        first = self.host0 is None
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            pid = int(name)
            st = read_stat(pid)
            if st is None:
                continue
            ppid, start, cpu, nice = st
            key = (pid, start)
            rec = self.seen.get(key)
            if rec is None:
                # First seen now: its kind is its own or its parent's (a
                # parent is seen first: lower pid, or an earlier look);
                # its CPU so far counts, unless it ran before the census.
                argv = read_argv(pid)
                kind = self.kind_of(argv, ppid)
                rec = self.seen[key] = [kind, cpu if first else 0, " ".join(argv)[:160], 0]
                self.bypid[pid] = key
                if not first:
                    self.procs[kind] = self.procs.get(kind, 0) + 1
            elif rec[0] in INFRA:
                # A fork of the runner's seen before its exec (a judge, a
                # probe): named again once its command line changed.
                argv = read_argv(pid)
                line = " ".join(argv)[:160]
                if argv and line != rec[2]:
                    rec[0], rec[2] = self.kind_of(argv, ppid), line
            delta, rec[1] = cpu - rec[1], cpu
            if delta > 0:
                self.ticks[rec[0]] = self.ticks.get(rec[0], 0) + delta
                rec[3] += delta
                if nice:  # the nice seen now, for the whole interval
                    at = self.niced.setdefault(rec[0], {})
                    at[nice] = at.get(nice, 0) + delta

    def kind_of(self, argv, ppid):
        parent = self.seen.get(self.bypid.get(ppid))
        kind = own_kind(argv)
        if kind == "runner" and parent and parent[0] == "runner":
            return "runner's fork (a run's reaper)"
        if kind is None and parent and parent[0] not in INFRA:
            return parent[0]
        if kind is None:
            return "other: " + os.path.basename(argv[0]) if argv else "other"
        return kind

    def run(self):
        while not self.stop_ev.wait(self.interval):
            self.look()

    def start(self):
        self.look()     # what runs already is not counted
        self.host0 = host_busy()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def stop(self):
        self.stop_ev.set()
        if self.thread:
            self.thread.join()
        self.look()
        self.host1 = host_busy()

    def rows(self):
        """(kind, CPU seconds, processes), most CPU first, then the total
        against the host's busy time over the same span."""
        out = [(k, v / TICK, self.procs.get(k, 0)) for k, v in self.ticks.items()]
        out.sort(key=lambda r: -r[1])
        return out

    def table(self):
        rows = self.rows()
        seen = sum(r[1] for r in rows)
        busy = (self.host1 - self.host0) / TICK if self.host0 is not None and self.host1 else 0.0
        lines = ["host CPU by kind of process, s (share of what the census saw; processes; "
                 "of it at a nice other than 0)"]
        for k, s, n in rows:
            at = ", ".join("%.1f at %+d" % (t / TICK, v) for v, t in sorted((self.niced.get(k) or {}).items()))
            lines.append("  %-28s %9.1f  %5.1f%%  %d%s" % (k, s, 100.0 * s / seen if seen else 0.0, n,
                                                         "  (" + at + ")" if at else ""))
        lines.append("  %-28s %9.1f  (the host's busy time: %.1f s)" % ("seen in all", seen, busy))
        lines.append("the %d processes that used the most, s" % TOP)
        top = sorted(self.seen.values(), key=lambda r: -r[3])[:TOP]
        for kind, _, argv, t in top:
            lines.append("  %7.1f  %-24s %s" % (t / TICK, kind[:24], argv))
        return "\n".join(lines)


def host_busy():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v) - v[3] - v[4]


if __name__ == "__main__":
    c = Census()
    c.start()
    time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 10.0)
    c.stop()
    print(c.table())
