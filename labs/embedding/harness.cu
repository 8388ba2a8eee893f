/*
 * labs/embedding/harness.cu - the trusted harness of the embedding lab.
 * Linked with the student's object; see labs/common/harness_common.cu for the
 * command line and docs/formats.md for what it writes.
 *
 * Buffers: weight (vocab x dim floats from gen_f32_sym, stream 0), indices
 * (num_indices int64 in [0, vocab), stream 1), out (num_indices x dim).
 * The "bigvocab" case has a 19.7 GB table so that indices[i]*dim passes 2^31
 * (and 2^32): a 32-bit row offset reads the wrong row or faults.
 * The guard after indices is zeros (an index read past the end is row 0, and
 * the write it causes lands in out's guard).
 */
#include "harness_common.cuh"
#include "cases.h"

extern "C" void embedding_lookup(const float *weight, const int64_t *indices, float *out,
                                 int64_t num_indices, int dim);

static struct {
    float *w, *out;
    int64_t *idx;
    int64_t num, vocab;
    int dim;
} E;

static __global__ void emb_gen_w(float *p, size_t n, uint64_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = gen_f32_sym(seed, i);
}

static __global__ void emb_gen_idx(int64_t *p, size_t n, uint64_t seed, uint64_t vocab)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = gen_index(seed, i, vocab);
}

static __global__ void emb_verify(const float *w, size_t nw, const int64_t *idx, size_t ni,
                                  uint64_t seed_w, uint64_t seed_i, uint64_t vocab,
                                  unsigned long long *bad)
{
    unsigned long long c = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < nw;
         i += (size_t)gridDim.x * blockDim.x)
        c += __float_as_uint(w[i]) != __float_as_uint(gen_f32_sym(seed_w, i));
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < ni;
         i += (size_t)gridDim.x * blockDim.x)
        c += idx[i] != gen_index(seed_i, i, vocab);
    if (c)
        atomicAdd(bad, c);
}

static void emb_regen(uint64_t case_seed)
{
    size_t nw = (size_t)E.vocab * E.dim;
    emb_gen_w<<<hc_grid(nw), 256>>>(E.w, nw, gen_stream(case_seed, 0));
    emb_gen_idx<<<hc_grid((size_t)E.num), 256>>>(E.idx, (size_t)E.num, gen_stream(case_seed, 1),
                                                  (uint64_t)E.vocab);
    HC_CUDA(cudaGetLastError());
    HC_CUDA(cudaDeviceSynchronize());
}

static int emb_setup(const struct lab_case_def *c, uint64_t case_seed)
{
    E.num = c->p[0];
    E.dim = (int)c->p[1];
    E.vocab = c->p[2];
    if (hc_alloc((void **)&E.w, (size_t)E.vocab * E.dim * sizeof(float), HC_GUARD_BITS) != 0 ||
        hc_alloc((void **)&E.idx, (size_t)E.num * sizeof(int64_t), 0) != 0 ||
        hc_alloc((void **)&E.out, (size_t)E.num * E.dim * sizeof(float), HC_POISON_BITS) != 0)
        return -1;
    emb_regen(case_seed);
    return 0;
}

static void emb_call(void)
{
    embedding_lookup(E.w, E.idx, E.out, E.num, E.dim);
}

static unsigned long long emb_inputs_modified(uint64_t case_seed)
{
    size_t nw = (size_t)E.vocab * E.dim;
    unsigned long long c = 0;
    HC_CUDA(cudaMemset(hc_dcounter, 0, sizeof(c)));
    emb_verify<<<hc_grid(nw), 256>>>(E.w, nw, E.idx, (size_t)E.num, gen_stream(case_seed, 0),
                                     gen_stream(case_seed, 1), (uint64_t)E.vocab, hc_dcounter);
    HC_CUDA(cudaGetLastError());
    HC_CUDA(cudaMemcpy(&c, hc_dcounter, sizeof(c), cudaMemcpyDeviceToHost));
    return c + hc_guard_damage(E.w) + hc_guard_damage(E.idx);
}

static float *emb_output(size_t *count)
{
    *count = (size_t)E.num * E.dim;
    return E.out;
}

static void emb_teardown(void)
{
    E.w = E.out = NULL;
    E.idx = NULL;
}

static const struct hc_lab HC_LAB = {
    "embedding", emb_setup, emb_regen, emb_call, emb_inputs_modified, emb_output, emb_teardown,
};

#include "harness_common.cu"
