# expect: status=graded correctness=pass sanitizer=clean tier=none flagged=no note="Numba: one thread per element, no tiles (slow: no tier)"
from numba import cuda, float32


@cuda.jit
def mm(A, B, C):
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        acc = float32(0.0)
        for k in range(A.shape[1]):
            acc += A[i, k] * B[k, j]
        C[i, j] = acc


def matmul(A, B, C):
    M, N = C.shape
    mm[((M + 15) // 16, (N + 15) // 16), (16, 16)](A, B, C)
