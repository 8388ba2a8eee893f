#!/usr/bin/env python3
"""CI (no GPU): the course labs' declared device memory (lab.json
limits.device_mb and limits.timing_device_mb, runner/gpu/admit.h) covers what
their harnesses allocate: every case's buffers (labs/<lab>/harness.cu's
hc_alloc calls, computed here from the case's params) plus the guard words
fit in device_mb, and the timing case's plus the L2 flush buffer
(harness_common.cu: twice the L2, 120 MiB on an H200) fit in
timing_device_mb, which the runner keeps after the check run, and the
sanitize case's in sanitize_device_mb, which a job keeps while only its
sanitizers run. An undeclared timing_device_mb or sanitize_device_mb
means device_mb. Prints TAP lines."""
import collections, json, os, re, sys

ROOT = os.environ.get("CUGRADE_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
MiB = 1 << 20
GUARD = 1 * MiB     # generous: HC_GUARD_BYTES per buffer is far less
FLUSH = 128 * MiB   # 2 x the biggest L2 of the course's GPUs (H200: 60 MiB)

# The bytes each lab's harness.cu allocates for one case (its hc_alloc calls).
BUFFERS = {
    "reduction": lambda p: [p["n"] * 4, 4],
    "matmul": lambda p: [p["M"] * p["K"] * 4, p["K"] * p["N"] * 4, p["M"] * p["N"] * 4],
    "embedding": lambda p: [p["vocab"] * p["dim"] * 4, p["num_indices"] * 8,
                            p["num_indices"] * p["dim"] * 4],
}
n, failed = 0, 0


def ok(cond, name, detail=""):
    global n, failed
    n += 1
    print(("ok" if cond else "not ok") + f" {n} - {name}")
    if not cond:
        failed += 1
        print(f"#   {detail}")


for lab, bufs in BUFFERS.items():
    d = json.load(open(os.path.join(ROOT, "labs", lab, "lab.json")))
    # BUFFERS is this file's copy of the harness's allocations: held to the
    # harness's own hc_alloc calls, or a buffer added there would be
    # covered by no limit and no check here would notice.
    with open(os.path.join(ROOT, "labs", lab, "harness.cu")) as f:
        calls = re.findall(r"\bhc_alloc\s*\(", re.sub(r"//[^\n]*|/\*.*?\*/", "", f.read(), flags=re.S))
    want = len(bufs(collections.defaultdict(int)))
    ok(len(calls) == want, f"{lab}: harness.cu makes the {want} hc_alloc calls counted here "
       f"({len(calls)})", f"{len(calls)} hc_alloc calls in labs/{lab}/harness.cu, {want} in BUFFERS")
    lim = d["limits"]
    dev = lim.get("device_mb", 0) * MiB
    tdev = lim.get("timing_device_mb", lim.get("device_mb", 0)) * MiB
    sizes = {}
    for c in d["cases"]:
        try:
            b = bufs(c["params"])
        except KeyError as e:
            ok(False, f"{lab}: case {c['name']} has the params its harness reads", repr(e))
            continue
        sizes[c["name"]] = sum(b) + GUARD * len(b)
    if not sizes:
        continue
    big = max(sizes, key=sizes.get)
    ok(sizes[big] <= dev, f"{lab}: device_mb {dev // MiB} covers its biggest case {big} "
       f"({sizes[big] / MiB:.0f} MiB with guards)", f"{sizes[big] / MiB:.0f} > {dev // MiB}")
    tc = d.get("timing_case")
    ok(tc in sizes and sizes[tc] + FLUSH <= tdev <= dev,
       f"{lab}: timing_device_mb {tdev // MiB} covers the timing case {tc} "
       f"({sizes.get(tc, 0) / MiB:.0f} MiB) and the L2 flush buffer, within device_mb",
       f"timing case {sizes.get(tc, 0) / MiB:.0f} + {FLUSH // MiB} vs {tdev // MiB} (device_mb {dev // MiB})")

    sc = d.get("sanitize_case")
    sdev = lim.get("sanitize_device_mb", lim.get("device_mb", 0)) * MiB
    ok(sc in sizes and sizes[sc] <= sdev <= dev,
       f"{lab}: sanitize_device_mb {sdev // MiB} covers the sanitize case {sc} "
       f"({sizes.get(sc, 0) / MiB:.1f} MiB), within device_mb",
       f"sanitize case {sizes.get(sc, 0) / MiB:.1f} vs {sdev // MiB} (device_mb {dev // MiB})")

print(f"1..{n}")
sys.exit(1 if failed else 0)
