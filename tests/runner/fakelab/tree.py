"""The CI stand-in lab (this folder) laid out as a course tree, as the
runner reads one (--root, or CUGRADE_HOME): DIR/labs/ holds the shared
build-lab.sh, harness.cpp, judge.py and judge_rule.py, DIR/labs/fakelab/lab.json the lab,
DIR/rubrics/fakelab.json its rubric. Used by tests/runner/*.t and
tests/deploy/slurm.t."""
import json
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))


def lay_out(root, limits=None):
    """Lay the fake lab out under root (created); returns root. limits: the
    lab.json limits a suite changes (a dict value, such as "derive", is
    merged into the limit of that name)."""
    os.makedirs(os.path.join(root, "labs/fakelab"))
    os.makedirs(os.path.join(root, "rubrics"))
    for f in ("build-lab.sh", "harness.cpp", "judge.py", "judge_rule.py"):
        shutil.copy(os.path.join(HERE, f), os.path.join(root, "labs", f))
    with open(os.path.join(HERE, "lab.json")) as f:
        lab = json.load(f)
    for k, v in (limits or {}).items():
        if isinstance(v, dict):
            lab["limits"].setdefault(k, {}).update(v)
        else:
            lab["limits"][k] = v
    with open(os.path.join(root, "labs/fakelab/lab.json"), "w") as f:
        json.dump(lab, f)
    shutil.copy(os.path.join(HERE, "rubric.json"), os.path.join(root, "rubrics/fakelab.json"))
    return root
