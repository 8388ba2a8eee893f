# expect: status=graded correctness=fail sanitizer=clean tier=none flagged=no hint=grid-coverage note="too few blocks: M // 16 and N // 16 round down, so the last partial tiles of C are never computed"
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
    mm[(max(M // 16, 1), max(N // 16, 1)), (16, 16)](A, B, C)   # BUG: rounds down
