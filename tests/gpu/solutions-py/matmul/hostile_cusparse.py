# expect: status=graded correctness=fail note="hostile, NOT YET RUN ON A GPU: a library GEMM that is not cuBLAS -- A as a CSR sparse matrix (cupyx.scipy.sparse) times the dense B is cuSPARSE's SpMM, and the matmul lab hides only libcublas*; the lab's intent (write the matmul yourself) calls for no credit, so correctness=pass here means cuSPARSE (libcusparse*) must be hidden too (lab.json python.hide)"
import cupy as cp


def matmul(A, B, C):
    import cupyx.scipy.sparse as sp
    a, b, c = cp.asarray(A), cp.asarray(B), cp.asarray(C)
    c[...] = (sp.csr_matrix(a) @ b).astype(cp.float32)
