#!/usr/bin/env python3
# GET /metrics is valid Prometheus text (exposition format 0.0.4) with the
# queue depth, jobs by state, per-route request counters and latencies, and
# the runners seen; the numbers follow what the test does. It needs an admin
# or runner token (Prometheus sends it as a bearer token).
import os
import re
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, kernel  # noqa: E402

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
SAMPLE = re.compile(r"^(%s)(\{(?:%s)(?:,(?:%s))*,?\}|\{\})?[ ]+(\S+)(?:[ ]+(-?\d+))?$"
                    % (NAME, LABEL, LABEL))
VALUE = re.compile(r"^(?:[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)|"
                   r"[+-]?Inf|NaN)$")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


def parse(text):
    """Validate the text; returns (errors, samples, types).  samples: list of
    (name, {label: value}, float)."""
    errors, samples, types, helps = [], [], {}, set()
    seen_series = set()
    for i, line in enumerate(text.split("\n"), 1):
        if line == "":
            continue
        if line.startswith("#"):
            m = re.match(r"^# (HELP|TYPE) (%s)(?: (.*))?$" % NAME, line)
            if m is None:
                continue                        # a plain comment is allowed
            kind, name, rest = m.group(1), m.group(2), m.group(3) or ""
            if kind == "TYPE":
                if rest not in TYPES:
                    errors.append("line %d: bad TYPE %r" % (i, rest))
                if name in types:
                    errors.append("line %d: second TYPE for %s" % (i, name))
                if any(x[0] == name for x in samples):
                    errors.append("line %d: TYPE for %s after its samples" % (i, name))
                types[name] = rest
            else:
                if name in helps:
                    errors.append("line %d: second HELP for %s" % (i, name))
                helps.add(name)
            continue
        m = SAMPLE.match(line)
        if m is None:
            errors.append("line %d: not a sample: %r" % (i, line[:120]))
            continue
        name, lab, val = m.group(1), m.group(2) or "", m.group(3)
        if not VALUE.match(val):
            errors.append("line %d: bad value %r" % (i, val))
            continue
        labels = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', lab))
        key = (name, tuple(sorted(labels.items())))
        if key in seen_series:
            errors.append("line %d: duplicate series %s%s" % (i, name, lab))
        seen_series.add(key)
        samples.append((name, labels, float(val)))
    if not text.endswith("\n"):
        errors.append("the text does not end with a newline")
    return errors, samples, types


def find(samples, name_re, **labels):
    out = []
    for name, lab, v in samples:
        if re.search(name_re, name) and all(lab.get(k) == v_ for k, v_ in labels.items()):
            out.append((name, lab, v))
    return out


