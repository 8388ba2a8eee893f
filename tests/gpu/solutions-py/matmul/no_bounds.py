# expect: status=graded|runtime_error correctness=fail sanitizer=dirty tier=none flagged=no note="Numba, missing bounds check: the edge blocks' threads past M or N read and write outside A, B and C (memcheck names the line)"
from numba import cuda, float32


@cuda.jit
def mm(A, B, C):
    i, j = cuda.grid(2)
    acc = float32(0.0)                # BUG: no `if i < M and j < N`
    for k in range(A.shape[1]):
        acc += A[i, k] * B[k, j]
    C[i, j] = acc


def matmul(A, B, C):
    M, N = C.shape
    mm[((M + 15) // 16, (N + 15) // 16), (16, 16)](A, B, C)
