#!/bin/sh
# The environment tests/run.sh gives a suite. Its python3 (run.sh puts a
# link to it first on PATH) is Debian's /usr/bin/python3, the interpreter
# deploy/install-deps.sh installs the test packages into, whatever python3
# the caller's PATH finds first (a version manager's shim on a CI box ran
# every Python suite through bash).
p=$(command -v python3)
r=$(readlink -f "$p" 2>/dev/null)
if [ -n "$r" ] && [ "$r" = "$(readlink -f /usr/bin/python3)" ]; then
    echo "ok - a suite's python3 is Debian's ($p)"
else
    echo "not ok - a suite's python3 is $p ($r), not /usr/bin/python3"
fi
if python3 -c 'import numba, numpy' 2>/dev/null; then
    echo "ok - and it imports the test packages (numba, numpy)"
else
    echo "not ok - the suites' python3 cannot import numba and numpy (make test-deps installs them)"
fi
# The runner compiles at nice 10 by default; beside the other suites on a
# 2-core box that starved correct files' compiles into system_errors. A
# suite compiles at the runner's priority unless it sets one itself.
if [ "${CUGRADE_COMPILE_NICE:-}" = 0 ]; then
    echo "ok - a suite's compiles run at the runner's priority (CUGRADE_COMPILE_NICE=0)"
else
    echo "not ok - a suite's CUGRADE_COMPILE_NICE is '${CUGRADE_COMPILE_NICE:-}', not 0 (tests/run.sh sets it)"
fi
