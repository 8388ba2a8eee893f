#!/bin/sh
# Install the Debian packages cugrade needs, only those missing.
#   sh deploy/install-deps.sh run    build + run the service
#   sh deploy/install-deps.sh test   also what the tests need (browser, nginx, wrk...)
set -e
want="build-essential pkg-config libuv1-dev libhttp-parser-dev libjansson-dev libsqlite3-dev
      libcurl4-openssl-dev libseccomp-dev libssl-dev libcmark-gfm-dev libcmark-gfm-extensions-dev
      bubblewrap sqlite3 curl ca-certificates similarity-tester"
if [ "${1:-run}" = test ]; then
    want="$want python3 chromium nodejs nginx-light wrk iproute2 procps slurm-wlm munge systemd python3-yaml"
    # The student client's tests (tests/client): its notebook magic through IPython and a real
    # .ipynb through nbconvert with an ipykernel; `pip install ./client` offline into a venv.
    want="$want python3-ipython jupyter-nbconvert python3-ipykernel python3-venv python3-setuptools python3-wheel"
    # The fuzzers (tests/fuzz): clang with libFuzzer.
    want="$want clang libclang-rt-14-dev"
    # make format / format-check (.clang-format): clang-format and git-clang-format.
    want="$want clang-format"
    # Python submissions in CI: @cuda.jit kernels in Numba's CUDA simulator.
    want="$want python3-numba"
    # The profiling lab in CI (tests/runner/profiling_lab.t): CPU-only PyTorch 1.13.
    want="$want python3-torch"
fi
missing=""
for p in $want; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# node may come from another repository (nodesource) under the same name: a working node is enough.
case " $missing " in *" nodejs "*) command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 && missing=$(echo "$missing" | sed 's/ nodejs//') ;; esac
if [ -n "$missing" ]; then
    echo "cugrade: installing missing Debian packages:$missing"
    if [ "$(id -u)" -ne 0 ]; then
        echo "cugrade: not root; run: sudo apt-get install -y$missing" >&2; exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
    # Debian's nodejs ships without npm.
    case " $missing " in *" nodejs "*) command -v npm >/dev/null 2>&1 || apt-get install -y -qq npm >/dev/null ;; esac
fi
# Browser tests drive Debian's chromium with playwright-core from npm.
if [ "${1:-run}" = test ] && [ -f tests/pages/package.json ] && [ ! -d tests/pages/node_modules/playwright-core ]; then
    (cd tests/pages && npm ci --silent --no-audit --no-fund >/dev/null 2>&1 || npm install --silent --no-audit --no-fund)
fi
exit 0
