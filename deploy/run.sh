#!/bin/sh
# Start cugrade on this machine; `make run` calls this after building.
#
#   - creates var/ and, on first start, var/cugrade.db (printing an admin and
#     a demo student token once);
#   - serves on 127.0.0.1:8080 (CUGRADE_LISTEN to change it);
#   - when build/cugrade-runner exists and nvidia-smi shows a GPU, creates a
#     runner token in var/runner.token (0600) and starts one runner per GPU
#     beside the server (each with the host's cores / GPUs compiling at once,
#     docs/runner.md "Two lanes"); otherwise says so: jobs wait, visibly, for
#     a GPU runner.
#
# Ctrl-C (or SIGTERM) stops both gracefully.
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
DB=${CUGRADE_DB:-var/cugrade.db}
LISTEN=${CUGRADE_LISTEN:-127.0.0.1:8080}
SERVER=$BUILD/cugrade-server
RUNNER=$BUILD/cugrade-runner

if [ ! -x "$SERVER" ]; then
    echo "cugrade: $SERVER is missing; run make first" >&2
    exit 1
fi
mkdir -p var
chmod 700 var
if [ ! -f "$DB" ]; then
    "$SERVER" init --db "$DB"
    # A runner token from an earlier database would not work with this one.
    rm -f var/runner.token
fi

gpu=""
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    gpu=$(nvidia-smi -L 2>/dev/null | head -n 1)
fi

if [ -z "$gpu" ] || [ ! -x "$RUNNER" ]; then
    if [ -z "$gpu" ]; then
        echo "cugrade: no GPU found on this machine (nvidia-smi -L shows none): no local runner."
    else
        echo "cugrade: $RUNNER is not built: no local runner."
    fi
    echo "cugrade: submissions are accepted and wait in the queue (status \"queued\", see"
    echo "cugrade: GET /api/submissions/ID or /metrics) until a GPU runner connects; see docs/server.md."
    exec "$SERVER" serve --db "$DB" --listen "$LISTEN"
fi

# A runner token, created once and readable only by us.
if [ ! -s var/runner.token ]; then
    name="runner-$(hostname -s 2>/dev/null || echo local)"
    old_umask=$(umask)
    umask 077
    if ! "$SERVER" user add --db "$DB" "$name" runner >var/runner.token.tmp 2>/dev/null; then
        "$SERVER" token new --db "$DB" "$name" >var/runner.token.tmp
    fi
    mv var/runner.token.tmp var/runner.token
    umask "$old_umask"
fi
chmod 600 var/runner.token

"$SERVER" serve --db "$DB" --listen "$LISTEN" &
server_pid=$!
runner_pid=""
stop() {
    [ -n "$runner_pid" ] && kill -TERM $runner_pid 2>/dev/null || true
    kill -TERM "$server_pid" 2>/dev/null || true
}
trap stop INT TERM

# Wait until the server answers before the runner starts claiming. A 503
# (a disk nearly full) is an answer too: say it, and serve anyway.
host=${LISTEN%:*}
port=${LISTEN##*:}
i=0
while :; do
    code=$(curl -sS -o /dev/null -w '%{http_code}' "http://$host:$port/healthz" 2>/dev/null || true)
    [ "$code" = 200 ] && break
    if [ "$code" = 503 ]; then
        echo "cugrade: warning: /healthz says $(curl -sS "http://$host:$port/healthz" 2>/dev/null)" >&2
        break
    fi
    i=$((i + 1))
    if [ "$i" -gt 50 ] || ! kill -0 "$server_pid" 2>/dev/null; then
        echo "cugrade: the server did not start" >&2
        stop
        wait "$server_pid" 2>/dev/null || true
        exit 1
    fi
    sleep 0.1
done
ngpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[ "$ngpus" -ge 1 ] 2>/dev/null || ngpus=1
export CUGRADE_RUNNERS_PER_HOST=$ngpus
g=0
while [ "$g" -lt "$ngpus" ]; do
    echo "cugrade: GPU $g of $ngpus: starting a runner"
    "$RUNNER" --server "http://$host:$port" --token-file var/runner.token --gpu "$g" &
    runner_pid="$runner_pid $!"
    g=$((g + 1))
done

status=0
wait "$server_pid" || status=$?
# wait returns early when a trapped signal arrives: wait for the real exit.
while kill -0 "$server_pid" 2>/dev/null; do
    wait "$server_pid" || status=$?
done
kill -TERM $runner_pid 2>/dev/null || true
for pid in $runner_pid; do wait "$pid" 2>/dev/null || true; done
exit "$status"
