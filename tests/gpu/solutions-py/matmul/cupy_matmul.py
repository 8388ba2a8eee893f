# expect: status=graded correctness=fail sanitizer=not-run tier=none flagged=no note="cupy.matmul needs cuBLAS, which the matmul lab's Python sandbox does not have: every case fails with 'cuBLAS is not allowed in the matmul lab'"
import cupy as cp


def matmul(A, B, C):
    cp.matmul(cp.asarray(A), cp.asarray(B), out=cp.asarray(C))
