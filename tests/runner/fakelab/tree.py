"""The CI stand-in lab (this folder) laid out as a course tree, as the
runner reads one (--root, or CUGRADE_HOME): DIR/labs/ holds the shared
build-lab.sh, harness.cpp and judge.py, DIR/labs/fakelab/lab.json the lab,
DIR/rubrics/fakelab.json its rubric. Used by tests/runner/*.t and
tests/deploy/slurm.t."""
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))


def lay_out(root):
    """Lay the fake lab out under root (created); returns root."""
    os.makedirs(os.path.join(root, "labs/fakelab"))
    os.makedirs(os.path.join(root, "rubrics"))
    for f in ("build-lab.sh", "harness.cpp", "judge.py"):
        shutil.copy(os.path.join(HERE, f), os.path.join(root, "labs", f))
    shutil.copy(os.path.join(HERE, "lab.json"), os.path.join(root, "labs/fakelab/lab.json"))
    shutil.copy(os.path.join(HERE, "rubric.json"), os.path.join(root, "rubrics/fakelab.json"))
    return root
