#!/usr/bin/env python3
# Hidden cases stay hidden in every text a student reads: the result's
# summary (`output`), tests[].output, cases[].message, hints, timing.case and
# the progress detail, in the API and in the pages. The runner's documents
# below are what it writes when a student's code breaks the GPU context in
# a hidden case: they name it ("case 2^26") and count it ("3 of 5 correctness
# cases passed"). Staff see them verbatim; an after_due_date case shows up
# once the student's due date has passed (here through an extension).
import copy
import json
import os
import sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary, kernel  # noqa: E402

CRASH = ("Your code broke the GPU context in case 2^26 (an illegal memory access was "
         "encountered); the cases after it did not run.")


def test(name, score, mx, passed, out, vis="visible"):
    return {"name": name, "score": score, "max_score": mx,
            "status": "passed" if passed else "failed", "output": out, "visibility": vis}


def case(name, passed, message=""):
    return {"name": name, "passed": passed, "max_abs_err": 0.0 if passed else None,
            "max_rel_err": 0.0 if passed else None, "first_bad_index": None,
            "unwritten": 0, "message": message}


def crashed(job):
    """A runtime_error in hidden case 2^26, as runner/grade/score.c words it."""
    return {
        "score": 20, "max_score": 90,
        "output": CRASH + " 3 of 5 correctness cases passed.",
        "tests": [
            test("correctness: 1", 5, 5, True, "correct; max abs err 0"),
            test("correctness: 1000", 5, 5, True, "correct; max abs err 0"),
            test("correctness: 2^20+7", 10, 10, True,
                 "correct; max abs err 0; the next case, 2^26, crashed"),
            test("correctness: 2^26", 0, 10, False,
                 "runtime_error: an illegal memory access was encountered", "hidden"),
            test("correctness: 2^28", 0, 10, False, "not run: " + CRASH, "after_due_date"),
            test("sanitizer (memcheck, racecheck)", 0, 10, False, "memcheck: not run"),
            test("speedup over the naive kernel", 0, 50, False,
                 "not timed: every correctness case must pass first"),
        ],
        "cugrade": {
            "lab": "secret", "rubric_version": job.get("rubric_version", 1),
            "gpu": "NVIDIA H100 80GB HBM3 (fake)", "status": "runtime_error",
            "compile_log": "", "rejection": None,
            # printed by the student's code in every case, the hidden ones too
            "program_output": "n=1\nn=1000\nn=1048583\nn=67108864\n",
            "cases": [case("1", True), case("1000", True), case("2^20+7", True),
                      case("2^26", False, "runtime_error: an illegal memory access was "
                           "encountered: a kernel read or wrote past an allocation"),
                      case("2^28", False, "not run: " + CRASH)],
            "sanitizer": [], "speed": [], "timing": None,
            "hints": ["Case 2^26: an illegal memory access usually means an index past n.",
                      "Round the block count up: (n + block - 1) / block."],
        },
    }


def timed(job):
    """A graded result whose timing case (2^28) is after_due_date."""
    doc = crashed(job)
    doc["score"], doc["output"] = 90, ("5 of 5 correctness cases passed. speedup_vs_naive "
                                       "5.1 on 2^28 (1.23 ms).")
    for t_ in doc["tests"]:
        if t_["name"].startswith("correctness"):
            t_.update(status="passed", score=t_["max_score"], output="correct; max abs err 0")
    doc["cugrade"].update(status="graded", hints=[], timing={
        "case": "2^28", "student_ms": 1.23, "speedup": 5.1, "metric": "speedup_vs_naive",
        "metric_value": 5.1, "flagged": False, "flag_reason": None})
    for c in doc["cugrade"]["cases"]:
        c.update(passed=True, message="")
    return doc


# What must never reach a student before the case is visible.
SECRETS = ["2^26", "3 of 5", "5 of 5", "illegal memory access", "the next case", "n=67108864"]
UNTIL_DUE = ["2^28"]


def leaks(text, secrets):
    return [x for x in secrets if x in text]


