#!/bin/sh
# `make bench`: every benchmark under tests/bench/ (today: the server against nginx).
exec sh "$(dirname "$0")/server_bench.sh" "${1:-build}"
