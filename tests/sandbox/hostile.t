#!/bin/sh
# suite: serial hostile-prog  (tests/run.sh: the host checks find leftover
# processes by the name hostile-prog, which sandbox/*.t all run)
# The hostile-program suite: each student program below attacks the sandbox
# one way; each test asserts the verdict sandbox_run gives it and what the
# program managed to see or do, then the host is checked (no process, cgroup,
# mount or file left behind). Runs as root (CI); see docs/sandbox.md.
. "$(dirname "$0")/lib.sh"

if ! $CC -O1 -o "$T/hostile" "$ROOT/tests/sandbox/hostile.c" 2>"$T/cc.log"; then
    echo "not ok - compile tests/sandbox/hostile.c"; cat "$T/cc.log"; exit 1
fi
P="--put $T/hostile:hostile-prog"
MARK="cugrade-escape-$$"
MODE=${CUGRADE_SANDBOX_USER:-box}
BOX_BASE=${CUGRADE_SANDBOX_UID_BASE:-1900000000}

# --- the sandbox runs things at all, and reports exit codes ---------------
run $P -- ./hostile-prog exit 0
check "a normal program exits 0 with a clean verdict" all 'has "\"exited\":1,\"exit_code\":0"' 'has "\"message\":\"\""'
run $P -- ./hostile-prog exit 3
check "an exit status is reported as such" all 'has "\"exit_code\":3"' 'has "exited with status 3"'
run -- /bin/sh -c 'kill -SEGV $$'
check "a crash is reported as its signal" all 'has "\"signal\":11"' 'has "Segmentation fault"'
RUN_ENV=CUGRADE_BWRAP=/nonexistent/bwrap; run -- /bin/true; RUN_ENV=
check "a broken sandbox is a system error, not a verdict" has '"rc":-2}'
run --bind /nonexistent-lab-file -- /bin/true
check "a bwrap setup failure (missing bind) is a system error too" has '"rc":-5}'
run -- no-such-command
check "a command that is not found is a verdict (127), not a system error" has '"exit_code":127'
# bwrap's set-up is ours: on a loaded host it can take seconds (a compile
# at nice 19 beside busy cores), which the command's wall limit must not
# count. A bwrap that takes 2 s to start, a 1 s limit, a command of none.
# The bwrap the wrapper would run (tests/gpu/sandbox.sh names dist's).
printf '#!/bin/sh\nsleep 2\nexec %s "$@"\n' "${SANDBOX_TEST_BWRAP:-$(command -v bwrap)}" >"$T/slow-bwrap"
chmod 755 "$T/slow-bwrap"
RUN_ENV=CUGRADE_BWRAP=$T/slow-bwrap; run --wall 1 -- /bin/true; RUN_ENV=
check "a slow set-up is not the command's time: exit 0 under a 1 s wall limit after 2 s of set-up" \
    all 'has "\"exited\":1,\"exit_code\":0"' 'has "\"timed_out\":0"' 'lt 2 "$(num setup_seconds)"'

# --- fork bomb -------------------------------------------------------------
run $P --pids 32 --wall 2 -- ./hostile-prog forkbomb
check "fork bomb: stopped at the time limit" all 'has "\"timed_out\":1"' 'has "time limit exceeded"'
check "fork bomb: nothing left on the host" host_clean
# The bomb above ends at the clock whatever pids.max is: count the forks
# the limit lets through (64 asked, bounded, so a broken limit is harmless).
run $P --pids 32 --wall 10 -- ./hostile-prog forkcount 64
forked=$(printf '%s' "$J" | sed -n 's/.*forked \([0-9]*\) (Resource temporarily unavailable).*/\1/p')
check "pids limit: fork fails with EAGAIN before 32 processes ($forked children)" \
    all 'test -n "$forked"' 'test "$forked" -gt 0' 'test "$forked" -lt 32' 'has "\"exit_code\":0"'
