#!/bin/sh
# The suites' python3 (tests/run.sh puts a link to it first on PATH) is
# Debian's /usr/bin/python3, the interpreter deploy/install-deps.sh installs
# the test packages into, whatever python3 the caller's PATH finds first (a
# version manager's shim on a CI box ran every Python suite through bash).
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
