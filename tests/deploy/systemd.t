#!/bin/sh
# deploy/systemd's units pass `systemd-analyze verify` (Debian's systemd): the
# server, one runner instance (cugrade-runner@0), the backup service and its
# timer, with /opt/cugrade pointing at this build. Any warning fails, and so
# does a unit with a bad key or a missing binary (the control). TAP.
set -u
ROOT=${CUGRADE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${CUGRADE_BUILD:-$ROOT/build}
if ! command -v systemd-analyze >/dev/null 2>&1; then
    echo "ok - # SKIP no systemd-analyze (apt-get install systemd)"
    exit 0
fi
T=$(mktemp -d /tmp/cugrade-systemd.XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
mkdir -p "$T/opt/build" "$T/opt/dist"
ln -s "$BUILD/cugrade-server" "$T/opt/build/cugrade-server"
ln -s "$BUILD/cugrade-runner" "$T/opt/dist/cugrade-runner"
for u in "$ROOT"/deploy/systemd/*; do
    sed "s|/opt/cugrade|$T/opt|g" "$u" >"$T/$(basename "$u")"
done
mv "$T/cugrade-runner@.service" "$T/cugrade-runner@0.service"
fail=0
verify() { # name, units...
    name=$1; shift
    out=$(cd "$T" && systemd-analyze verify --man=no "$@" 2>&1)
    rc=$?
    if [ "$rc" -eq 0 ] && [ -z "$out" ]; then
        echo "ok - $name"
    else
        echo "not ok - $name"; echo "$out" | sed 's/^/#   /'; fail=1
    fi
}
verify "cugrade-server.service verifies without a warning" "$T/cugrade-server.service"
verify "cugrade-runner@0.service verifies without a warning" "$T/cugrade-runner@0.service"
verify "cugrade-backup.service and .timer verify without a warning" "$T/cugrade-backup.service" "$T/cugrade-backup.timer"
grep -q '^Delegate=yes' "$T/cugrade-runner@0.service" && grep -q -- '--gpu %i' "$T/cugrade-runner@0.service" &&
    ! grep -Eq '^(ProtectControlGroups|RestrictNamespaces|PrivateDevices|SystemCallFilter)=' "$T/cugrade-runner@0.service" &&
    echo "ok - the runner unit delegates its cgroup, takes the GPU from the instance, keeps namespaces, devices and cgroupfs" ||
    { echo "not ok - the runner unit delegates its cgroup, takes the GPU from the instance, keeps namespaces, devices and cgroupfs"; fail=1; }
# The control: verify does catch a bad unit here.
sed -e 's/^Delegate=yes/Delegate=yes\nDelegateEverything=1/' -e "s|$T/opt/dist/cugrade-runner|$T/opt/dist/missing|" \
    "$T/cugrade-runner@0.service" >"$T/broken@0.service"
out=$(cd "$T" && systemd-analyze verify --man=no "$T/broken@0.service" 2>&1)
case "$out" in
*"Unknown key"*"not executable"*|*"not executable"*"Unknown key"*) echo "ok - a bad key and a missing binary are reported (the check can fail)" ;;
*) echo "not ok - a bad key and a missing binary are reported (the check can fail)"; echo "$out" | sed 's/^/#   /'; fail=1 ;;
esac
exit $fail
