# expect: status=graded correctness=pass sanitizer=clean tier="80% of copy bandwidth" flagged=no note="CuPy RawKernel, fast.cu's kernel line for line: coalesced float4 gather, grid-stride, 64-bit offsets; timed in batches it reaches the copy-bandwidth tier fast.cu does"
import cupy as cp

SRC = r"""
template <typename T>
__global__ void gather(const T *__restrict__ weight, const long long *__restrict__ indices,
                       T *__restrict__ out, unsigned long long total, unsigned int width)
{
    for (unsigned long long e = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
         e < total; e += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned long long i = e / width, j = e - i * width;
        out[e] = __ldg(&weight[(unsigned long long)__ldg(&indices[i]) * width + j]);
    }
}
"""
_mod = cp.RawModule(code=SRC, options=("-std=c++17",), name_expressions=("gather<float4>", "gather<float>"))
_sms = cp.cuda.Device().attributes["MultiProcessorCount"]


def embedding_lookup(weight, indices, out):
    w, idx, o = cp.asarray(weight), cp.asarray(indices), cp.asarray(out)
    num, dim = o.shape
    vec = dim % 4 == 0
    total = num * (dim // 4 if vec else dim)
    blocks = max(1, min((total + 255) // 256, _sms * 32))
    k = _mod.get_function("gather<float4>" if vec else "gather<float>")
    k((blocks,), (256,), (w, idx, o, cp.uint64(total), cp.uint32(dim // 4 if vec else dim)))
