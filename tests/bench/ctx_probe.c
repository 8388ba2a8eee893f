/*
 * ctx_probe.c - the CUDA driver's steps of a process's start, timed one by
 * one (tests/bench/share_bench.py's `drv` scenario runs many at once):
 *
 *   cuInit | cuDevicePrimaryCtxRetain + cuCtxSetCurrent | cuMemAlloc of MB
 *   MiB | cuMemFree | cuDevicePrimaryCtxRelease
 *
 * Prints one line of milliseconds: init ctx alloc free release.
 *
 *   cc -O2 -I/usr/local/cuda/include tests/bench/ctx_probe.c \
 *      -L/usr/local/cuda/lib64/stubs -lcuda -o ctx_probe
 *   ./ctx_probe [MB]          (default 1024; 0: no allocation)
 *   ./ctx_probe hold          keep a context on the GPU until killed (as the
 *                             runner's gpu-hold does)
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

#define CK(call)                                                                                   \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            fprintf(stderr, "ctx_probe: %s: error %d\n", #call, (int)r_);                          \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

int main(int argc, char **argv)
{
    int hold = argc > 1 && strcmp(argv[1], "hold") == 0;
    size_t mb = argc > 1 && !hold ? strtoull(argv[1], NULL, 10) : 1024;
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr p = 0;
    double t[6];
    if (hold) {
        CK(cuInit(0));
        CK(cuDeviceGet(&dev, 0));
        CK(cuDevicePrimaryCtxRetain(&ctx, dev));
        for (;;)
            pause();
    }
    t[0] = now_ms();
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    t[1] = now_ms();
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuCtxSynchronize());
    t[2] = now_ms();
    if (mb) {
        CK(cuMemAlloc(&p, mb << 20));
        CK(cuMemsetD8(p, 0, mb << 20));
    }
    CK(cuCtxSynchronize());
    t[3] = now_ms();
    if (mb)
        CK(cuMemFree(p));
    t[4] = now_ms();
    CK(cuDevicePrimaryCtxRelease(dev));
    t[5] = now_ms();
    printf("%.1f %.1f %.1f %.1f %.1f\n", t[1] - t[0], t[2] - t[1], t[3] - t[2], t[4] - t[3],
           t[5] - t[4]);
    return 0;
}