run $P --pids 128 --wall 10 -- ./hostile-prog forkcount 64
check "pids limit, control: the same program forks all 64 under a limit of 128" has "forked 64 (no error)"
check "pids limit: nothing left on the host" host_clean

# --- endless loop: wall clock and CPU --------------------------------------
run $P --wall 1.5 --cpu 30 -- ./hostile-prog spin
w=$(num wall_seconds)
check "endless loop: killed at the wall limit" all 'has "\"timed_out\":1,\"cpu_limit\":0"' 'lt 1.4 $w' 'lt $w 2.5'
run $P --wall 30 --cpu 1 -- ./hostile-prog spin
c=$(num cpu_seconds)
# (the wall time depends on the machine's load; the CPU time must not)
check "endless loop: killed at the CPU limit" all 'has "\"timed_out\":1,\"cpu_limit\":1"' 'has "CPU time limit"' 'lt 0.99 $c' 'lt $c 1.5'
check "endless loop: nothing left on the host" host_clean

# --- sleeping forever, children left behind ----------------------------------
run $P --wall 10 -- ./hostile-prog orphans
w=$(num wall_seconds)
check "orphans: main exits 0, the run ends at once" all 'has "\"exited\":1,\"exit_code\":0"' 'lt $w 3'
check "orphans: setsid()'d grandchildren are gone" host_clean
run $P --wall 1 -- ./hostile-prog orphans wait
check "orphans + sleeping parent: killed at the wall limit" has '"timed_out":1'
check "orphans + sleeping parent: the whole tree is gone" host_clean

# --- the runner itself is killed (crash, OOM): the sandbox dies with it -----
env "$SR" --parent "$T" $P --wall 60 -- ./hostile-prog orphans wait >/dev/null 2>&1 &
RUNNER=$!
echo "$RUNNER" >>"$T/pids"
# Killed only once its program runs (a slow bwrap set-up on a loaded host
# would otherwise leave nothing to outlive the runner, and nothing to find).
started=""
for i in $(seq 1 300); do
    started=$(ps -eo pid=,stat=,comm= | awk '$3 == "hostile-prog" && $2 !~ /^Z/')
    [ -n "$started" ] && break
    sleep 0.1
done
check "runner killed, control: its program was running when the runner was killed" test -n "$started"
sleep 0.3 # (its orphans forked)
kill -9 "$RUNNER"; wait "$RUNNER" 2>/dev/null
alive=""
for i in 1 2 3 4 5 6 7 8 9 10; do
    alive=$(ps -eo pid=,stat=,comm= | awk '$3 == "hostile-prog" && $2 !~ /^Z/')
    [ -z "$alive" ] && break
    sleep 0.2
