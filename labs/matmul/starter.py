# Lab: matrix multiplication, Python. Read README.md first.
#
# C = A @ B in float32. A is (M, K), B (K, N), C (M, N), row-major device
# arrays (Numba kernels take them as they are; CuPy through cupy.asarray).
# cuBLAS is not allowed: cupy.matmul, cupy.dot and the @ operator on CuPy
# arrays call it. Write your own kernel (tiles in cuda.shared.array).
from numba import cuda, float32

TILE = 16


@cuda.jit
def mm(A, B, C):
    # TODO: each block computes a TILE x TILE tile of C, stepping through K
    # one tile of A and one of B at a time (shared memory, with
    # cuda.syncthreads() after loading a tile and after using it).
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        acc = float32(0.0)
        for k in range(A.shape[1]):
            acc += A[i, k] * B[k, j]
        C[i, j] = acc


def matmul(A, B, C):
    M, N = C.shape
    mm[((M + TILE - 1) // TILE, (N + TILE - 1) // TILE), (TILE, TILE)](A, B, C)
