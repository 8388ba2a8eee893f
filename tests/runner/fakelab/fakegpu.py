"""A fake GPU for the runner's CI suites: a fake nvidia-smi on PATH (the
runner then sees one H100) and a fake libcuda.so.1 that answers the GPU
probe (`cugrade-runner gpu-probe`, runner/gpu/health.c). cuInit fails with
CUDA_ERROR_NO_DEVICE while the file `dead` exists (the GPU "fell off"),
sleeps 60 s while the file `hang` exists (a driver that does not answer),
and its allocation fails with CUDA_ERROR_OUT_OF_MEMORY while the file
`gpu-memory-full` beside them exists (oom_path).
make(tmp) builds both under tmp and returns the environment to add and the
two paths."""
import os
import subprocess

DRIVER = r'''
#include <stdlib.h>
#include <unistd.h>
int cuInit(unsigned fl) { (void)fl; const char *d = getenv("FAKE_CUDA_DEAD");
    const char *h = getenv("FAKE_CUDA_HANG");
    if (h && access(h, F_OK) == 0) sleep(60);
    return d && access(d, F_OK) == 0 ? 100 : 0; }
int cuGetErrorName(int e, const char **s) { *s = e == 100 ? "CUDA_ERROR_NO_DEVICE" : e == 2 ? "CUDA_ERROR_OUT_OF_MEMORY" : "CUDA_ERROR_UNKNOWN"; return 0; }
int cuDeviceGet(int *d, int o) { *d = o; return 0; }
int cuDevicePrimaryCtxRetain(void **c, int d) { (void)d; *c = (void *)1; return 0; }
int cuCtxSetCurrent(void *c) { (void)c; return 0; }
int cuMemAlloc_v2(unsigned long long *p, size_t n) { (void)n; *p = 4096;
    const char *o = getenv("FAKE_CUDA_OOM"); return o && access(o, F_OK) == 0 ? 2 : 0; }
int cuMemsetD8_v2(unsigned long long p, unsigned char v, size_t n) { (void)p; (void)v; (void)n; return 0; }
int cuCtxSynchronize(void) { return 0; }
int cuMemFree_v2(unsigned long long p) { (void)p; return 0; }
'''

SMI = ('#!/bin/sh\ncase "$1" in --query-gpu=*) echo "0, NVIDIA H100 80GB HBM3, 9.0, 00000000:19:00.0"; '
       'exit 0;; esac\nexit 2\n')


def make(tmp):
    """(env additions, dead path, hang path) for a fake GPU built in tmp."""
    lib, fbin = os.path.join(tmp, "fakegpu-lib"), os.path.join(tmp, "fakegpu-bin")
    os.makedirs(lib, exist_ok=True)
    os.makedirs(fbin, exist_ok=True)
    src = os.path.join(tmp, "fakegpu.c")
    with open(src, "w") as f:
        f.write(DRIVER)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", os.path.join(lib, "libcuda.so.1"), src],
                   check=True)
    with open(os.path.join(fbin, "nvidia-smi"), "w") as f:
        f.write(SMI)
    os.chmod(os.path.join(fbin, "nvidia-smi"), 0o755)
    dead, hang = os.path.join(tmp, "gpu-is-gone"), os.path.join(tmp, "driver-hangs")
    env = {"PATH": fbin + ":" + os.environ["PATH"], "LD_LIBRARY_PATH": lib,
           "FAKE_CUDA_DEAD": dead, "FAKE_CUDA_HANG": hang, "FAKE_CUDA_OOM": oom_path(tmp)}
    return env, dead, hang


def oom_path(tmp):
    """The file that makes the fake GPU's allocation fail (memory full)."""
    return os.path.join(tmp, "gpu-memory-full")