done
check "runner killed: the whole sandbox dies with it (PDEATHSIG chain)" test -z "$alive"
# Its zombies are its parent's to reap (systemd does; a bare container init
# may not): the host checks leave them out.
ps -eo pid=,stat=,comm= | awk '($3 == "hostile-prog" || $3 == "bwrap") && $2 ~ /^Z/ { print $1 }' >>"$T/ignore"
run --sweep-age 0 -- /bin/true
check "runner killed: its leftover cgroup is swept by the next run" test -z "$(cg_dirs)"
# Killed while bwrap was starting: bwrap 0.8's init waits on an eventfd for
# its parent's go-ahead before it asks for PDEATHSIG, so it outlives the
# killed runner, blocked, re-parented to the host's init, in the run's
# groups for good (seen once in CI: deploy/slurm.t's kill -9). Played here
# by a sleep in a group of a dead runner's name. Beside it, the same kind of
# group whose member a live process of the sweeper's own program (a reaper:
# a runner in a pid namespace we cannot see, say) supervises: never killed.
if [ -n "$CG_PARENTS" ]; then
    dead=$(sh -c 'echo $$')
    cp /bin/sh "$T/sandbox_run"
    setsid sh -c 'sleep 600 & echo $! >"$1"' sh "$T/orphan.pid"
    "$T/sandbox_run" -c 'sleep 600 & echo $! >"$1"; wait' sh "$T/kept.pid" &
    kept_parent=$!
    for _i in 1 2 3 4 5 6 7 8 9 10; do [ -s "$T/kept.pid" ] && [ -s "$T/orphan.pid" ] && break; sleep 0.1; done
    orphan=$(cat "$T/orphan.pid"); kept=$(cat "$T/kept.pid")
    for p in $CG_PARENTS; do
        mkdir "$p/cugrade-$dead-1" "$p/cugrade-$dead-2"
        echo "$orphan" >"$p/cugrade-$dead-1/cgroup.procs"
        echo "$kept" >"$p/cugrade-$dead-2/cgroup.procs"
    done
    run --sweep-age 0 -- /bin/true
    gone=1
    for _i in 1 2 3 4 5 6 7 8 9 10; do
        gone=1
        case "$(ps -o stat= -p "$orphan")" in "" | Z*) ;; *) gone=0 ;; esac
        [ $gone = 1 ] && [ -z "$(find $CG_PARENTS -maxdepth 1 -name "cugrade-$dead-1")" ] && break
        sleep 0.2
    done
    check "runner killed while bwrap started: the orphan left in its groups is killed by the next run's sweep, the groups removed" \
        all '[ $gone = 1 ]' 'test -z "$(find $CG_PARENTS -maxdepth 1 -name "cugrade-$dead-1")"'
    check "a stale-named group whose member a live reaper of ours supervises is left alone" kill -0 "$kept"
    # (the orphan too, where the sweep failed: the host checks below are
    # about the runs after this one)
    kill -9 "$orphan" "$kept" "$kept_parent" 2>/dev/null; wait "$kept_parent" 2>/dev/null
    for _i in 1 2 3 4 5 6 7 8 9 10; do
        rmdir $(find $CG_PARENTS -maxdepth 1 -name "cugrade-$dead-*") 2>/dev/null && break
        sleep 0.2
    done
else
    ok "runner killed while bwrap started: the orphan is swept # SKIP not root (no cgroup parent of the suite's own)"
fi
# Its work directory is the restarted runner's to remove (as it does with
# its job directories): sandbox_workdir_remove on it.
for m in $(grep -o "$T/cugrade-work-[A-Za-z0-9]*" /proc/self/mountinfo); do run --workdir "$m" --remove -- /bin/true; done
check "runner killed: its work directory is removable afterwards" test -z "$(grep "$T" /proc/self/mountinfo)"

# --- memory bomb -----------------------------------------------------------
run $P --mem 64M -- ./hostile-prog membomb
peak=$(num peak_memory_bytes)
check "memory bomb: OOM-killed at the cgroup limit" all 'has "\"oom_killed\":1"' 'has "memory limit exceeded"'
check "memory bomb: peak memory reported near the limit" all 'lt 33554432 $peak' 'lt $peak 71303168'
check "memory bomb: nothing left on the host" host_clean

# --- output flood: killed at the output limit, not left to the clock --------
# (the wall limit is far: a flood that is not killed for its output ends as
# timed_out, and fails these checks)
run $P --output-cap 4096 --output-limit 4M --wall 120 --quiet -- ./hostile-prog flood 0
b=$(num stdout_bytes)
check "endless output: killed at the output limit (4 MiB), not at the time limit" all \
    'has "\"output_limit\":1"' 'has "\"timed_out\":0"' 'has "\"exited\":0"' 'has "output limit exceeded"' \
    'has "\"output_truncated\":1"'
