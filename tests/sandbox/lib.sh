# Shared helpers of the sandbox suites (sourced, POSIX sh).
#   $SR    the sandbox_run CLI          $T   this suite's temp dir (0755)
#   run ARGS...   runs "$SR ARGS", the JSON verdict line in $J, stderr in $T/stderr
#   has STR / lacks STR   does $J contain STR
#   num KEY       a numeric field of $J
#   check NAME CMD...   ok/not ok on CMD's status, with $J as diagnostics
ROOT=${CUGRADE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${CUGRADE_BUILD:-$ROOT/build}
SR=${SANDBOX_RUN:-$BUILD/tests/tools/sandbox_run}
CC=${CC:-cc}
command -v "$CC" >/dev/null 2>&1 || CC=gcc
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
T=$(mktemp -d /tmp/cugrade-sbtest.XXXXXX) || exit 2
# The sandbox may run as host "nobody": it must reach what we hand it.
chmod 755 "$T"
J=""
FAILED=0
echo 0 >"$T/ignore" # pids the host checks leave out (see the killed-runner test)

TAP_PREFIX=${TAP_PREFIX:-}
ok() { echo "ok - $TAP_PREFIX$1"; }
nok() {
    echo "not ok - $TAP_PREFIX$1"
    FAILED=$((FAILED + 1))
    printf '%s\n' "#   verdict: $J" | cut -c1-2000
    [ -s "$T/stderr" ] && sed 's/^/#   stderr: /' "$T/stderr" | head -n 10
    return 0
}
check() { _n=$1; shift; if "$@"; then ok "$_n"; else nok "$_n"; fi; }
# Every CLI run is recorded by pid: its cgroups are named cugrade-<pid>-<n>,
# which is how the host checks tell ours from other suites' running beside.
RUN_ENV=""
run() {
    env $RUN_ENV "$SR" --parent "$T" "$@" >"$T/out" 2>"$T/stderr" &
    _p=$!
    echo "$_p" >>"$T/pids"
    wait "$_p"
    J=$(cat "$T/out")
}
has() { case "$J" in *"$1"*) return 0 ;; esac; return 1; }
lacks() { ! has "$1"; }
num() { printf '%s' "$J" | sed -n "s/.*\"$1\":\([-0-9.]*\).*/\1/p"; }
# float compare: lt A B
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 < b + 0) }'; }
all() { for _c; do eval "$_c" || return 1; done; return 0; }

if [ ! -x "$SR" ]; then
    echo "not ok - sandbox_run CLI built at $SR"
    exit 1
fi

# Our runs make their cgroups under a parent of this suite's own
# (CUGRADE_CGROUP, one folder per hierarchy), so the host checks look there
# alone: the machine's other cugrade-PID-N groups (other suites' runners
# beside us, a killed runner's leftovers, earlier sessions' in other
# memory groups) are never taken for ours when their PID is one we used.
# Where we may not make it (not root), the checks fall back to the PIDs.
CG_PARENT=cugrade-sbtest-${T##*.}
CG_PARENTS=""
if [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ]; then
    _hier=/sys/fs/cgroup
else
    _hier="/sys/fs/cgroup/memory /sys/fs/cgroup/pids /sys/fs/cgroup/cpuacct /sys/fs/cgroup/unified"
fi
for _h in $_hier; do
    [ -d "$_h" ] || continue
    if mkdir "$_h/$CG_PARENT" 2>/dev/null; then
        CG_PARENTS="$CG_PARENTS $_h/$CG_PARENT"
    else
        for _p in $CG_PARENTS; do rmdir "$_p"; done
        CG_PARENTS=""
        break
    fi
done
[ -n "$CG_PARENTS" ] && export CUGRADE_CGROUP="/$CG_PARENT"

# Host state: processes and cgroups the sandbox must never leave behind.
our_cg_pattern() {
    [ -s "$T/pids" ] || { echo 'cugrade-none-'; return; }
    printf 'cugrade-(%s)-[0-9]+' "$(paste -sd'|' "$T/pids")"
}
# The lines of stdin that name one of our run cgroups, cugrade-PID-N (PID
# the sandbox_run that made it, ended by the time we look), less those
# whose PID is alive: another program's that reuses the number (pid_max
# is 32768 on CI; other suites run beside this one), its cgroups not ours.
ours_only() {
    pat=$(our_cg_pattern)
    while read -r line; do
        maker=$(printf '%s\n' "$line" | grep -oEm1 "$pat"); maker=${maker#cugrade-}; maker=${maker%%-*}
        [ -n "$maker" ] && [ -d "/proc/$maker" ] || echo "$line"
    done
}
cg_dirs() {
    if [ -n "$CG_PARENTS" ]; then
        # shellcheck disable=SC2086
        find $CG_PARENTS -mindepth 1 -maxdepth 1 -type d -name 'cugrade-*' 2>/dev/null
        return
    fi
    find /sys/fs/cgroup -maxdepth 9 -type d -name 'cugrade-[0-9]*' 2>/dev/null | grep -E "/$(our_cg_pattern)\$" |
        ours_only
}
sandbox_procs() {
    # processes still in one of our run cgroups; our hostile programs
    # (alive or zombie); bwrap zombies nobody reaped
    if [ -n "$CG_PARENTS" ]; then
        grep -lsF "/$CG_PARENT/" /proc/[0-9]*/cgroup 2>/dev/null | sed 's|/proc/\([0-9]*\)/cgroup|\1|'
    else
        grep -oEs "$(our_cg_pattern)" /proc/[0-9]*/cgroup 2>/dev/null | ours_only |
            sed 's|/proc/\([0-9]*\)/cgroup:.*|\1|' | sort -u
    fi
    ps -eo pid=,stat=,comm= 2>/dev/null | awk '$3 == "hostile-prog" || ($3 == "bwrap" && $2 ~ /^Z/)' |
        grep -vwF -f "$T/ignore" 2>/dev/null
}
host_clean() {
    # give the kernel a moment to finish reaping
    for _i in 1 2 3 4 5 6 7 8 9 10; do
        [ -z "$(sandbox_procs)$(cg_dirs)" ] && return 0
        sleep 0.2
    done
    echo "#   left behind: $(sandbox_procs | tr '\n' ' ') cgroups: $(cg_dirs | tr '\n' ' ')"
    return 1
}
cleanup() {
    [ -n "${LISTENER:-}" ] && kill "$LISTENER" 2>/dev/null
    grep -o "$T/[^ ]*" /proc/self/mountinfo 2>/dev/null | while read -r m; do umount -l "$m" 2>/dev/null; done
    rm -rf "$T"
    for _p in $CG_PARENTS; do
        find "$_p" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null
        rmdir "$_p" 2>/dev/null
    done
}
trap cleanup EXIT INT TERM
