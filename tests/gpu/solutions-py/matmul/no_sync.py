# expect: status=graded correctness=fail|pass sanitizer=dirty tier=any flagged=yes|no note="missing cuda.syncthreads() after the tile loads: a shared-memory race, which racecheck finds (the tile loads' lines)"
from numba import cuda, float32

TILE = 16


@cuda.jit
def mm(A, B, C):
    sa = cuda.shared.array((TILE, TILE), dtype=float32)
    sb = cuda.shared.array((TILE, TILE), dtype=float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    M, K = A.shape
    N = B.shape[1]
    acc = float32(0.0)
    for t in range((K + TILE - 1) // TILE):
        k = t * TILE
        sa[ty, tx] = A[row, k + tx] if row < M and k + tx < K else float32(0.0)
        sb[ty, tx] = B[k + ty, col] if k + ty < K and col < N else float32(0.0)
        for i in range(TILE):
            acc += sa[ty, i] * sb[i, tx]
    if row < M and col < N:
        C[row, col] = acc


def matmul(A, B, C):
    M, N = C.shape
    mm[((N + TILE - 1) // TILE, (M + TILE - 1) // TILE), (TILE, TILE)](A, B, C)
