# expect: status=graded correctness=fail tier=none flagged=no note="the host-library policy (issue 26): A and B copied to the host, multiplied with NumPy's BLAS, C written back -- the right answer, but every case fails with 'your function copied ... bytes of its inputs (A,B) to the host: this lab grades a GPU kernel' (before: 50/80, correct and slow)"
import numpy as np
from numba import cuda


def matmul(A, B, C):
    a = A.copy_to_host()
    b = np.asarray(B)            # a DeviceNDArray's __array__: a copy too
    C.copy_to_device(np.ascontiguousarray(a @ b, dtype=np.float32))
