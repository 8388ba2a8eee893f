"""Run one cell through a real IPython shell (Debian's python3-ipython), as a
notebook would: `%load_ext cugrade`, then the cell read from stdin.

    /usr/bin/python3 tests/client/ipython_cell.py rich|text < cell

rich: every display() the cell makes is printed as one line
      `PUB {"html", "text", "update", "display_id"}` the moment it happens
      (the way a Jupyter kernel publishes display_data/update_display_data),
      so the test can watch the live progress and drive the fake runner.
text: the shell's own DisplayPublisher, as in a terminal IPython (text only).
Last line: `LAST <json>`: cugrade.last, the final submission object.
The client is imported from $PYTHONPATH (client/).
"""
import json
import sys

from IPython.core.displaypub import DisplayPublisher
from IPython.core.interactiveshell import InteractiveShell


class Recorder(DisplayPublisher):
    def publish(self, data, metadata=None, source=None, *, transient=None, update=False,
                **kw):
        sys.__stdout__.write("PUB " + json.dumps({
            "html": data.get("text/html"), "text": data.get("text/plain"), "update": update,
            "display_id": (transient or {}).get("display_id")}) + "\n")
        sys.__stdout__.flush()

    def clear_output(self, wait=False):
        pass


shell = InteractiveShell.instance()
if sys.argv[1] == "rich":
    shell.display_pub = Recorder(shell=shell)
cell = sys.stdin.read()
ok = shell.run_cell("%load_ext cugrade").success
r = shell.run_cell(cell)
import cugrade  # noqa: E402
sys.stdout.flush()
print("LAST " + json.dumps(cugrade.last))
sys.exit(0 if ok and r.success else 1)
