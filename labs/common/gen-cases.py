#!/usr/bin/env python3
"""Generate cases.h for a lab's trusted harness, judge and baselines from
labs/<lab>/lab.json, so the cases live in the file an instructor edits and the
compiled programs can never disagree with it.

    python3 labs/common/gen-cases.py labs/matmul/lab.json > OUT/cases.h

Each case becomes {name, timing, {p0, p1, p2, p3}}: the lab's parameters in
the order below (missing ones are an error, extra ones too).
"""
import json
import re
import sys

PARAMS = {
    "reduction": ["n", "signs"],
    "matmul": ["M", "N", "K"],
    "embedding": ["num_indices", "dim", "vocab"],
}
# Upper bounds: what the harness's index types and the channel can carry.
LIMITS = {
    "n": 1 << 34, "signs": 2,
    "M": 1 << 16, "N": 1 << 16, "K": 1 << 16,
    "num_indices": 1 << 31, "dim": 1 << 20, "vocab": 1 << 31,
}
NAME_RE = re.compile(r"^[A-Za-z0-9_+^.\-]{1,64}$")
MAX_OUTPUT_BYTES = 1 << 30   # outputs travel through the channel file


def die(msg):
    sys.stderr.write("gen-cases: %s\n" % msg)
    sys.exit(1)


def main():
    if len(sys.argv) != 2:
        die("usage: gen-cases.py labs/<lab>/lab.json")
    path = sys.argv[1]
    try:
        with open(path) as f:
            lab = json.load(f)
    except (OSError, ValueError) as e:
        die("%s: %s" % (path, e))
    name = lab.get("lab")
    if name not in PARAMS:
        die("%s: unknown lab %r (known: %s)" % (path, name, ", ".join(PARAMS)))
    order = PARAMS[name]
    out = []
    out.append("/* Generated from %s by labs/common/gen-cases.py: do not edit. */" % path)
    out.append("#define LAB_NAME \"%s\"" % name)
    out.append("#define LAB_TIMING_CASE \"%s\"" % lab.get("timing_case", ""))
    out.append("#define LAB_SANITIZE_CASE \"%s\"" % lab.get("sanitize_case", ""))
    out.append("static const struct lab_case_def LAB_CASES[] = {")
    seen = set()
    for i, c in enumerate(lab.get("cases", [])):
        cname = c.get("name", "")
        if not isinstance(cname, str) or not NAME_RE.match(cname) or cname in seen:
            die("%s: cases[%d]: bad or duplicate name %r" % (path, i, cname))
        seen.add(cname)
        params = c.get("params", {})
        extra = set(params) - set(order)
        if extra:
            die("%s: cases[%d] (%s): unknown params %s" % (path, i, cname, sorted(extra)))
        vals = []
        for p in order:
            v = params.get(p)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1 or v > LIMITS[p]:
                die("%s: cases[%d] (%s): params.%s must be an integer in [1, %d]"
                    % (path, i, cname, p, LIMITS[p]))
            vals.append(v)
        if name == "matmul":
            outb = vals[0] * vals[1] * 4
        elif name == "embedding":
            outb = vals[0] * vals[1] * 4
        else:
            outb = 4
        if outb > MAX_OUTPUT_BYTES:
            die("%s: cases[%d] (%s): output of %d bytes is too large for the channel"
                % (path, i, cname, outb))
        vals += [0] * (4 - len(vals))
        out.append("    {\"%s\", %d, {%s}}," % (cname, 1 if c.get("timing") else 0,
                                              ", ".join("%dLL" % v for v in vals)))
    if not seen:
        die("%s: no cases" % path)
    out.append("};")
    out.append("#define LAB_NCASES (sizeof(LAB_CASES) / sizeof(LAB_CASES[0]))")
    print("\n".join(out))


if __name__ == "__main__":
    main()