check "endless output: stopped just past the limit (4 MiB < bytes <= 4 MiB + 1.1 MiB)" all 'lt 4194304 $b' 'lt $b 5400000'
run $P --wall 120 --quiet -- ./hostile-prog flood 0 both
o=$(num stdout_bytes); e=$(num stderr_bytes)
check "endless output on stdout and stderr: the default limit (8 MiB) counts both" all \
    'has "\"output_limit\":1"' 'has "\"timed_out\":0"' 'lt 1000000 $o' 'lt 1000000 $e' \
    'lt 8388608 $((o + e))' 'lt $((o + e)) 9600000'
run $P --output-cap 4096 --output-limit 0 --wall 2 --quiet -- ./hostile-prog flood 0
b=$(num stdout_bytes)
check "output limit 0: only truncated, counted, killed at the wall limit" all 'has "\"output_truncated\":1"' \
    'has "\"timed_out\":1"' 'has "\"output_limit\":0"' 'lt 10000000 $b'
check "endless output: nothing left on the host" host_clean
run $P --output-cap 4096 -- ./hostile-prog flood 1000000
check "1 MB of output: kept 4 KiB, counted all, exit 0" all 'has "\"output_truncated\":1"' 'has "\"exit_code\":0"' 'has "\"stdout_bytes\":1003520"' 'has "output truncated to 4096 bytes"'
out_len=$(printf '%s' "$J" | sed -n 's/.*"out":"\([^"]*\)".*/\1/p' | sed 's/\\n/\n/g' | wc -c)
check "1 MB of output: the kept part is at most the cap" lt "$out_len" 4200

# --- disk fill -------------------------------------------------------------
run $P --workdir-size 8M --fsize 64M -- ./hostile-prog diskfill
bytes=$(printf '%s' "$J" | sed -n 's/.*after \([0-9]*\) bytes.*/\1/p')
check "disk fill: writes stop at the work directory's cap" all 'has "stopped"' 'lt ${bytes:-99999999} 8388609' 'has "\"exit_code\":0"'
run $P --workdir-size 16M --fsize 2M -- ./hostile-prog bigfile
check "one huge file: killed at RLIMIT_FSIZE (SIGXFSZ)" all 'has "\"signal\":25"' 'has "\"file_limit\":1"' 'has "file size limit"'
run $P --mem 64M --wall 10 -- ./hostile-prog diskfill /tmp
check "filling /tmp: bounded by the memory limit" all 'has "No space left on device" || has "\"oom_killed\":1"' 'lacks "\"timed_out\":1"'
run $P --wall 10 -- ./hostile-prog diskfill /dev/shm
check "filling /dev/shm: bounded too" all 'has "No space left on device" || has "\"oom_killed\":1"' 'lacks "\"timed_out\":1"'

# --- writes outside the work directory -------------------------------------
run $P -- ./hostile-prog escape "/etc/$MARK" "/usr/$MARK" "/$MARK" "/tmp/$MARK" "/sys/$MARK" \
    "/proc/$MARK" "/work/../$MARK.up" "$T/$MARK" "/usr/local/cuda/$MARK"
nwrote=$(printf '%s' "$J" | sed 's/\\n/\n/g' | grep -c ': WROTE')
check "writes outside: / /etc /usr /sys /proc all refused, only /tmp (private) writable" all \
    'has "/etc/$MARK: Read-only file system"' 'has "/usr/$MARK: Read-only file system"' \
    'has "/sys/$MARK: Read-only file system"' 'has "/tmp/$MARK: WROTE"' 'test "$nwrote" = 1'
