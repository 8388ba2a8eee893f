#!/bin/sh
# What the runner's sandbox needs from its host or container, checked one by
# one (docs/deploy.md, "Least privilege"). Prints a table; exit 1 if a
# required item is missing. --quiet prints only what is missing.
#
#   sh deploy/container/check-host.sh [--quiet]
set -u
quiet=0
[ "${1:-}" = --quiet ] && quiet=1
PREFIX=$(cd "$(dirname "$0")/.." && pwd)
bad=0
row() { # required(1/0) ok(1/0) item detail
    if [ "$2" = 1 ]; then
        [ $quiet = 1 ] || printf '%-34s ok       %s\n' "$3" "$4"
    elif [ "$1" = 1 ]; then
        printf '%-34s MISSING  %s\n' "$3" "$4"; bad=1
    else
        [ $quiet = 1 ] || printf '%-34s absent   %s\n' "$3" "$4"
    fi
}
[ "$(id -u)" = 0 ] && r=1 || r=0
row 1 $r "root in the container" "uid $(id -u): sets up cgroups, mounts, drops to nobody"
# User namespaces: bwrap --unshare-user (Ubuntu 24.04 hosts may restrict them
# to AppArmor-profiled programs: kernel.apparmor_restrict_unprivileged_userns).
bw=""
for b in "$PREFIX/dist/bwrap" "${CUGRADE_BWRAP:-}" /usr/bin/bwrap; do
    [ -n "$b" ] && [ -x "$b" ] && { bw=$b; break; }
done
[ -n "$bw" ] && r=1 || r=0
row 1 $r "bubblewrap" "${bw:-none}"
if [ -n "$bw" ]; then
    LD_LIBRARY_PATH="$PREFIX/dist/lib" "$bw" --unshare-all --die-with-parent --ro-bind / / --proc /proc \
        --dev /dev /bin/true 2>/tmp/cugrade-check.$$ && r=1 || r=0
    row 1 $r "namespaces (user, pid, net, mount)" "$(head -c 120 /tmp/cugrade-check.$$ | tr '\n' ' ')"
    rm -f /tmp/cugrade-check.$$
fi
mx=$(cat /proc/sys/user/max_user_namespaces 2>/dev/null || echo 0)
[ "$mx" -gt 0 ] && r=1 || r=0
row 1 $r "user.max_user_namespaces > 0" "$mx"
# cgroup v2, writable: memory/pids limits per job (a delegated subtree is enough).
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    ctl=$(cat /sys/fs/cgroup/cgroup.controllers)
    case " $ctl " in *" memory "*) r=1 ;; *) r=0 ;; esac
    row 1 $r "cgroup v2 with memory, pids" "$ctl"
    d=/sys/fs/cgroup/cugrade-check.$$
    mkdir "$d" 2>/dev/null && rmdir "$d" && r=1 || r=0
    row 1 $r "cgroup tree writable (delegated)" "/sys/fs/cgroup"
else
    row 1 0 "cgroup v2 with memory, pids" "no /sys/fs/cgroup/cgroup.controllers"
fi
# seccomp: the runner installs its own filter; the container's own profile
# must let bwrap make namespaces (clone/unshare/mount/pivot_root).
s=$(awk '/^Seccomp:/ {print $2}' /proc/self/status)
row 0 1 "seccomp mode of this process" "${s:-?} (0 none, 2 filter: a container profile is on)"
nn=$(awk '/^NoNewPrivs:/ {print $2}' /proc/self/status)
row 0 1 "no_new_privs" "${nn:-?} (fine either way: bwrap is not setuid here)"
# The GPU: device nodes and the driver's tools, from --gpus / the device plugin.
ls /dev/nvidia[0-9]* >/dev/null 2>&1 && r=1 || r=0
row 1 $r "GPU device nodes" "$(ls /dev/nvidia[0-9]* 2>/dev/null | tr '\n' ' ')"
command -v nvidia-smi >/dev/null 2>&1 && g=$(nvidia-smi -L 2>/dev/null | head -n 1) || g=""
[ -n "$g" ] && r=1 || r=0
row 1 $r "nvidia-smi sees a GPU" "$g"
cuda=${CUDA_HOME:-/usr/local/cuda}
[ -x "$cuda/bin/nvcc" ] && r=1 || r=0
row 1 $r "CUDA toolkit (nvcc)" "$("$cuda/bin/nvcc" --version 2>/dev/null | tail -n 2 | head -n 1)"
[ -x "$cuda/bin/compute-sanitizer" ] && r=1 || r=0
row 0 $r "compute-sanitizer" "$cuda/bin/compute-sanitizer"
command -v python3 >/dev/null 2>&1 && r=1 || r=0
row 1 $r "python3 (the labs' judges)" "$(python3 --version 2>&1)"
exit $bad
