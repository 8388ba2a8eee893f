/*
 * harness_common.cuh - what every lab's trusted harness shares.
 *
 * A lab's harness (labs/<lab>/harness.cu) is ONE translation unit: it includes
 * this header, defines its buffers and the hooks of struct hc_lab, then
 * includes harness_common.cu, which holds the channel writer, poisoning and
 * guard checks, launch-error naming, the L2 flush, the timing loop and main().
 * Everything but main() is static: the object is linked with a student's
 * object, whose helpers may have any name, so the harness exports nothing a
 * student symbol could collide with or override.
 *
 * Contract with the runner and the judge: docs/formats.md ("The harness result
 * channel") and docs/labs.md.
 */
#ifndef CUGRADE_HARNESS_COMMON_CUH
#define CUGRADE_HARNESS_COMMON_CUH

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cuda_runtime.h>

#include "channel_limits.h"
#include "gen.cuh"

/* Bit patterns. The poison is a quiet NaN no float arithmetic produces
 * (a computed NaN has the payload 0x400000), so an output still holding it was
 * never written. The input guard is another NaN: a kernel that reads past the
 * end of an input folds a NaN into its result. */
#define HC_POISON_BITS 0x7fdeadedu
#define HC_GUARD_BITS 0x7fc0ffeeu

/* Bytes of guard after every buffer (inputs: HC_GUARD_BITS; outputs: the
 * poison). 4 MiB covers the overshoot of a 64-row tile with no bounds check
 * on a 4096-wide matrix. 0 under compute-sanitizer (--no-guard), so memcheck
 * sees the exact allocation. */
#define HC_GUARD_BYTES (4u << 20)

struct hc_lab {
    const char *name;
    /* Allocate and fill the inputs of case c from case_seed, allocate the
     * output (hc_alloc). Returns 0, or -1 after writing a message to stderr
     * (a harness failure: out of memory for a case the lab defines). */
    int (*setup)(const struct lab_case_def *c, uint64_t case_seed);
    /* Refill the inputs in place from another case seed (the re-check). */
    void (*regen)(uint64_t case_seed);
    /* Call the student's function once on the current buffers. */
    void (*call)(void);
    /* Number of input elements (guards included) that differ from what
     * case_seed generates: the student's code wrote into its inputs. */
    unsigned long long (*inputs_modified)(uint64_t case_seed);
    /* The output buffer and its element count (f32). */
    float *(*output)(size_t *count);
    /* Free what setup allocated. */
    void (*teardown)(void);
};

/* Shared state and helpers for the lab's hooks (defined in harness_common.cu). */
static unsigned long long *hc_dcounter;   /* a device counter for verify kernels */

static void hc_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* A grid of 256-thread blocks for a grid-stride loop over n elements. */
static int hc_grid(size_t n);
/* Allocate bytes + guard on the device, guard filled with guard_bits. */
static int hc_alloc(void **out, size_t bytes, uint32_t guard_bits);
/* Guard words after an hc_alloc'd buffer that lost their pattern. */
static unsigned long long hc_guard_damage(const void *p);

/* The file name without its directories (no build paths in messages). */
static inline const char *hc_base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* A CUDA call of the harness's own failed: exit 2 (a system error), unless
 * student code has just run (then hc_die blames it: see harness_common.cu). */
#define HC_CUDA(call)                                                                    \
    do {                                                                                 \
        cudaError_t e_ = (call);                                                         \
        if (e_ != cudaSuccess)                                                           \
            hc_die("%s:%d: %s: %s", hc_base(__FILE__), __LINE__, #call,                 \
                   cudaGetErrorString(e_));                                              \
    } while (0)

#endif
