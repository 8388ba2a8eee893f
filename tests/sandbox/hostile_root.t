#!/bin/sh
# suite: serial hostile-prog  (tests/run.sh: the host checks find leftover
# processes by the name hostile-prog, which sandbox/*.t all run)
# The hostile suite again in root mode: the sandbox as it runs on hosts
# without unprivileged user namespaces (the runner, root, makes the user
# namespace for the job's box uid itself; see docs/sandbox.md "Identity").
# Every attack must be held there too, and root-only host files stay out of
# reach: the program's host uid is its box's, never root.
CUGRADE_SANDBOX_USER=root TAP_PREFIX="[root mode] " exec sh "$(dirname "$0")/hostile.t"
