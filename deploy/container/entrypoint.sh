#!/bin/sh
# The runner container's entry point: one runner for one GPU.
#
#   CUGRADE_SERVER      the server's URL (required)
#   CUGRADE_TOKEN_FILE  the runner token, a mounted secret (default /etc/cugrade/runner.token)
#   CUGRADE_GPU         GPU index inside the container (default 0: the one --gpus gave)
#   CUGRADE_NAME        runner name (default HOSTNAME-gpuN: the pod's or container's name)
#   CUGRADE_STATE       cache and work directories (default /var/lib/cugrade-runner)
#
# It checks first what the sandbox needs (check-host.sh) and stops with a
# message naming the missing privilege rather than failing on the first job.
set -eu
PREFIX=$(cd "$(dirname "$0")/.." && pwd)
: "${CUGRADE_SERVER:?set CUGRADE_SERVER, e.g. http://cugrade-server:8080}"
TOKEN=${CUGRADE_TOKEN_FILE:-/etc/cugrade/runner.token}
GPU=${CUGRADE_GPU:-0}
STATE=${CUGRADE_STATE:-/var/lib/cugrade-runner}
NAME=${CUGRADE_NAME:-$(hostname)-gpu$GPU}
"$PREFIX/bin/check-host.sh" --quiet || exit 1
mkdir -p "$STATE/cache" "$STATE/work"
. "$PREFIX/dist/env.sh"
exec "$PREFIX/dist/cugrade-runner" --server "$CUGRADE_SERVER" --token-file "$TOKEN" \
    --gpu "$GPU" --name "$NAME" --root "$PREFIX" \
    --cache "$STATE/cache" --work "$STATE/work"
