# Sourced by the scripts run on a GPU host (tests/gpu/run.sh and the GPU
# benchmarks of tests/bench): which cugrade binaries they run.
#   In: ROOT (the checkout), BUILD (default build).
#   Out: CUGRADE_SERVER_BIN, CUGRADE_RUNNER_BIN (exported), and with dist/
#   (make dist: our binaries + their libraries + bwrap, for a host without
#   our build dependencies) CUGRADE_BIN_ENV too, and DIST=$ROOT/dist (else
#   DIST=""); /usr/local/cuda/bin first on PATH; CUGRADE_PYTHON for Python
#   submissions (below).
# The sandbox drops to an unprivileged uid before bwrap: bwrap and the
# libraries must be reachable by it, which a checkout under a 0700 home is
# not, so dist/ is copied to a fresh /tmp directory, removed on exit.
if [ -x "$ROOT/dist/cugrade-runner" ] && [ -x "$ROOT/dist/cugrade-server" ]; then
    D=$(mktemp -d /tmp/cugrade-dist.XXXXXX) || exit 2
    trap 'rm -rf "$D"' EXIT INT TERM
    cp -r "$ROOT/dist/." "$D/" && chmod -R go+rX "$D" && chmod 755 "$D"
    export CUGRADE_SERVER_BIN="$D/cugrade-server" CUGRADE_RUNNER_BIN="$D/cugrade-runner"
    # LD_LIBRARY_PATH only for our binaries (the runner drops it for nvcc &c.).
    export CUGRADE_BIN_ENV="LD_LIBRARY_PATH=$D/lib;CUGRADE_BWRAP=$D/bwrap"
    DIST=$ROOT/dist
else
    export CUGRADE_SERVER_BIN="$ROOT/${BUILD:-build}/cugrade-server"
    export CUGRADE_RUNNER_BIN="$ROOT/${BUILD:-build}/cugrade-runner"
    DIST=""
fi
export PATH="/usr/local/cuda/bin:$PATH"
# Python submissions (docs/python.md): the python3 that has CuPy and Numba.
# A virtual environment outside /usr (the device tool's image: /opt/torch/.venv)
# is bound into the sandbox: CUGRADE_PYTHON's prefix, two folders up.
if [ -z "${CUGRADE_PYTHON:-}" ] && P=$(command -v python3) && V=$(dirname "$(dirname "$P")") &&
   [ -f "$V/pyvenv.cfg" ]; then
    export CUGRADE_PYTHON="$P"
fi