def main(t):
    s = Server(labs=["vadd"], tap=t)
    t.error(s.get("/metrics"), 401, "unauthorized", "GET /metrics without a token")
    t.error(s.get("/metrics", token="alice_q7"), 403, "forbidden", "GET /metrics as a student")
    t.error(s.get("/metrics", token="tina_ta"), 403, "forbidden", "GET /metrics as a TA")
    t.status(s.get("/metrics", token="runner1"), 200, "GET /metrics with a runner token: 200")
    r = s.get("/metrics", token="admin")
    t.status(r, 200, "GET /metrics with an admin token answers 200")
    ct = r.header("content-type") or ""
    t.ok(ct.replace(" ", "").startswith("text/plain;version=0.0.4"),
         "Content-Type is text/plain; version=0.0.4", ct)
    text = r.body.decode("utf-8", "replace")
    errors, samples, types = parse(text)
    t.eq(errors, [], "the body is valid Prometheus text", text[:1500])
    t.ok(len(samples) >= 4, "it has samples (%d)" % len(samples), text[:800])

    # Queue depth follows submissions.
    def depth():
        _, sm, _ = parse(s.get("/metrics", token="admin").body.decode("utf-8", "replace"))
        q = [x for x in sm if re.search(r"queue", x[0]) and not x[1]
             and not x[0].endswith(("_total", "_count", "_sum", "_bucket"))]
        return q[0][2] if q else None, q
    d0, q = depth()
    t.ok(d0 is not None, "there is an unlabelled queue depth gauge (a name with 'queue')",
         [x[0] for x in samples][:40])
    for i, who in enumerate(("alice_q7", "bob_z3", "tina_ta")):   # one each: none superseded
        s.submit("vadd", kernel("m%d" % i), token=who)
    d1, _ = depth()
    t.eq(d1, (d0 or 0) + 3, "queue depth rises by 3 after three submissions")
    run = s.runner()
    job = run.claim(wait=2)
    run.grade(job, phases=[])
    d2, _ = depth()
    t.eq(d2, (d0 or 0) + 2, "queue depth drops by 1 after one job is graded")

    _, sm, types = parse(s.get("/metrics", token="admin").body.decode("utf-8", "replace"))
    st = find(sm, r"(job|submission)", status="graded") + find(sm, r"(job|submission)",
                                                               state="graded")
    t.ok(any(x[2] >= 1 for x in st), "jobs by state: a series with status/state=graded >= 1",
         [x for x in sm if "state" in x[1] or "status" in x[1]][:20])
    rn = [x for x in sm if re.search(r"runner", x[0])]
    t.ok(any(x[2] >= 1 for x in rn), "runners seen: a runner metric >= 1 after a claim",
         rn[:10])

    # Per-route request counters.
    def counters():
        _, sm_, ty = parse(s.get("/metrics", token="admin").body.decode("utf-8", "replace"))
        out = {}
        for name, lab, v in sm_:
            if re.search(r"request", name) and name.endswith("_total"):
                route = lab.get("route") or lab.get("path") or lab.get("handler")
                if route is not None:
                    key = (name, route, lab.get("method", ""), lab.get("code", lab.get("status", "")))
                    out[key] = v
        return out, ty
    before, _ = counters()
    t.ok(len({k[1] for k in before}) >= 2,
         "a *request*_total counter with a route (or path/handler) label, several routes",
         sorted(before)[:20])
    for _ in range(5):
        s.get("/api/labs", token="alice_q7")
    after, ty = counters()
    grew = {k: after[k] - before.get(k, 0) for k in after
            if "/api/labs" in k[1] and "{" not in k[1] and "submissions" not in k[1]
            and "scoreboard" not in k[1] and after[k] - before.get(k, 0) > 0}
    t.ok(sum(grew.values()) >= 5, "the counter for route /api/labs grew by 5 after 5 GETs",
         grew or sorted(after)[:20])
    # The web pages are routes too: counted by their template like the API.
    lab = "vadd"
    for _ in range(3):
        s.get("/labs/%s" % lab, token="alice_q7")
    s.get("/submissions/999999", token="alice_q7")
    pages, _ = counters()
    grew = {k: pages[k] - after.get(k, 0) for k in pages
            if k[1] == "/labs/{lab}" and pages[k] - after.get(k, 0) > 0}
    t.ok(sum(grew.values()) >= 3, "the counter for page /labs/{lab} grew by 3 after 3 GETs",
         grew or sorted({k[1] for k in pages}))
    t.ok(any(k[1] == "/submissions/{id}" for k in pages) and
         not any(re.search(r"^/(labs/%s|submissions/\d+)$" % re.escape(lab), k[1]) for k in pages),
         "pages are labelled by template (/submissions/{id}), not by raw path",
         sorted({k[1] for k in pages}))
    # A read of a real submission by its id (the runner's job routes above
    # carried ids too): no label may carry one.
    s.get("/api/submissions/%d" % ((job or {}).get("id") or 1), token="admin")
    after, _ = counters()
    ids = {k[1] for k in after}
    t.ok("/api/submissions/{id}" in ids and not any(re.search(r"/\d+(/|$)", x) for x in ids),
         "routes are labelled by template, not by raw path (no ids in labels)", sorted(ids))
    for i in range(60):         # label cardinality attack: unknown paths
        s.get("/api/no/such/path/%d" % i)
        s.get("/api/submissions/%d" % (100000 + i), token="admin")
    final, _ = counters()
    t.ok(len(final) - len(after) < 20,
         "120 requests to distinct unknown paths and ids add few series (%d -> %d)"
         % (len(after), len(final)), sorted({k[1] for k in final}))
    names = {k[0] for k in after}
    t.ok(all(ty.get(n[: -len("_total")]) == "counter" or ty.get(n) == "counter" for n in names),
         "request counters are declared TYPE counter", {n: ty.get(n) for n in names})
    lat = [n for n, k in types.items() if re.search(r"(latency|duration|seconds)", n)
           and k in ("histogram", "summary")]
    t.ok(lat, "a request latency histogram or summary is exported", types)


t = Tap()
require_binary(t)
t.run(main)
t.exit()