found=$(ls -d /etc/$MARK* /usr/$MARK* /$MARK* /tmp/$MARK* /sys/$MARK* /usr/local/cuda/$MARK* "$T"/$MARK* "$T"/*/$MARK* 2>/dev/null)
check "writes outside: nothing appeared on the host (/tmp is private)" test -z "$found"

# --- a link planted as the output file --------------------------------------
mkdir -p "$T/canary" && echo alive >"$T/canary/file"
run $P --keep -- ./hostile-prog plant "$T/canary"
WD=$(printf '%s' "$J" | sed -n 's/.*"workdir":"\([^"]*\)".*/\1/p')
check "plant: the program planted its links" all 'has "symlink: 0"' 'has "mkfifo: 0"' 'test -n "$WD"'
check "plant: no hard link to a host file (separate filesystem)" has "hardlink: Invalid cross-device link"
run --workdir "$WD" --take out.txt -- /bin/true
check "take_file refuses a symlink to /etc/passwd (-ELOOP)" all 'has "\"take_rc\":-40"' 'lacks "root:"'
run --workdir "$WD" --take rel.txt -- /bin/true
check "take_file refuses a relative symlink (-ELOOP)" all 'has "\"take_rc\":-40"' 'lacks "root:"'
run --workdir "$WD" --take d/etc/passwd -- /bin/true
check "take_file refuses a path through a linked directory" all 'lacks "\"take_rc\":0"' 'lacks "root:"'
run --workdir "$WD" --take ../../../../etc/passwd -- /bin/true
check "take_file refuses a name climbing out of the work directory" all 'lacks "\"take_rc\":0"' 'lacks "root:"'
RUN_ENV=; run --workdir "$WD" --take fifo -- /bin/true
check "take_file refuses a FIFO without hanging (-EINVAL)" has '"take_rc":-22'
run --workdir "$WD" --remove -- /bin/sh -c 'head -c 5000 /dev/zero > /work/big; echo ok > /work/small'
check "workdir_remove does not follow links into the host" all 'has "\"remove_rc\":0"' 'test -f "$T/canary/file"' 'test ! -e "$WD"'

# take_file size cap and regular file, on a fresh dir
run $P --keep -- /bin/sh -c 'head -c 5000 /dev/zero > big; echo hello > small'
WD=$(printf '%s' "$J" | sed -n 's/.*"workdir":"\([^"]*\)".*/\1/p')
run --workdir "$WD" --take small -- /bin/true
check "take_file returns a regular file" has '"take_rc":0,"take":"hello\n"'
run --workdir "$WD" --take big:4096 --remove -- /bin/true
check "take_file refuses a file over its cap (-EFBIG)" has '"take_rc":-27'

# --- secrets: /etc/shadow, /proc/1/environ, the runner's environment --------
if grep -q '^root:' /etc/shadow 2>/dev/null; then ok "control: the host's /etc/shadow exists and is readable by root"
else nok "control: the host's /etc/shadow exists and is readable by root"; fi
RUN_ENV="CUGRADE_SECRET=s3cr3t-token-$$"; run $P -- ./hostile-prog read /etc/shadow /proc/1/environ /proc/1/cmdline /etc/passwd /root/.bashrc; RUN_ENV=
check "reading /etc/shadow: not there" all 'has "/etc/shadow: No such file or directory"' 'lacks "root:"'
check "reading /proc/1/environ: no runner environment" all 'has "/proc/1/environ: read"' 'lacks "s3cr3t-token"' 'lacks "CUGRADE_SECRET"'
check "reading /proc/1/cmdline: no host paths or environment" all 'lacks "s3cr3t"' 'lacks "$T"' 'lacks "--setenv"'

# --- listing / -------------------------------------------------------------
run $P -- ./hostile-prog ls /
extra=$(printf '%s' "$J" | sed -n 's/.*"out":"\([^"]*\)".*/\1/p' | sed 's/\\n/\n/g' |
    grep -vxE 'bin|dev|etc|lib|lib32|lib64|libx32|proc|sbin|sys|tmp|usr|work|' || true)
check "listing /: only the system dirs, /proc /dev /sys /tmp /work" test -z "$extra"
run $P -- ./hostile-prog ls /etc
extra=$(printf '%s' "$J" | sed -n 's/.*"out":"\([^"]*\)".*/\1/p' | sed 's/\\n/\n/g' |
    grep -vxE 'ld.so.cache|ld.so.conf|ld.so.conf.d|alternatives|localtime|' || true)
check "listing /etc: only what the linker and compilers need" test -z "$extra"
run $P -- ./hostile-prog ls /dev
check "listing /dev: no disks, no GPU unless given" all 'lacks "nvidia"' 'lacks "sda"' 'lacks "vda"' 'lacks "kmsg"' 'lacks "mem\\n"'

# --- network ---------------------------------------------------------------
"$T/hostile" listen "$T/port" & LISTENER=$!
for i in 1 2 3 4 5 6 7 8 9 10; do [ -s "$T/port" ] && break; sleep 0.1; done
PORT=$(cat "$T/port" 2>/dev/null)
if "$T/hostile" connect 127.0.0.1 "$PORT" | grep -q CONNECTED; then ok "control: the host listener on 127.0.0.1:$PORT accepts"
else nok "control: the host listener on 127.0.0.1:$PORT accepts"; fi
run $P -- ./hostile-prog connect 127.0.0.1 "$PORT"
check "connect to the host's 127.0.0.1: refused (empty network namespace)" all 'lacks "CONNECTED"' 'has "\"exit_code\":1"'
run $P -- ./hostile-prog connect 1.1.1.1 80
check "connect to an outside address: unreachable" all 'lacks "CONNECTED"' 'has "\"exit_code\":1"'
kill "$LISTENER" 2>/dev/null; wait "$LISTENER" 2>/dev/null; LISTENER=""

# --- ptrace and friends ------------------------------------------------------
run $P -- ./hostile-prog ptrace
check "ptrace of the parent, pid 1, process_vm_readv: all EPERM" all \
    'has "ptrace attach parent: Operation not permitted"' 'has "ptrace attach pid 1: Operation not permitted"' \
    'has "process_vm_readv: Operation not permitted"' 'lacks "ATTACHED"' 'lacks "TRACED"' 'lacks "READ\\n"'

# --- inherited descriptors ----------------------------------------------------
echo "runner-private" >"$T/private"
run $P -- ./hostile-prog fds 7<"$T/private" 9<"$T/private"
check "inherited descriptors: the child sees only 0 1 2" has '"out":"fds: 0 1 2\n"'
run $P --result-file "$T/result" -- ./hostile-prog fds 7<"$T/private"
check "result channel: fd 3 and nothing else" has '"out":"fds: 0 1 2 3\nfd3 write: 10\n"'
check "result channel: what fd 3 got reached the runner" grep -qx RESULT-OK "$T/result"

# --- environment -------------------------------------------------------------
RUN_ENV="CUGRADE_SECRET=s3cr3t-$$"; run $P --env PATH=/usr/bin:/bin --env FOO=bar -- ./hostile-prog env; RUN_ENV=
check "environment: only the given variables (and bwrap's PWD)" has '"out":"PATH=/usr/bin:/bin\nFOO=bar\nPWD=/work\n"'

# --- identity, capabilities, seccomp ------------------------------------------
# Box mode: uid 65534 inside (bwrap's unprivileged user namespace); root mode
# (CUGRADE_SANDBOX_USER=root, hostile_root.t): uid 0 inside a namespace we
# made. Both: the host uid is the box's, never root, no capabilities.
if [ "$MODE" = root ]; then INSIDE=0; else INSIDE=65534; fi
run $P -- ./hostile-prog status
check "status: uid $INSIDE inside, no capabilities at all, no_new_privs, seccomp on" all \
    'has "Uid:\\u0009$INSIDE\\u0009"' 'has "CapEff:\\u00090000000000000000"' 'has "CapPrm:\\u00090000000000000000"' \
    'has "CapBnd:\\u00090000000000000000"' 'has "CapInh:\\u00090000000000000000"' \
    'has "NoNewPrivs:\\u00091"' 'has "Seccomp:\\u00092"' 'has "hostname: cugrade"'
run $P --keep -- /bin/sh -c 'echo x > /work/owner'
WD=$(printf '%s' "$J" | sed -n 's/.*"workdir":"\([^"]*\)".*/\1/p')
hu=$(num host_uid)
owner=$(stat -c %u "$WD/owner" 2>/dev/null)
run --workdir "$WD" --remove -- /bin/true
echo "# host uid of the sandboxed program: $owner (mode $MODE; boxes from $BOX_BASE)"
check "identity: the program's host uid is its box's (not root, not 65534), as the verdict says" all \
    'test "$owner" = "$hu"' 'test "$owner" -ge "$BOX_BASE"' 'test "$owner" -lt "$((BOX_BASE + 1000))"'

# --- files only root may read (/proc, /sys) ---------------------------------
# The old root-mapped mode ran the program as host root: root-only files were
# readable, and reading /sys/class/zram-control/hot_add made a zram device.
# Only access() is asked of /sys (no read: no side effect even if it failed).
RO=""
for f in /proc/timer_list /proc/slabinfo /proc/vmallocinfo; do
    [ "$(stat -c %a:%u "$f" 2>/dev/null)" = 400:0 ] && RO="$RO $f"
done
RS=""
for f in /sys/class/zram-control/hot_add $(ls -d /sys/kernel/slab/*/objects 2>/dev/null | head -n 1); do
    [ "$(stat -c %a:%u "$f" 2>/dev/null)" = 400:0 ] && RS="$RS $f"
done
if [ -n "$RO" ]; then
    run $P -- ./hostile-prog read $RO
    n=$(printf '%s' "$J" | grep -o 'Permission denied' | wc -l)
    check "root-only files under /proc ($RO ): permission denied" all 'lacks ": read "' 'test "$n" = "$(echo $RO | wc -w)"'
else
    ok "root-only files under /proc: none on this host to try # SKIP"
fi
if [ -n "$RS" ]; then
    run $P -- ./hostile-prog access $RS
    n=$(printf '%s' "$J" | grep -o 'Permission denied' | wc -l)
    check "root-only files under /sys ($RS ): not readable" all 'lacks "READABLE"' 'test "$n" = "$(echo $RS | wc -w)"'
else
    ok "root-only files under /sys: none on this host to try # SKIP"
fi
# (The old root-mapped mode could write /proc/sys/kernel/core_pattern on the
# host: bwrap leaves /proc/sys writable when it looks read-only to it, and
# host root owns those files. Asked with access(W_OK) only: never written.)
run $P -- ./hostile-prog waccess /proc/sysrq-trigger /proc/sys/kernel/core_pattern /proc/sys/vm/drop_caches \
    /sys/kernel/uevent_helper /proc/sys/user/max_user_namespaces
check "/proc/sysrq-trigger, /proc/sys (core_pattern...), /sys: not writable" all 'lacks "WRITABLE"' \
    'has "core_pattern: Permission denied" || has "core_pattern: Read-only file system"'

# --- a GPU node open to its group only (root:video 0660): the box joins it -----
# (control: the host itself opens it there, i.e. $T is not mounted nodev)
if mknod "$T/gpunode" c 1 3 2>/dev/null && chown root:44 "$T/gpunode" && chmod 0660 "$T/gpunode" &&
    (echo x >"$T/gpunode") 2>/dev/null; then
    run --dev "$T/gpunode" -- /bin/sh -c "echo x > $T/gpunode && echo OPENED"
    check "a device node open to its group only is usable (supplementary group)" has 'OPENED'
    chmod 0600 "$T/gpunode"
    run --dev "$T/gpunode" -- /bin/sh -c "echo x > $T/gpunode && echo OPENED"
    check "a device node open to root alone is not" all 'lacks "OPENED"' 'grep -q "open to root alone" "$T/stderr"'
else
    ok "device node by group: no device node can be made and opened in $T # SKIP"
fi

# --- per-box uids: one job's per-user kernel limits are its own ----------------
# Every job ran as host uid 65534: one that took all 128 inotify instances
# (fs.inotify.max_user_instances) left none to a job running beside it.
MAXI=$(cat /proc/sys/fs/inotify/max_user_instances 2>/dev/null || echo 0)
if [ "$MAXI" -gt 0 ] && [ "$MAXI" -le 8192 ]; then
    run --keep -- /bin/true
    HWD=$(printf '%s' "$J" | sed -n 's/.*"workdir":"\([^"]*\)".*/\1/p')
    : >"$T/held"
    env $RUN_ENV "$SR" --parent "$T" --workdir "$HWD" $P --nofile $((MAXI + 64)) --wall 60 --result-file "$T/held" \
        -- ./hostile-prog inotify $((MAXI + 10)) hold >"$T/hog.json" 2>"$T/hog.err" &
    HOG=$!
    echo "$HOG" >>"$T/pids"
    for i in $(seq 1 300); do grep -q HELD "$T/held" && break; sleep 0.1; done
    held=$(cat "$T/held")
    check "inotify hog: holds every instance its uid may have ($MAXI, then EMFILE)" \
        test "$held" = "HELD $MAXI Too many open files"
    run $P -- ./hostile-prog inotify 1
    other=$(num host_uid)
    check "while the hog holds them, a job beside it still gets an inotify instance" has "inotify: got 1 (no error)"
    touch "$HWD/stop"
    wait "$HOG"
    J=$(cat "$T/hog.json")
    check "inotify hog: ended normally once told to, with its own host uid" all 'has "\"exit_code\":0"' \
        'test "$(num host_uid)" != "$other"'
    run --workdir "$HWD" --remove -- /bin/true
else
    ok "per-box uids: fs.inotify.max_user_instances is $MAXI, too many to hold in a test # SKIP"
fi

run $P -- ./hostile-prog syscalls
allowed=$(printf '%s' "$J" | sed -n 's/.*"out":"\([^"]*\)".*/\1/p' | sed 's/\\n/\n/g' | grep ALLOWED |
    grep -v -e personality_query -e personality_linux: -e socket_unix)
check "seccomp: keyctl bpf perf io_uring userfaultfd unshare mount setns vsock... denied" all 'test -z "$allowed"' 'has "socket_unix: ALLOWED"'
# personality(0x80000000 | ADDR_NO_RANDOMIZE) passed the old rule and turned ASLR off
check "seccomp: personality only queries and PER_LINUX (bit 31 set or not, high bits)" all \
    'has "personality_aslr_off_bit31: Operation not permitted"' 'has "personality_read_implies_exec_bit31: Operation not permitted"' \
    'has "personality_top_bit: Operation not permitted"' 'has "personality_high_bits: Operation not permitted"' \
    'has "personality_linux32: Operation not permitted"' 'has "personality_query: ALLOWED"' 'has "personality_linux: ALLOWED"'
run $P -- ./hostile-prog i386
# (31: our filter's SIGSYS; 11: a kernel booted without ia32 emulation)
check "seccomp: an i386 system call (int 0x80) kills the process" all 'has "\"signal\":31" || has "\"signal\":11"' 'lacks "NOT KILLED"'
run $P -- ./hostile-prog x32
check "seccomp: an x32 system call kills the process" all 'has "\"signal\":31"' 'lacks "NOT KILLED"'

# --- the host, at the end ----------------------------------------------------
host_clean >/dev/null || true  # the kernel's moment to reap (2 s at most): a leftover stays
left=$(sandbox_procs | tr '\n' ' '); J="processes left: $left"
check "host: no process left behind" test -z "$left"
left=$(cg_dirs | tr '\n' ' '); J="cgroups left: $left"
check "host: no cgroup left behind" test -z "$left"
check "host: no work directory mount left behind" test -z "$(grep "$T" /proc/self/mountinfo)"
exit 0
