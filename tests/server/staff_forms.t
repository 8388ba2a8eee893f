#!/usr/bin/env python3
# Staff forms keep what was typed when they fail (issue 27): an override
# without a reason, and a late-day grant to an unknown student, come back as
# their page (400 / 404) with the problem above the form and the typed
# values still in it, not a dead-end error page.
import os
import re
import sys
import urllib.parse
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cugrade_test import Tap, Server, require_binary  # noqa: E402

CU = b"__global__ void k(float* x) { x[0] = 1; }\n"


def form_post(s, ck, page, action, fields):
    html = s.get(page, headers=ck).body.decode()
    csrf = re.search(r'name="csrf" value="([^"]+)"', html).group(1)
    body = urllib.parse.urlencode(dict(fields, csrf=csrf)).encode()
    return s.post(action, body=body, headers=dict(ck, **{
        "Content-Type": "application/x-www-form-urlencoded"}))


def main(t):
    s = Server(labs=["vadd"], tap=t)
    sid = (s.submit("vadd", CU, filename="k.cu").json() or {}).get("id")
    sess, _ = s.login("tina_ta")
    ck = {"Cookie": "cugrade_session=%s" % sess}
    r = form_post(s, ck, "/submissions/%s" % sid, "/submissions/%s/override" % sid,
                  {"score": "87.5", "reason": "  "})
    page = r.body.decode()
    t.eq(r.status, 400, "an override without a reason: 400")
    t.ok('id="override-problem"' in page and "needs a reason" in page,
         "...the submission page again, the problem above the form", page[-3000:])
    t.ok(re.search(r'id="ov-score"[^>]*value="87\.5"', page),
         "...with the typed score still in the form")

    sess, _ = s.login("admin")
    ck = {"Cookie": "cugrade_session=%s" % sess}
    r = form_post(s, ck, "/admin/late-days", "/admin/late-days/grant",
                  {"user": "nobody_here", "days": "3", "reason": "doctor's note <b>"})
    page = r.body.decode()
    t.ok(r.status in (400, 404), "a grant to an unknown student: 400/404 (%d)" % r.status)
    t.ok('id="problem"' in page and "Grant more days" in page,
         "...the late-days page again with the problem, not a dead end", page[:3000])
    t.ok('value="nobody_here"' in page and 'value="3"' in page
         and "value=\"doctor&#39;s note &lt;b&gt;\"" in page,
         "...with the typed student, days and reason (escaped) kept", page[-4000:])
    s.cleanup()


t = Tap()
require_binary(t)
t.run(main)
t.exit()
