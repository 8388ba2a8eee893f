/*
 * labs/reduction/harness.cu - the trusted harness of the reduction lab.
 * Linked with the student's object; see labs/common/harness_common.cu for the
 * command line and docs/formats.md for what it writes.
 *
 * Buffers: d_in (n floats from gen_f32_reduction, generated on the GPU: the
 * 2^31+ case is 8.6 GB; one-sign or balanced as the case's "signs" says),
 * d_out (1 float). Both are followed by a guard.
 */
#include "harness_common.cuh"
#include "cases.h"

extern "C" void reduce_sum(const float *d_in, float *d_out, size_t n);

static struct {
    float *in, *out;
    size_t n;
    int signs; /* the case's "signs" (gen.cuh gen_reduction_bias) */
} R;

static __global__ void red_gen(float *p, size_t n, uint64_t seed, int32_t bias)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = gen_f32_reduction(seed, i, bias);
}

static __global__ void red_verify(const float *p, size_t n, uint64_t seed, int32_t bias,
                                  unsigned long long *bad)
{
    unsigned long long c = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        c += __float_as_uint(p[i]) != __float_as_uint(gen_f32_reduction(seed, i, bias));
    if (c)
        atomicAdd(bad, c);
}

static void red_regen(uint64_t case_seed)
{
    uint64_t s = gen_stream(case_seed, 0);
    red_gen<<<hc_grid(R.n), 256>>>(R.in, R.n, s, gen_reduction_bias(s, R.n, R.signs));
    HC_CUDA(cudaGetLastError());
    HC_CUDA(cudaDeviceSynchronize());
}

static int red_setup(const struct lab_case_def *c, uint64_t case_seed)
{
    R.n = (size_t)c->p[0];
    R.signs = (int)c->p[1];
    if (hc_alloc((void **)&R.in, R.n * sizeof(float), HC_GUARD_BITS) != 0 ||
        hc_alloc((void **)&R.out, sizeof(float), HC_POISON_BITS) != 0)
        return -1;
    red_regen(case_seed);
    return 0;
}

static void red_call(void)
{
    reduce_sum(R.in, R.out, R.n);
}

static unsigned long long red_inputs_modified(uint64_t case_seed)
{
    unsigned long long c = 0;
    HC_CUDA(cudaMemset(hc_dcounter, 0, sizeof(c)));
    uint64_t s = gen_stream(case_seed, 0);
    red_verify<<<hc_grid(R.n), 256>>>(R.in, R.n, s, gen_reduction_bias(s, R.n, R.signs),
                                      hc_dcounter);
    HC_CUDA(cudaGetLastError());
    HC_CUDA(cudaMemcpy(&c, hc_dcounter, sizeof(c), cudaMemcpyDeviceToHost));
    return c + hc_guard_damage(R.in);
}

static float *red_output(size_t *count)
{
    *count = 1;
    return R.out;
}

static void red_teardown(void)
{
    R.in = R.out = NULL;
}

static const struct hc_lab HC_LAB = {
    "reduction", red_setup, red_regen, red_call, red_inputs_modified, red_output, red_teardown,
};

#include "harness_common.cu"
