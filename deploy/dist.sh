#!/bin/sh
# Pack what a GPU host needs to run cugrade without our build dependencies:
#   sh deploy/dist.sh BUILD DIST        (make dist runs it)
#
#   DIST/cugrade-server, DIST/cugrade-runner, DIST/cugrade-launch   (when built)
#   DIST/tools/*      every test tool from BUILD/tests/tools (sandbox_run...)
#   DIST/bwrap        Debian's bubblewrap (the GPU host has none)
#   DIST/lib/         every shared library those need per ldd, except the
#                     base system's (glibc, libgcc, libstdc++: the GPU host is
#                     Ubuntu 24.04 with a newer glibc, and must use its own)
#   DIST/env.sh       `. DIST/env.sh` sets LD_LIBRARY_PATH and CUGRADE_BWRAP
#
# LD_LIBRARY_PATH is only for our binaries: run the host's own tools (nvcc,
# nvidia-smi) with `env -u LD_LIBRARY_PATH` or before sourcing env.sh. The
# sandbox never passes it into a sandboxed command (bwrap --clearenv).
set -eu
BUILD=${1:-build}
DIST=${2:-dist}
BWRAP=${BWRAP:-/usr/bin/bwrap}

rm -rf "$DIST"
mkdir -p "$DIST/lib" "$DIST/tools"

bins=""
for b in cugrade-server cugrade-runner cugrade-launch; do
    if [ -x "$BUILD/$b" ]; then
        cp "$BUILD/$b" "$DIST/$b"
        bins="$bins $DIST/$b"
    else
        echo "dist: $BUILD/$b not built; skipped" >&2
    fi
done
for t in "$BUILD"/tests/tools/*; do
    case "$t" in *.o|*.d) continue ;; esac
    [ -f "$t" ] && [ -x "$t" ] || continue
    cp "$t" "$DIST/tools/"
    bins="$bins $DIST/tools/$(basename "$t")"
done
if [ ! -x "$BWRAP" ]; then
    echo "dist: no bubblewrap at $BWRAP (apt-get install bubblewrap)" >&2
    exit 1
fi
cp "$BWRAP" "$DIST/bwrap"
bins="$bins $DIST/bwrap"

# The base system: provided by every glibc host, and must match its loader.
is_base() {
    case "$1" in
    linux-vdso.so.*|ld-linux*|libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|\
    libresolv.so.*|libutil.so.*|libanl.so.*|libnsl.so.*|libBrokenLocale.so.*|libmvec.so.*|\
    libgcc_s.so.*|libstdc++.so.*)
        return 0 ;;
    esac
    return 1
}

for b in $bins; do
    ldd "$b" 2>/dev/null | while read -r name arrow path _rest; do
        [ "$arrow" = "=>" ] || continue
        is_base "$name" && continue
        case "$path" in /*) ;; *) echo "dist: $b needs $name, not found" >&2; exit 1 ;; esac
        [ -e "$DIST/lib/$name" ] || cp -L "$path" "$DIST/lib/$name"
    done
done

cat >"$DIST/env.sh" <<'EOF'
# Source me: . dist/env.sh   (or set CUGRADE_DIST first when sourcing from elsewhere)
if [ -z "${CUGRADE_DIST:-}" ]; then
    if [ -n "${BASH_SOURCE:-}" ]; then
        CUGRADE_DIST=$(cd "$(dirname "$BASH_SOURCE")" && pwd)
    elif [ -f ./env.sh ] && [ -x ./bwrap ]; then
        CUGRADE_DIST=$(pwd)
    else
        CUGRADE_DIST=$(pwd)/dist
    fi
fi
export CUGRADE_DIST
export LD_LIBRARY_PATH="$CUGRADE_DIST/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CUGRADE_BWRAP="$CUGRADE_DIST/bwrap"
export PATH="$CUGRADE_DIST:$CUGRADE_DIST/tools:$PATH"
EOF
echo "dist: $(ls "$DIST" | tr '\n' ' ')"
echo "dist/lib: $(ls "$DIST/lib" | tr '\n' ' ')"