def main(t):
    s = Server(labs=["secret"], tap=t)
    run = s.runner()
    sid = s.submit("secret", kernel("crash")).json()["id"]
    job = run.claim(wait=2)
    t.eq((job or {}).get("id"), sid, "setup: the fake runner claims the submission")

    # Progress: "3/5" counts the hidden cases, "2^28" names one.
    for phase, detail in (("checking", "3/5"), ("timing", "2^28")):
        run.progress(sid, phase, detail)
        st = s.submission(sid, token="alice_q7") or {}
        staff = s.submission(sid, token="tina_ta") or {}
        lst = s.get("/api/submissions?lab=secret", token="alice_q7").json() or {}
        items = [x for x in lst.get("submissions", []) if x.get("id") == sid]
        t.ok(st.get("status") == phase and st.get("detail") == ""
             and items and items[0].get("detail") == "",
             "while %s, the student's detail is empty, not %r (submission and list)"
             % (phase, detail), (st, items))
        t.eq(staff.get("detail"), detail, "staff see the progress detail %r" % detail)

    doc = crashed(job)
    t.status(run.result(sid, "runtime_error", doc), 200, "the runner posts the crash result")

    r = s.get("/api/submissions/%d" % sid, token="alice_q7")
    body = r.body.decode()
    res = (r.json() or {}).get("result") or {}
    t.eq(leaks(body, SECRETS + UNTIL_DUE), [],
         "the student's JSON names no hidden case and counts none")
    t.eq(res.get("output"), "3 of 3 visible correctness cases passed.",
         "the summary counts the visible cases only; the sentence naming 2^26 is gone")
    t.eq([x["name"] for x in res.get("tests", [])],
         ["correctness: 1", "correctness: 1000", "correctness: 2^20+7",
          "sanitizer (memcheck, racecheck)", "speedup over the naive kernel"],
         "tests[]: the visible ones")
    t.ok(res.get("tests") and res["tests"][2]["output"].startswith("(not shown")
         and res["tests"][0]["output"] == "correct; max abs err 0",
         "a visible test's output that names a hidden case is replaced; others stay",
         res.get("tests"))
    cg = res.get("cugrade") or {}
    t.eq([c["name"] for c in cg.get("cases", [])], ["1", "1000", "2^20+7"],
         "cugrade.cases: the visible ones")
    t.eq(cg.get("hints"), ["Round the block count up: (n + block - 1) / block."],
         "the hint about case 2^26 is removed, the other kept")
    t.ok(cg.get("program_output", "").startswith("(not shown yet") and "n=" not in cg["program_output"],
         "program_output (prints made during the hidden cases too) is withheld with a note",
         cg.get("program_output"))
    t.ok(res.get("score") == 20 and res.get("max_score") == 90 and cg.get("gpu"),
         "score, max_score and the rest of the document are still there", res)

    staff = s.get("/api/submissions/%d" % sid, token="tina_ta").json() or {}
    t.eq(staff.get("result"), doc, "staff see the runner's document verbatim")

    sess, _ = s.login("alice_q7")
    ck = {"Cookie": "cugrade_session=%s" % sess}
    page = s.get("/submissions/%d" % sid, headers=ck)
    html = page.body.decode()
    t.ok(page.status == 200 and "visible correctness cases passed" in html,
         "the submission page shows the scrubbed summary", page.brief())
    t.eq(leaks(html, SECRETS + UNTIL_DUE), [], "the submission page leaks nothing either")
    # The page's id is spelled as the API's (api_parse_id): a leading zero,
    # a sign or 19 digits is no id here either.
    for bad in ["0%d" % sid, "+%d" % sid, "1" + "0" * 18, "99999999999999999999"]:
        r = s.get("/submissions/" + bad, headers=ck)
        t.ok(r.status == 404, "the page /submissions/%s: not an id, 404" % bad, r.brief())
    live = s.get("/submissions/%d?part=live" % sid, headers=ck).body.decode()
    t.eq(leaks(live, SECRETS + UNTIL_DUE), [], "nor does its live part")
    tina, _ = s.login("tina_ta")
    html = s.get("/submissions/%d" % sid, headers={"Cookie": "cugrade_session=%s" % tina}).body
    t.ok(b"2^26" in html and b"3 of 5" in html, "the TA's page shows the hidden case")

    # A graded result timed on 2^28 (after_due_date): the timing block stays,
    # without its case's name.
    sid2 = s.submit("secret", kernel("fast")).json()["id"]
    job = run.claim(wait=2)
    run.result(sid2, "graded", timed(job))
    r = s.get("/api/submissions/%d" % sid2, token="alice_q7")
    res = (r.json() or {}).get("result") or {}
    timing = (res.get("cugrade") or {}).get("timing") or {}
    t.eq(leaks(r.body.decode(), SECRETS + UNTIL_DUE), [], "the timed result leaks nothing")
    t.ok(timing.get("case") is None and timing.get("student_ms") == 1.23,
         "timing.case (an after_due_date case) is null; the timing itself stays", timing)
    t.eq(res.get("output"), "3 of 3 visible correctness cases passed.",
         "the timing sentence naming 2^28 is dropped from the summary")

    # Alice's due date passes (an extension into the past): 2^28 shows, 2^26 not.
    r = s.post("/api/admin/extensions", token="admin",
               json_body={"user": "alice_q7", "lab": "secret", "due": "2020-06-01T00:00:00Z",
                          "hard_deadline": "2099-12-31T00:00:00Z"})
    t.status(r, 200, "setup: alice's due date moves into the past")
    r = s.get("/api/submissions/%d" % sid, token="alice_q7")
    res = (r.json() or {}).get("result") or {}
    t.eq(leaks(r.body.decode(), SECRETS), [], "after her due date 2^26 is still hidden")
    t.ok("correctness: 2^28" in [x["name"] for x in res.get("tests", [])]
         and "2^28" in [c["name"] for c in (res.get("cugrade") or {}).get("cases", [])],
         "and the after_due_date case 2^28 is visible", res.get("tests"))
    t.eq(res.get("output"), "3 of 4 visible correctness cases passed.",
         "the summary counts the four visible cases")
    r = s.get("/api/submissions/%d" % sid2, token="alice_q7")
    timing = ((r.json() or {}).get("result") or {}).get("cugrade", {}).get("timing") or {}
    t.eq(timing.get("case"), "2^28", "timing.case is shown once 2^28 is visible")
    s.cleanup()


def untouched(t):
    """No hidden case in the lab: the student's copy equals the document."""
    s = Server(labs=["secret"], tap=t)
    r = s.put("/api/admin/labs/secret/rubric", token="admin", json_body=dict(
        json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "fixtures", "rubrics", "secret.json"))),
        correctness=[{"case": c, "points": 5} for c in ("1", "1000", "2^20+7", "2^26", "2^28")]))
    t.status(r, 200, "setup: a rubric with every case visible")
    run = s.runner()
    sid = s.submit("secret", kernel("open")).json()["id"]
    job = run.claim(wait=2)
    doc = crashed(job)
    for t_ in doc["tests"]:
        t_["visibility"] = "visible"
    run.result(sid, "runtime_error", copy.deepcopy(doc))
    got = (s.submission(sid, token="alice_q7") or {}).get("result")
    t.eq(got, doc, "with nothing hidden the student reads the runner's document as it is")
    s.cleanup()


t = Tap()
require_binary(t)
t.run(main)
t.run(untouched)
t.exit()
