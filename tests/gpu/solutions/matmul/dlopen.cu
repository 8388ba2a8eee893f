// expect: status=rejected symbol=dlopen note="loads cuBLAS at run time with dlopen/dlsym"
#include <cuda_runtime.h>
#include <dlfcn.h>

typedef int (*create_fn)(void **);
typedef int (*sgemm_fn)(void *, int, int, int, int, int, const float *, const float *, int,
                        const float *, int, const float *, float *, int);

extern "C" void matmul(const float *A, const float *B, float *C, int M, int N, int K)
{
    static void *h;
    static sgemm_fn sgemm;
    const float one = 1, zero = 0;
    if (h == NULL) {
        void *lib = dlopen("libcublas.so", RTLD_NOW);
        create_fn create = (create_fn)dlsym(lib, "cublasCreate_v2");
        sgemm = (sgemm_fn)dlsym(lib, "cublasSgemm_v2");
        create(&h);
    }
    sgemm(h, 0, 0, N, M, K, &one, B, N, A, K, &zero, C, N);
}
