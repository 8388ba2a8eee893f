// The CUDA programs of tests/gpu/sandbox.sh, one binary, a mode per test:
//   vecadd   a correct program: y = a*x + y on 1M floats, checked on the host
//   endless  a kernel that never ends (killed by the sandbox's wall limit)
//   hog      cudaMalloc all the GPU memory it can get, touch it, exit without freeing
//   trivial  create a context, launch one empty kernel, exit (the benchmark)
//   meminfo  print free and total device memory
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <time.h>
#include <unistd.h>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); return 3; } } while (0)

__global__ void saxpy(int n, float a, const float *x, float *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void spin(volatile int *flag)
{
    while (*flag == 0) { }
}

__global__ void empty() {}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "vecadd";
    if (!strcmp(mode, "vecadd")) {
        const int n = 1 << 20;
        float *x = (float *)malloc(n * sizeof(float)), *y = (float *)malloc(n * sizeof(float));
        for (int i = 0; i < n; i++) { x[i] = (float)i; y[i] = 1.0f; }
        float *dx, *dy;
        CK(cudaMalloc(&dx, n * sizeof(float)));
        CK(cudaMalloc(&dy, n * sizeof(float)));
        CK(cudaMemcpy(dx, x, n * sizeof(float), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(dy, y, n * sizeof(float), cudaMemcpyHostToDevice));
        saxpy<<<(n + 255) / 256, 256>>>(n, 2.0f, dx, dy);
        CK(cudaGetLastError());
        CK(cudaMemcpy(y, dy, n * sizeof(float), cudaMemcpyDeviceToHost));
        int bad = 0;
        for (int i = 0; i < n; i++) if (y[i] != 2.0f * i + 1.0f) bad++;
        cudaDeviceProp p;
        CK(cudaGetDeviceProperties(&p, 0));
        printf("%s: %s (%d wrong)\n", bad ? "FAIL" : "PASS", p.name, bad);
        return bad ? 1 : 0;
    }
    if (!strcmp(mode, "endless")) {
        int *flag;
        CK(cudaMalloc(&flag, sizeof(int)));
        CK(cudaMemset(flag, 0, sizeof(int)));
        spin<<<1, 1>>>(flag);
        CK(cudaGetLastError());
        printf("kernel launched\n");
        fflush(stdout);
        CK(cudaDeviceSynchronize());
        printf("NOT REACHED\n");
        return 0;
    }
    if (!strcmp(mode, "hog")) {
        size_t total = 0, chunk = 256u << 20;
        void *p;
        while (chunk >= (1u << 20)) {
            if (cudaMalloc(&p, chunk) == cudaSuccess) {
                cudaMemset(p, 0xab, chunk);
                total += chunk;
            } else {
                cudaGetLastError();
                chunk /= 2;
            }
        }
        CK(cudaDeviceSynchronize());
        size_t fr, tot;
        CK(cudaMemGetInfo(&fr, &tot));
        printf("hogged %zu MiB of %zu MiB, %zu MiB left; exiting without freeing\n",
               total >> 20, tot >> 20, fr >> 20);
        return 0;
    }
    if (!strcmp(mode, "trivial")) {
        empty<<<1, 1>>>();
        CK(cudaDeviceSynchronize());
        return 0;
    }
    if (!strcmp(mode, "phases")) {
        /* tests/bench/sandbox_diag.sh: CLOCK_MONOTONIC (not namespaced by
         * bwrap) at main, after the context, after the kernel; the
         * speculation mitigations the kernel applies to this process. */
        struct timespec a, b, c;
        clock_gettime(CLOCK_MONOTONIC, &a);
        CK(cudaFree(0));
        clock_gettime(CLOCK_MONOTONIC, &b);
        empty<<<1, 1>>>();
        CK(cudaDeviceSynchronize());
        clock_gettime(CLOCK_MONOTONIC, &c);
        printf("main %.6f ctx %.6f kernel %.6f\n", a.tv_sec + a.tv_nsec / 1e9, b.tv_sec + b.tv_nsec / 1e9,
               c.tv_sec + c.tv_nsec / 1e9);
        FILE *f = fopen("/proc/self/status", "r");
        char line[256];
        while (f && fgets(line, sizeof line, f))
            if (!strncmp(line, "Seccomp", 7) || !strncmp(line, "Speculation", 11) ||
                !strncmp(line, "Cpus_allowed_list", 17) || !strncmp(line, "NoNewPrivs", 10))
                fputs(line, stdout);
        if (f)
            fclose(f);
        fflush(stdout);
        return 0;
    }
    if (!strcmp(mode, "hold")) {
        /* keep a context open (the GPU initialised) for argv[2] seconds */
        CK(cudaFree(0));
        sleep(argc > 2 ? atoi(argv[2]) : 60);
        return 0;
    }
    if (!strcmp(mode, "meminfo")) {
        size_t fr, tot;
        CK(cudaMemGetInfo(&fr, &tot));
        printf("free %zu MiB of %zu MiB\n", fr >> 20, tot >> 20);
        return 0;
    }
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
}
