#!/bin/sh
# NumPy input generation, whole against chunked: tests/bench/gen_bench.py
# (a table, not a test; about a minute on 2 cores, no GPU).
cd "$(dirname "$0")/../.." || exit 2
exec /usr/bin/python3 tests/bench/gen_bench.py
