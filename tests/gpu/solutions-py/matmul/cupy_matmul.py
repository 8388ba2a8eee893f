# expect: status=graded correctness=fail sanitizer=dirty tier=none flagged=no note="cupy.matmul needs cuBLAS, which the matmul lab's Python sandbox does not have: every case fails with 'cuBLAS is not allowed in the matmul lab'; its sanitizer runs fail the same way (the program failed under the tool: charged, as any failing program)"
import cupy as cp


def matmul(A, B, C):
    cp.matmul(cp.asarray(A), cp.asarray(B), out=cp.asarray(C))
