#!/bin/sh
# Install a cugrade runner from a source tree that holds dist/ (make dist),
# labs/, reference/ and rubrics/ into PREFIX. The container recipe's one build step
# (Containerfile), and the same on a plain Ubuntu 24.04 + CUDA 13 host:
#
#   make dist && sh deploy/container/install.sh . /opt/cugrade
#
# Nothing is downloaded: dist/ carries our binaries, their shared libraries
# (not the base system's: glibc, libstdc++ come from the image) and Debian's
# bubblewrap, so the step works offline and adds nothing the runner does not
# use. What the image already has and the runner uses: the CUDA toolkit
# (nvcc, compute-sanitizer, cuBLAS) under /usr/local/cuda, python3 (the
# labs' judges), nvidia-smi (mounted by the NVIDIA container toolkit).
set -eu
SRC=${1:?usage: install.sh SRC PREFIX}
PREFIX=${2:-/opt/cugrade}
SRC=$(cd "$SRC" && pwd)
for need in dist/cugrade-runner dist/cugrade-launch dist/bwrap dist/env.sh labs rubrics reference; do
    if [ ! -e "$SRC/$need" ]; then
        echo "install.sh: $SRC/$need is missing (run make dist in the source tree)" >&2
        exit 1
    fi
done
mkdir -p "$PREFIX"
rm -rf "$PREFIX/dist" "$PREFIX/labs" "$PREFIX/rubrics" "$PREFIX/reference"
cp -r "$SRC/dist" "$PREFIX/dist"
# Only the runner's side: the server and the test tools stay out of the image.
rm -rf "$PREFIX/dist/cugrade-server" "$PREFIX/dist/tools"
cp -r "$SRC/labs" "$PREFIX/labs"
cp -r "$SRC/rubrics" "$PREFIX/rubrics"
# The labs' judges, reference kernels and CPU baselines (labs/build-lab.sh).
cp -r "$SRC/reference" "$PREFIX/reference"
mkdir -p "$PREFIX/bin"
cp "$SRC/deploy/container/entrypoint.sh" "$SRC/deploy/container/check-host.sh" "$PREFIX/bin/"
# The sandbox drops to uid nobody before it execs bwrap and the student's
# program: the binaries, libraries and labs must be readable by everyone and
# writable by root only (a writable lab file would be a way into the next job).
chown -R 0:0 "$PREFIX"
chmod -R go-w,go+rX "$PREFIX"
chmod 755 "$PREFIX" "$PREFIX/bin/entrypoint.sh" "$PREFIX/bin/check-host.sh"
# Caches and per-job directories live on a volume or tmpfs, not in the image.
mkdir -p /var/lib/cugrade-runner
chmod 755 /var/lib/cugrade-runner
echo "install.sh: runner installed in $PREFIX ($(du -sh "$PREFIX" | cut -f1))"
