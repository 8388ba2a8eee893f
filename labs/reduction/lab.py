"""labs/reduction/lab.py - the reduction lab's Python interface, as data for
the trusted owner (labs/common/py/owner.py). Same buffers, streams and
guards as labs/reduction/harness.cu; the lab's judge checks the outputs.

    def reduce_sum(d_in, d_out): ...    # d_in: n float32, d_out: 1 float32
"""
SYMBOL = "reduce_sum"
SIGNATURE = "def reduce_sum(d_in, d_out)"

# name, dtype, shape from the case's params, generator, stream (gen_stream k)
INPUTS = [("d_in", "float32", lambda p: (p["n"],), "f32_reduction", 0)]
# name, dtype, shape
OUTPUTS = [("d_out", "float32", lambda p: (1,))]
# the student's function's arguments, in order
ARGS = ["d_in", "d_out"]


def reference(xp, inputs):
    """What one timed sample's output is checked against, in the owner right
    after the call: the sum in float64 and the judge's tolerance
    tau(n) * (|sum| + 3 sqrt(sum of squares)) (gen.reduction_tolerance,
    reference/reduction/judge.cu)."""
    import gen
    x = inputs["d_in"]
    n = x.size
    total, sumsq = 0.0, 0.0
    for s in range(0, n, 1 << 24):
        c = x[s:s + (1 << 24)].astype(xp.float64)
        total += float(c.sum())
        sumsq += float((c * c).sum())
    return total, gen.reduction_tolerance(n, total, sumsq)


def sample_ok(xp, ref, out):
    """True when a timed sample's output (the device array) is right."""
    total, tol = ref
    got = float(out[0])
    return got == got and abs(got - total) <= tol


def cupy_warm(cp, a):
    """The CuPy calls a first reduction most likely makes, on one case's
    arrays (a: every buffer by name): the runner runs them at prepare
    (owner.py warm) and copies the kernels CuPy compiled into each Python
    job's cache, so that they are not compiled again on every submission."""
    x, out = a["d_in"], a["d_out"]
    cp.sum(x, out=out[0:1].reshape(()))
    out[0] = cp.sum(x)
    out[0] = x.sum()
    out[:] = x.sum(keepdims=True)
    out[0] = cp.sum(x, dtype=cp.float64)
