#!/usr/bin/python3
"""CI: labs/common/py/gen.py (the Python owner's input generator) against
labs/common/gen.cuh compiled by the host's C compiler: seeds of 1 to 32 hex
digits, case seeds, streams, re-check seeds and every generator's values
agree bit for bit, so the lab's judge (which regenerates the inputs with
gen.cuh) judges exactly the inputs a Python submission was given."""
import functools, os, subprocess, sys, tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakelab"))
from suite import ROOT, failures, ok as suite_ok  # noqa: E402  (paths, TAP)
ok = functools.partial(suite_ok, lines=None, chars=2000)  # a failure prints 2000 characters of its detail
sys.path.insert(0, os.path.join(ROOT, "labs/common/py"))


try:
    import numpy as np
    import gen
except ImportError as e:
    print("not ok - needs NumPy (python3-numpy, sh deploy/install-deps.sh test): %s" % e)
    sys.exit(1)

C = r'''
#include <stdio.h>
#include <string.h>
#include "gen.cuh"
int main(int argc, char **argv) {
    uint64_t s;
    if (gen_seed_parse_wide(argv[1], &s) != 0) { printf("bad\n"); return 0; }
    uint64_t cs = gen_case_seed(s, argv[2]);
    printf("%016llx %016llx %016llx\n", (unsigned long long)s, (unsigned long long)cs,
           (unsigned long long)gen_recheck_seed(s));
    for (int k = 0; k < 2; k++) {
        uint64_t st = gen_stream(cs, k);
        for (unsigned long long i = 0; i < 2000; i += 7) {
            float a = gen_f32_reduction(st, i, gen_reduction_bias(st, 2000, 1)),
                  b = gen_f32_sym(st, i);
            unsigned x, y;
            memcpy(&x, &a, 4); memcpy(&y, &b, 4);
            printf("%08x %08x %lld\n", x, y, (long long)gen_index(st, i, 50257));
        }
    }
    /* Balanced reduction cases: the bias at several n, values, tolerance. */
    static const unsigned long long ns[] = {1, 2, 1000, 1048583, 67108864, 268435456, 2500000000ull};
    uint64_t st = gen_stream(cs, 0);
    for (int j = 0; j < 7; j++) {
        int32_t b = gen_reduction_bias(st, ns[j], 2);
        printf("bias %llu %d\n", ns[j], (int)b);
        for (unsigned long long i = 0; i < 2000; i += 13) {
            float a = gen_f32_reduction(st, i, b);
            unsigned x;
            memcpy(&x, &a, 4);
            printf("%08x\n", x);
        }
        printf("tol %.17g\n", gen_reduction_tolerance((double)ns[j], -12345.678 * j, 9876.5 * ns[j]));
    }
    return 0;
}
'''
tmp = tempfile.mkdtemp(prefix="cugrade-gen-")
src, exe = os.path.join(tmp, "g.c"), os.path.join(tmp, "g")
open(src, "w").write(C)
cc = os.environ.get("CC", "cc")
p = subprocess.run([cc, "-std=c17", "-O1", "-I" + os.path.join(ROOT, "labs/common"), "-x", "c", src,
                    "-o", exe, "-lm"], capture_output=True, text=True)
ok(p.returncode == 0, "gen.cuh compiles as host C", p.stderr)


def py(seed, name):
    try:
        s = gen.seed_parse_wide(seed)
    except ValueError:
        return "bad\n"
    cs = gen.case_seed(s, name)
    out = ["%016x %016x %016x" % (s, cs, gen.recheck_seed(s))]
    for k in range(2):
        st = gen.stream(cs, k)
        idx = np.arange(0, 2000, 7)
        for i in idx:
            a = gen.f32_reduction(np, st, int(i), 1, 2000, 1).view(np.uint32)[0]
            b = gen.f32_sym(np, st, int(i), 1).view(np.uint32)[0]
            c = gen.index(np, st, int(i), 1, 50257)[0]
            out.append("%08x %08x %d" % (a, b, c))
    st = gen.stream(cs, 0)
    for j, n in enumerate((1, 2, 1000, 1048583, 67108864, 268435456, 2500000000)):
        out.append("bias %d %d" % (n, gen.reduction_bias(st, n, 2)))
        x = gen.f32_reduction(np, st, 0, 2000, n, 2)
        out += ["%08x" % v for v in x[::13].view(np.uint32)]
        out.append("tol %.17g" % gen.reduction_tolerance(n, -12345.678 * j, 9876.5 * n))
    return "\n".join(out) + "\n"


for seed, name in (("1", "1000"), ("0123456789abcdef", "2^28"),
                   ("0123456789abcdef0123456789abcdef", "2.5e9"), ("ffffffffffffffff", "a"),
                   ("8000000000000000", "1"), ("0x5eed", "16384x4096"),
                   ("1" * 33, "1"), ("xyz", "1")):
    want = subprocess.run([exe, seed, name], capture_output=True, text=True).stdout
    got = py(seed, name)
    ok(got == want and (want == "bad\n" or "bias 268435456" in want),
       "seed %s, case %s: gen.py == gen.cuh (one-sign and balanced reduction values, "
       "biases and tolerances too)" % (seed, name),
       "\n".join(l for l in (got.splitlines()[:3] + ["--- C:"] + want.splitlines()[:3])))

# Chunked generation (the owner fills big inputs 2^24 at a time) equals one call.
st = gen.stream(gen.case_seed(gen.seed_parse_wide("abc"), "x"), 0)
for signs in (1, 2):
    whole = gen.f32_reduction(np, st, 0, 5000, 1 << 28, signs)
    parts = np.concatenate([gen.f32_reduction(np, st, s, min(1000, 5000 - s), 1 << 28, signs)
                            for s in range(0, 5000, 1000)])
    ok(np.array_equal(whole.view(np.uint32), parts.view(np.uint32)),
       "generation in chunks equals one call (signs %d)" % signs)
sys.exit(1 if failures() else 0)
