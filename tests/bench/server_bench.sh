#!/bin/sh
# server_bench.sh - cugrade-server against nginx serving the same bytes.
#
#   sh tests/bench/server_bench.sh [BUILD]
#   env: DURATION=8 (seconds per wrk run)  SUBMISSIONS=10000  STUDENTS=200
#        GRADED=1000  CONNS="1 64 1000"  THREADS=1 (wrk threads)  NICE=-10 (as root)
#
# 1. starts BUILD/cugrade-server on a free port with the fixture lab `bench`
#    (tests/server/fixtures) and seeds it through the API (tests/bench/seed.py:
#    STUDENTS students, SUBMISSIONS submissions, GRADED of them graded by the
#    fake runner);
# 2. saves the exact bytes of GET /api/labs/bench/scoreboard and
#    GET /api/submissions/{id} (as student s0000, who owns {id}) and starts
#    nginx (worker_processes 1, like the server's one loop; no access log;
#    keep-alive unlimited) serving them as static files at the same paths;
# 3. runs wrk (THREADS threads, the Authorization header set by a Lua script,
#    also sent to nginx) for DURATION seconds per row and target, and prints
#    req/s, p50, p99, nginx req/s, nginx p99 and the ratio; then the server's
#    VmRSS with the SUBMISSIONS stored.
# Targets (issue 2): >= 0.8x nginx req/s and p99 <= 5 ms at 64 connections;
# RSS < 50 MB with 10,000 submissions.
set -eu
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "$BUILD" && pwd)
BIN=$BUILD/cugrade-server
DURATION=${DURATION:-8}
SUBMISSIONS=${SUBMISSIONS:-10000}
STUDENTS=${STUDENTS:-200}
GRADED=${GRADED:-1000}
CONNS=${CONNS:-"1 64 1000"}
THREADS=${THREADS:-1}
LAB=bench
# PIN=1 (default with 2+ cores): the server and nginx on CPU 0, wrk on CPU 1,
# so that the load generator does not steal the server's core.
PIN=${PIN:-$([ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null && echo 1 || echo 0)}
if [ "$PIN" = 1 ]; then ON_SERVER="taskset -c 0"; ON_CLIENT="taskset -c 1"; else ON_SERVER=""; ON_CLIENT=""; fi
# NICE=-10 (default as root): the server, nginx and wrk alike get that much
# more CPU priority, so that other work on a shared machine skews p99 less
# (it skews both servers the same, but a 2 ms p99 drowns in it). NICE=0: off.
NICE=${NICE:-$([ "$(id -u)" = 0 ] && echo -10 || echo 0)}
if [ "$NICE" != 0 ]; then ON_SERVER="nice -n $NICE $ON_SERVER"; ON_CLIENT="nice -n $NICE $ON_CLIENT"; fi

for tool in wrk nginx curl python3; do
    command -v $tool >/dev/null || { echo "server_bench: $tool is not installed" >&2; exit 2; }
done
[ -x "$BIN" ] || { echo "server_bench: no $BIN (make BUILD=$BUILD $BIN)" >&2; exit 2; }

TMP=$(mktemp -d /tmp/cugrade-bench.XXXXXX)
SPID=""; NPID=""
cleanup() {
    [ -n "$SPID" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
    [ -n "$NPID" ] && kill "$NPID" 2>/dev/null && wait "$NPID" 2>/dev/null
    [ "${KEEP:-0}" = 1 ] && echo "kept $TMP" || rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

# 1000 connections need 1000+ descriptors in wrk, the server and nginx.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
echo "ulimit -n: $(ulimit -n); cores: $(nproc); wrk threads: $THREADS; pinned (server/nginx CPU 0, wrk CPU 1): $PIN; nice: $NICE; $DURATION s per run;" \
     "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
wait_http() { # URL
    i=0
    while ! curl -sf -o /dev/null "$1"; do
        i=$((i + 1)); [ $i -gt 200 ] && { echo "server_bench: $1 never answered" >&2; return 1; }
        sleep 0.05
    done
}

# ---- the server, seeded
mkdir -p "$TMP/labs" "$TMP/rubrics" "$TMP/www/api/labs/$LAB" "$TMP/www/api/submissions"
cp -r "$ROOT/tests/server/fixtures/labs/$LAB" "$TMP/labs/"
cp "$ROOT/tests/server/fixtures/rubrics/$LAB.json" "$TMP/rubrics/"
"$BIN" init --db "$TMP/cugrade.db" >"$TMP/init.txt" 2>&1
ADMIN=$(grep -o 'cga_[0-9a-f]\{64\}' "$TMP/init.txt" | head -n 1)
[ -n "$ADMIN" ] || { echo "server_bench: init printed no admin token" >&2; cat "$TMP/init.txt"; exit 1; }
SPORT=$(free_port)
# wrk's 1000 connections all come from 127.0.0.1: lift the per-address cap.
$ON_SERVER "$BIN" serve --db "$TMP/cugrade.db" --listen "127.0.0.1:$SPORT" --labs "$TMP/labs" \
    --rubrics "$TMP/rubrics" --max-conns-per-address 0 >"$TMP/server.log" 2>&1 &
SPID=$!
wait_http "http://127.0.0.1:$SPORT/healthz"
python3 "$ROOT/tests/bench/seed.py" --url "http://127.0.0.1:$SPORT" --admin-token "$ADMIN" \
    --lab $LAB --submissions "$SUBMISSIONS" --students "$STUDENTS" --graded "$GRADED" \
    --out "$TMP/vars.sh"
. "$TMP/vars.sh"
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$SPID/status"; }
RSS_SEEDED=$(rss_kb)

# ---- the same bytes, for nginx
SB=/api/labs/$LAB/scoreboard
SU=/api/submissions/$SID
curl -sf -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$SPORT$SB" -o "$TMP/www$SB"
curl -sf -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$SPORT$SU" -o "$TMP/www$SU"
NPORT=$(free_port)
mkdir -p "$TMP/nginx"
cat >"$TMP/nginx/nginx.conf" <<EOF
worker_processes 1;
daemon off;
master_process off;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/error.log warn;
worker_rlimit_nofile 65536;
events { worker_connections 8192; }
http {
    access_log off;
    default_type application/json;
    keepalive_requests 100000000;
    keepalive_timeout 75s;
    client_body_temp_path $TMP/nginx/body;
    proxy_temp_path $TMP/nginx/proxy;
    fastcgi_temp_path $TMP/nginx/fastcgi;
    uwsgi_temp_path $TMP/nginx/uwsgi;
    scgi_temp_path $TMP/nginx/scgi;
    server {
        listen 127.0.0.1:$NPORT;
        root $TMP/www;
        location / { }
    }
}
EOF
$ON_SERVER nginx -p "$TMP/nginx" -c "$TMP/nginx/nginx.conf" -e "$TMP/nginx/error.log" &
NPID=$!
wait_http "http://127.0.0.1:$NPORT$SB"
for p in "$SB" "$SU"; do
    curl -sf "http://127.0.0.1:$NPORT$p" -o "$TMP/check"
    cmp -s "$TMP/check" "$TMP/www$p" || { echo "server_bench: nginx bytes differ for $p" >&2; exit 1; }
done

# ---- wrk
cat >"$TMP/auth.lua" <<EOF
wrk.headers["Authorization"] = "Bearer $TOKEN"
done = function(summary, latency, requests)
    local e = summary.errors
    io.write(string.format("BENCH %.1f %.3f %.3f %d %d\n",
        summary.requests / (summary.duration / 1e6),
        latency:percentile(50) / 1000, latency:percentile(99) / 1000,
        e.connect + e.read + e.write + e.timeout, e.status))
end
EOF
run_wrk() { # URL CONNS -> "rps p50 p99 errors non2xx"
    t=$THREADS; [ "$2" -lt "$t" ] && t=$2
    $ON_CLIENT wrk -t "$t" -c "$2" -d "${DURATION}s" --timeout 10s -s "$TMP/auth.lua" "$1" \
        >"$TMP/wrk.out" 2>&1 || true
    line=$(grep '^BENCH ' "$TMP/wrk.out" | tail -n 1)
    [ -n "$line" ] && echo "${line#BENCH }" || echo "0 0 0 -1 -1"
}

echo "server: $BIN (pid $SPID, port $SPORT); nginx $(nginx -v 2>&1 | sed 's/.*\///') (port $NPORT)"
echo "bytes: scoreboard $(wc -c <"$TMP/www$SB"), submission $(wc -c <"$TMP/www$SU")"
echo
printf '%-34s %5s %10s %8s %8s %12s %12s %6s\n' endpoint conns "req/s" "p50 ms" "p99 ms" \
    "nginx req/s" "nginx p99" ratio
notes=""
verdict=""
for ep in "$SB" "$SU"; do
    for c in $CONNS; do
        set -- $(run_wrk "http://127.0.0.1:$SPORT$ep" "$c")
        s_rps=$1 s_p50=$2 s_p99=$3 s_err=$4 s_bad=$5
        set -- $(run_wrk "http://127.0.0.1:$NPORT$ep" "$c")
        n_rps=$1 n_p99=$3 n_err=$4 n_bad=$5
        ratio=$(awk -v a="$s_rps" -v b="$n_rps" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
        name="GET $(echo "$ep" | sed "s#/$SID\$#/{id}#")"
        printf '%-34s %5s %10s %8s %8s %12s %12s %6s\n' "$name" "$c" "$s_rps" "$s_p50" \
            "$s_p99" "$n_rps" "$n_p99" "${ratio}x"
        [ "$s_err$s_bad" != "00" ] && notes="$notes
  server $name c=$c: $s_err socket errors, $s_bad non-2xx answers"
        [ "$n_err$n_bad" != "00" ] && notes="$notes
  nginx $name c=$c: $n_err socket errors, $n_bad non-2xx answers"
        if [ "$c" = 64 ]; then
            v=$(awk -v r="$ratio" -v p="$s_p99" 'BEGIN { print ((r >= 0.8 && p <= 5) ? "met" : "MISSED") }')
            verdict="$verdict
  $name at 64 connections: ratio ${ratio}x (>= 0.8), p99 $s_p99 ms (<= 5): $v"
        fi
    done
done
RSS_AFTER=$(rss_kb)
echo
echo "server VmRSS with $SUBMISSIONS submissions stored: $((RSS_SEEDED / 1024)) MB after seeding," \
     "$((RSS_AFTER / 1024)) MB after the runs ($RSS_SEEDED kB / $RSS_AFTER kB)"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg) (other work on this machine skews p99)"
echo "targets:$verdict"
echo "  RSS < 50 MB: $(awk -v k="$RSS_AFTER" 'BEGIN { print (k < 50 * 1024 ? "met" : "MISSED") }')"
[ -n "$notes" ] && echo "errors:$notes"
exit 0
