"""labs/matmul/lab.py - the matmul lab's Python interface, as data for the
trusted owner (labs/common/py/owner.py). Same buffers, streams and guards as
labs/matmul/harness.cu; the lab's judge checks the outputs.

    def matmul(A, B, C): ...    # A (M, K), B (K, N), C (M, N), float32, row-major

A timed sample is checked with Freivalds' test, without cuBLAS (the lab
forbids it): C r against A (B r) for a random sign vector r drawn when the
timing starts, row by row within 1e-4 * (|A| (|B| |r|)), a bound that every
output the judge accepts (|C - AB| <= 1e-4 * s element-wise) meets.
"""
import os

SYMBOL = "matmul"
SIGNATURE = "def matmul(A, B, C)"

INPUTS = [("A", "float32", lambda p: (p["M"], p["K"]), "f32_sym", 0),
          ("B", "float32", lambda p: (p["K"], p["N"]), "f32_sym", 1)]
OUTPUTS = [("C", "float32", lambda p: (p["M"], p["N"]))]
ARGS = ["A", "B", "C"]


def _matvec(xp, m, v):
    """m @ v in float64 by element-wise products and sums (no BLAS)."""
    return (m.astype(xp.float64) * v[None, :]).sum(axis=1)


def reference(xp, inputs):
    """What sample_ok needs: the inputs (flat views; the shapes follow from
    the sizes) and, drawn at the first sample, the random vector."""
    return {"a": inputs["A"], "b": inputs["B"]}


def sample_ok(xp, ref, out):
    a, b = ref["a"], ref["b"]
    # M*K = a.size, K*N = b.size, M*N = out.size: K = sqrt(a.size*b.size/out.size)
    import math
    k = int(round(math.sqrt(a.size * b.size / out.size))) if out.size else 0
    if k == 0:
        return True
    m, n = a.size // k, b.size // k
    if "r" not in ref:
        bits = xp.asarray(bytearray(os.urandom(n)), dtype=xp.uint8)
        ref["r"] = (bits.astype(xp.float64) % 2) * 2 - 1   # signs the tenant cannot see
    r = ref["r"]
    A, B, C = a.reshape(m, k), b.reshape(k, n), out.reshape(m, n)
    br = _matvec(xp, B, r)
    want = _matvec(xp, A, br)
    scale = _matvec(xp, xp.abs(A), _matvec(xp, xp.abs(B), xp.abs(r)))
    got = _matvec(xp, C, r)
    return bool((xp.abs(got - want) <= 1e-4 * scale + 1e-30).all())
