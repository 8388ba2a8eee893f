#!/usr/bin/env python3
"""CI (no GPU): a judge whose session goes away after its "ready" (killed
for memory, crashed) is our failure, never the student's: the job is a
system_error naming the judge (the server grades it again), no case is
marked failed, and `cugrade-runner grade` prints its document. The session
is the path every verdict takes (runner/grade/judge.c); until this suite
no test made it break. Prints TAP lines."""
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import GOOD_FILL, failures, fake_course, grade_fakelab, ok, require_nvcc_root  # noqa: E402

require_nvcc_root()
tmp, root, cache = fake_course("cugrade-judge-gone-", None)
# The root's judge: as a session it says "ready" and exits at once; run
# one-shot it is the fake lab's own judge.
real = os.path.join(root, "labs", "judge_real.py")
shutil.move(os.path.join(root, "labs", "judge.py"), real)
with open(os.path.join(root, "labs", "judge.py"), "w") as f:
    f.write("#!/usr/bin/env python3\nimport os, sys\n"
            "if sys.argv[1:] == ['--serve']:\n"
            "    print('ready', flush=True)\n"
            "    sys.exit(0)\n"
            "exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'judge_real.py')).read())\n")
# build-lab.sh copies judge.py as the built judge: its one-shot form needs
# the real one beside it.
with open(os.path.join(root, "labs", "build-lab.sh"), "a") as f:
    f.write('cp "$HERE/judge_real.py" "$OUT/judge_real.py"\n')
os.chmod(os.path.join(root, "labs", "judge.py"), 0o755)

doc, log, _ = grade_fakelab(tmp, root, cache, "good.cu", GOOD_FILL, "00c0ffee")
cg = (doc.get("result") or {}).get("cugrade") or {}
text = str(doc)
ok(doc.get("status") != "unparsable", "grade prints its document when the judge's session is gone", log)
ok(doc.get("status") == "system_error" and "judge" in text and "session" in text and "ended" in text,
   "the job is a system_error saying the judge's session ended (ours, retried), not a verdict on the "
   "student", text[:1500] + log)
ok(not any(c.get("passed") is False for c in cg.get("cases") or []),
   "no case is marked failed for it", cg.get("cases"))
shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if failures() else 0)
