/*
 * harness_common.cu - the trusted harness's shared half: included at the end
 * of labs/<lab>/harness.cu after the lab has defined `static const struct
 * hc_lab HC_LAB` and `LAB_CASES` (cases.h). See harness_common.cuh.
 *
 *   prog check (--seed HEX | --seed-fd N) --cases a,b,c [--no-guard]
 *   prog time  (--seed HEX | --seed-fd N) --case NAME [--max-ms N] [--no-guard] [--gate FD]
 *   (the runner: --seed-fd 5, a pipe holding the seed; --seed for baselines
 *   and runs by hand)
 *   prog device
 *
 * Writes the records of docs/formats.md ("The harness result channel") to fd
 * 3 and never prints a verdict: the student's code shares this process, so
 * nothing here can be trusted as a score; the judge decides, outside.
 *
 * Exit status: 0 all records written ("done" last); 2 bad command line or a
 * harness failure (our fault: the runner reports system_error); 3 the
 * student's code left the GPU context broken (sticky error): the case record
 * says why, no "done" follows; 4 the channel could not be written.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HC_CHANNEL_FD 3
#define HC_MAX_SAMPLES 1000
#define HC_MIN_SAMPLES 10
#define HC_TARGET_REL_ERR 0.01
#define HC_CHUNK_BYTES (64u << 20)

static int hc_guard_on = 1;
static int hc_gate_fd = -1; /* --gate: the runner's timing gate (hc_gate_wait) */
static void *hc_flush_buf;
static size_t hc_flush_bytes;
static unsigned hc_flush_round;

/* ------------------------------------------------------------------ time */

static double hc_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* --------------------------------------------------------------- channel */

/* The case whose student code has run and whose record is not yet written
 * (NULL otherwise), and whether any student code has run in this process.
 * A harness operation that fails then is blamed on the student (a freed or
 * overwritten buffer, device memory kept across calls), not reported as our
 * failure: otherwise a submission could turn its own bug into a
 * system_error that is retried and never charged. */
static const char *hc_blame_case;
static int hc_student_ran;
static void hc_blame(const char *msg) __attribute__((noreturn));

/* Claim a failure as ours: one {"type":"harness_error","message":...}
 * record on the channel, written with a plain write(2) (no allocation, no
 * recursion into hc_die). The runner takes exit 2 or 4 as a system_error
 * only with this record before it: student code cannot write fd 3, so a
 * submission that calls exit(2) itself is charged to the student, not
 * retried for free. Never written once student code has run: by then the
 * failure may be the student's doing (hc_blame's reasoning). */
static void hc_harness_error(const char *msg)
{
    char rec[600];
    size_t o = 0;
    if (hc_student_ran)
        return;
    o += (size_t)snprintf(rec, sizeof(rec), "{\"type\":\"harness_error\",\"message\":\"");
    for (; *msg && o + 8 < sizeof(rec) - 4; msg++) {
        unsigned char c = (unsigned char)*msg;
        if (c == '"' || c == '\\')
            o += (size_t)snprintf(rec + o, sizeof(rec) - o, "\\%c", c);
        else if (c < 0x20 || c > 0x7e)
            o += (size_t)snprintf(rec + o, sizeof(rec) - o, "\\u%04x", c);
        else
            rec[o++] = (char)c;
    }
    o += (size_t)snprintf(rec + o, sizeof(rec) - o, "\"}\n");
    (void)!write(HC_CHANNEL_FD, rec, o);
}

static void hc_die(const char *fmt, ...)
{
    va_list ap;
    char msg[400];
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "harness: %s\n", msg);
    if (hc_blame_case != NULL)
        hc_blame(msg);
    hc_harness_error(msg);
    exit(2);
}

/* write(2) until everything is out; a short or failed write of the channel
 * is fatal (exit 4): a record cut in half would desynchronise the reader. */
static void hc_write_all(const void *buf, size_t len)
{
    const char *p = (const char *)buf;
    while (len > 0) {
        ssize_t n = write(HC_CHANNEL_FD, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(stderr, "harness: writing the result channel (fd %d): %s\n", HC_CHANNEL_FD,
                    n < 0 ? strerror(errno) : "short write");
            hc_harness_error("writing the result channel failed"); /* best effort */
            exit(4);
        }
        p += n;
        len -= (size_t)n;
    }
}

/* A growable string for one JSON line. Out of memory is a harness failure. */
struct hc_sb {
    char *p;
    size_t len, cap;
};

static void hc_sb_add(struct hc_sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void hc_sb_add(struct hc_sb *b, const char *fmt, ...)
{
    va_list ap;
    int n;
    for (;;) {
        size_t room = b->cap - b->len;
        va_start(ap, fmt);
        n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? room : 0, fmt, ap);
        va_end(ap);
        if (n < 0)
            hc_die("formatting a record failed");
        if (b->p && (size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        b->cap = (b->cap + (size_t)n + 1) * 2;
        b->p = (char *)realloc(b->p, b->cap);
        if (b->p == NULL)
            hc_die("out of memory");
    }
}

/* A JSON string literal; bytes outside printable ASCII are escaped. At most
 * CHANNEL_FIELD_MAX bytes as the judge reads them (each escape is one),
 * the last ones CHANNEL_CUT_MARK when s is longer (channel_limits.h). */
static void hc_sb_str(struct hc_sb *b, const char *s)
{
    size_t len = strlen(s), mark = sizeof(CHANNEL_CUT_MARK) - 1;
    const char *end = s + (len > CHANNEL_FIELD_MAX ? CHANNEL_FIELD_MAX - mark : len);
    hc_sb_add(b, "\"");
    for (; s < end; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            hc_sb_add(b, "\\%c", c);
        else if (c < 0x20 || c > 0x7e)
            hc_sb_add(b, "\\u%04x", c);
        else
            hc_sb_add(b, "%c", c);
    }
    if (len > CHANNEL_FIELD_MAX)
        hc_sb_add(b, "%s", CHANNEL_CUT_MARK);
    hc_sb_add(b, "\"");
}

static void hc_sb_send(struct hc_sb *b)
{
    hc_sb_add(b, "\n");
    hc_write_all(b->p, b->len);
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* The channel must be fd 3, open for writing, before any student code runs.
 * Close-on-exec: nothing this process could start should inherit it. */
static void hc_channel_check(void)
{
    int fl = fcntl(HC_CHANNEL_FD, F_GETFL);
    if (fl < 0 || (fl & O_ACCMODE) == O_RDONLY)
        hc_die("fd %d (the result channel) is not open for writing; run me as "
               "`prog ... 3>channel`", HC_CHANNEL_FD);
    (void)fcntl(HC_CHANNEL_FD, F_SETFD, FD_CLOEXEC);
}

/* ---------------------------------------------------------- CUDA helpers */

static __global__ void hc_fill_u32(uint32_t *p, size_t n, uint32_t v)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = v;
}

static __global__ void hc_count_ne_u32(const uint32_t *p, size_t n, uint32_t v,
                                       unsigned long long *count)
{
    unsigned long long c = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        c += p[i] != v;
    if (c)
        atomicAdd(count, c);
}

static int hc_grid(size_t n)
{
    size_t b = (n + 255) / 256;
    return (int)(b < 1 ? 1 : b > 65536 ? 65536 : b);
}

/* Fill n 32-bit words with v (on the legacy default stream, then wait). */
static void hc_fill(void *p, size_t words, uint32_t v)
{
    if (words == 0)
        return;
    hc_fill_u32<<<hc_grid(words), 256>>>((uint32_t *)p, words, v);
    HC_CUDA(cudaGetLastError());
}

/* Number of the n words at p that are not v. */
static unsigned long long hc_count_ne(const void *p, size_t words, uint32_t v)
{
    unsigned long long c = 0;
    if (words == 0)
        return 0;
    HC_CUDA(cudaMemset(hc_dcounter, 0, sizeof(*hc_dcounter)));
    hc_count_ne_u32<<<hc_grid(words), 256>>>((const uint32_t *)p, words, v, hc_dcounter);
    HC_CUDA(cudaGetLastError());
    HC_CUDA(cudaMemcpy(&c, hc_dcounter, sizeof(c), cudaMemcpyDeviceToHost));
    return c;
}

/* Allocations of the current case, each followed by a guard. */
#define HC_MAX_ALLOCS 8
static struct {
    void *p;
    size_t bytes;      /* the buffer the student sees */
    uint32_t guard;    /* bit pattern of the guard words */
} hc_allocs[HC_MAX_ALLOCS];
static int hc_nallocs;

static size_t hc_guard_bytes(void)
{
    return hc_guard_on ? HC_GUARD_BYTES : 0;
}

/* Allocate bytes (a multiple of 4) plus the guard, fill the guard with
 * guard_bits. Returns 0, or -1 with a message on stderr. */
static int hc_alloc(void **out, size_t bytes, uint32_t guard_bits)
{
    void *p = NULL;
    cudaError_t e;
    if (hc_nallocs == HC_MAX_ALLOCS)
        hc_die("too many allocations");
    e = cudaMalloc(&p, bytes + hc_guard_bytes());
    if (e != cudaSuccess) {
        fprintf(stderr, "harness: cudaMalloc(%zu bytes): %s\n", bytes + hc_guard_bytes(),
                cudaGetErrorString(e));
        cudaGetLastError();
        return -1;
    }
    hc_allocs[hc_nallocs].p = p;
    hc_allocs[hc_nallocs].bytes = bytes;
    hc_allocs[hc_nallocs].guard = guard_bits;
    hc_nallocs++;
    hc_fill((char *)p + bytes, hc_guard_bytes() / 4, guard_bits);
    HC_CUDA(cudaDeviceSynchronize());
    *out = p;
    return 0;
}

/* ----------------------------------------------- the student's device memory */
/* The runner links the student's program with -Wl,--wrap for the CUDA
 * allocators (runner/grade/compile.c), so the student's cudaMalloc and cudaFree
 * come here first. While the student's function runs (hc_in_student), what
 * it allocates is counted until it is freed. When the harness later cannot
 * allocate a case's buffers, this tells whose memory filled the GPU: the
 * student's kept allocations (theirs: runtime_error with the MiB they kept),
 * or other jobs' on a shared GPU (ours: system_error, retried, never the
 * student's). Without --wrap (the baselines) nothing comes here and every
 * such failure is ours. The __real_ symbols are weak so that programs linked
 * without --wrap still link. */
#define HC_TRACK_MAX 4096
/* The most device memory the student's code may hold at once. Past it a
 * cudaMalloc fails as out of memory without touching the GPU: one
 * submission cannot take the memory of every job that shares its GPU (the
 * runner admits jobs by their declared need: runner/gpu/admit.h). A lab may
 * define its own before including this file. */
#ifndef HC_STUDENT_DEVICE_MB
#define HC_STUDENT_DEVICE_MB 2048
#endif
static int hc_in_student;
static size_t hc_student_bytes;   /* device bytes the student's code holds now */
static struct {
    void *p;
    size_t n;
} hc_track[HC_TRACK_MAX];
static int hc_ntrack;

/* 1 when the student's code may not have n more bytes (said once on stderr). */
static int hc_over_budget(size_t n)
{
    static int said;
    if (!hc_in_student || hc_student_bytes + n <= ((size_t)HC_STUDENT_DEVICE_MB << 20))
        return 0;
    if (!said++)
        fprintf(stderr, "harness: refused your cudaMalloc of %zu MiB: your code may hold at most "
                        "%d MiB of device memory at once (it holds %zu MiB)\n",
                n >> 20, HC_STUDENT_DEVICE_MB, hc_student_bytes >> 20);
    return 1;
}

static void hc_track_add(void *p, size_t n)
{
    if (!hc_in_student || p == NULL)
        return;
    hc_student_bytes += n;
    if (hc_ntrack < HC_TRACK_MAX) /* past the table: counted, never uncounted (blames) */
        hc_track[hc_ntrack++] = {p, n};
}

static void hc_track_del(void *p)
{
    for (int i = 0; i < hc_ntrack; i++)
        if (hc_track[i].p == p) {
            hc_student_bytes -= hc_track[i].n;
            hc_track[i] = hc_track[--hc_ntrack];
            return;
        }
}

extern "C" {
cudaError_t __real_cudaMalloc(void **p, size_t n) __attribute__((weak));
cudaError_t __real_cudaMallocManaged(void **p, size_t n, unsigned flags) __attribute__((weak));
cudaError_t __real_cudaMallocPitch(void **p, size_t *pitch, size_t w, size_t h)
    __attribute__((weak));
cudaError_t __real_cudaMallocAsync(void **p, size_t n, cudaStream_t s) __attribute__((weak));
cudaError_t __real_cudaFree(void *p) __attribute__((weak));
cudaError_t __real_cudaFreeAsync(void *p, cudaStream_t s) __attribute__((weak));

cudaError_t __wrap_cudaMalloc(void **p, size_t n)
{
    if (hc_over_budget(n))
        return cudaErrorMemoryAllocation;
    cudaError_t e = __real_cudaMalloc(p, n);
    if (e == cudaSuccess && p)
        hc_track_add(*p, n);
    return e;
}

cudaError_t __wrap_cudaMallocManaged(void **p, size_t n, unsigned flags)
{
    if (hc_over_budget(n))
        return cudaErrorMemoryAllocation;
    cudaError_t e = __real_cudaMallocManaged(p, n, flags);
    if (e == cudaSuccess && p)
        hc_track_add(*p, n);
    return e;
}

cudaError_t __wrap_cudaMallocPitch(void **p, size_t *pitch, size_t w, size_t h)
{
    if (hc_over_budget(w * h))
        return cudaErrorMemoryAllocation;
    cudaError_t e = __real_cudaMallocPitch(p, pitch, w, h);
    if (e == cudaSuccess && p && pitch)
        hc_track_add(*p, *pitch * h);
    return e;
}

cudaError_t __wrap_cudaMallocAsync(void **p, size_t n, cudaStream_t st)
{
    if (hc_over_budget(n))
        return cudaErrorMemoryAllocation;
    cudaError_t e = __real_cudaMallocAsync(p, n, st);
    if (e == cudaSuccess && p)
        hc_track_add(*p, n);
    return e;
}

cudaError_t __wrap_cudaFree(void *p)
{
    hc_track_del(p);
    return __real_cudaFree(p);
}

cudaError_t __wrap_cudaFreeAsync(void *p, cudaStream_t st)
{
    hc_track_del(p);
    return __real_cudaFreeAsync(p, st);
}
}

static void hc_free_all(void)
{
    for (int i = 0; i < hc_nallocs; i++)
        cudaFree(hc_allocs[i].p);
    hc_nallocs = 0;
}

/* Guard words of the allocation at p that no longer hold their pattern. */
static unsigned long long hc_guard_damage(const void *p)
{
    for (int i = 0; i < hc_nallocs; i++)
        if (hc_allocs[i].p == p)
            return hc_count_ne((const char *)p + hc_allocs[i].bytes, hc_guard_bytes() / 4,
                               hc_allocs[i].guard);
    hc_die("guard check of an unknown buffer");
}

/* Poison the output and its guard before every call. */
static void hc_poison_output(void)
{
    size_t n;
    float *out = HC_LAB.output(&n);
    hc_fill(out, n + hc_guard_bytes() / 4, HC_POISON_BITS);
}

/* ------------------------------------------------------- error naming */

/* The cause of a CUDA error in words a student can act on. */
static const char *hc_cause(cudaError_t e)
{
    switch (e) {
    case cudaErrorInvalidConfiguration:
        return "invalid configuration argument: a block may have at most 1024 threads "
               "(blockDim.x*y*z <= 1024, blockDim.z <= 64), gridDim.y and gridDim.z at most "
               "65535, gridDim.x at most 2^31-1, and dynamic shared memory over 48 KiB needs "
               "cudaFuncSetAttribute";
    case cudaErrorLaunchOutOfResources:
        return "too many resources requested for launch: registers per thread times threads "
               "per block exceed the SM's register file; use fewer threads per block or "
               "__launch_bounds__";
    case cudaErrorIllegalAddress:
        return "an illegal memory access: check your bounds (an index past the end of a "
               "buffer, a negative or 32-bit-overflowed index, or a host pointer used on the "
               "device)";
    case cudaErrorMisalignedAddress:
        return "a misaligned address: a vector access (float4, int64_t...) at an address "
               "that is not a multiple of its size";
    case cudaErrorIllegalInstruction:
        return "an illegal instruction: often a __syncthreads() that not all threads of a "
               "block reach, or a corrupted function pointer";
    case cudaErrorHardwareStackError:
        return "a stack overflow on the device: deep recursion or large local arrays";
    case cudaErrorAssert:
        return "a device-side assert() failed";
    case cudaErrorLaunchFailure:
        return "the kernel crashed (unspecified launch failure): usually an out-of-bounds "
               "access";
    case cudaErrorLaunchTimeout:
        return "the kernel ran too long and was stopped";
    case cudaErrorMemoryAllocation:
        return "out of memory: your scratch allocation is too large, or you allocate on "
               "every call and never free";
    case cudaErrorInvalidValue:
        /* CUDA 13 reports a block of more than 1024 threads this way too. */
        return "an invalid argument: a kernel launch with more than 1024 threads per block "
               "(or a grid or shared-memory size out of range), or a bad argument to a CUDA "
               "call (a size, a copy direction, a null pointer)";
    case cudaErrorInvalidDevicePointer:
        return "a pointer that is not a device pointer was passed to a CUDA call";
    case cudaErrorInvalidDeviceFunction:
    case cudaErrorNoKernelImageForDevice:
        return "no kernel image for this GPU: do not hard-code -arch flags or use features "
               "this GPU lacks";
    case cudaErrorInvalidPitchValue:
        return "an invalid pitch in a 2D copy or allocation";
    case cudaErrorInvalidResourceHandle:
        return "an invalid handle (stream, event...): was it destroyed already?";
    case cudaErrorCooperativeLaunchTooLarge:
        return "a cooperative launch with more blocks than can be resident at once";
    default:
        return "a CUDA error in your code";
    }
}

/* Whether the context is unusable after e: the known sticky errors, or any
 * error a fresh harmless call still reports. */
static int hc_sticky(cudaError_t e)
{
    switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorMisalignedAddress:
    case cudaErrorIllegalInstruction:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchFailure:
    case cudaErrorLaunchTimeout:
    case cudaErrorInvalidPc:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorECCUncorrectable:
        return 1;
    default:
        break;
    }
    cudaGetLastError();
    if (cudaDeviceSynchronize() != cudaSuccess || cudaMemset(hc_dcounter, 0, 8) != cudaSuccess ||
        cudaDeviceSynchronize() != cudaSuccess)
        return 1;
    return 0;
}

/* Call the student's function once with every error caught: the launch
 * error (cudaGetLastError) and the execution error (the device sync, which
 * also waits for work hidden on other streams). Returns cudaSuccess or the
 * first error; *ms is the host time of call + sync. */
static cudaError_t hc_call(double *ms)
{
    cudaError_t e1, e2;
    double t0, t1;
    (void)cudaGetLastError();
    t0 = hc_now_ms();
    hc_in_student = 1;
    HC_LAB.call();
    hc_in_student = 0;
    e1 = cudaGetLastError();
    e2 = cudaDeviceSynchronize();
    t1 = hc_now_ms();
    if (ms)
        *ms = t1 - t0;
    if (e1 != cudaSuccess)
        return e1;
    if (e2 != cudaSuccess)
        return e2;
    return cudaGetLastError();
}

/* Write the record of a case whose call failed; exit 3 when the context is
 * broken (nothing more can run in this process). */
static void hc_report_error(const char *name, cudaError_t e)
{
    struct hc_sb b = {NULL, 0, 0};
    int sticky = hc_sticky(e);
    hc_sb_add(&b, "{\"type\":\"case\",\"name\":");
    hc_sb_str(&b, name);
    hc_sb_add(&b, ",\"status\":\"%s\",\"error\":", sticky ? "runtime_error" : "launch_error");
    hc_sb_str(&b, cudaGetErrorString(e));
    hc_sb_add(&b, ",\"error_name\":");
    hc_sb_str(&b, cudaGetErrorName(e));
    hc_sb_add(&b, ",\"cause\":");
    hc_sb_str(&b, hc_cause(e));
    hc_sb_add(&b, ",\"fatal\":%s}", sticky ? "true" : "false");
    hc_sb_send(&b);
    if (sticky)
        exit(3);
}

/* A fatal record for hc_blame_case (see above), then exit 3. */
static void hc_blame(const char *msg)
{
    struct hc_sb b = {NULL, 0, 0};
    const char *name = hc_blame_case;
    hc_blame_case = NULL;   /* a failure while writing this must not recurse */
    hc_sb_add(&b, "{\"type\":\"case\",\"name\":");
    hc_sb_str(&b, name);
    hc_sb_add(&b, ",\"status\":\"runtime_error\",\"error\":");
    hc_sb_str(&b, msg);
    hc_sb_add(&b, ",\"error_name\":\"harness\",\"cause\":\"after your code ran, the harness "
                  "could not use its own buffers or allocate the next case's: did you free or "
                  "overwrite memory you were not given, or keep device memory allocated across "
                  "calls?\",\"fatal\":true}");
    hc_sb_send(&b);
    exit(3);
}

/* Write an "ok" case record and the output bytes, in chunks. */
static void hc_report_output(const char *name, uint64_t case_seed, double call_ms)
{
    struct hc_sb b = {NULL, 0, 0};
    size_t n, done = 0;
    float *out = HC_LAB.output(&n);
    unsigned long long modified = HC_LAB.inputs_modified(case_seed);
    unsigned long long oob = hc_guard_damage(out);
    char *buf = (char *)malloc(HC_CHUNK_BYTES);
    if (buf == NULL)
        hc_die("out of memory");
    hc_sb_add(&b, "{\"type\":\"case\",\"name\":");
    hc_sb_str(&b, name);
    hc_sb_add(&b,
              ",\"status\":\"ok\",\"dtype\":\"f32\",\"count\":%zu,\"bytes\":%zu,"
              "\"inputs_modified\":%s,\"modified_count\":%llu,\"oob_writes\":%llu,"
              "\"call_ms\":%.6f}",
              n, n * 4, modified ? "true" : "false", modified, oob, call_ms);
    hc_sb_send(&b);
    while (done < n * 4) {
        size_t len = n * 4 - done < HC_CHUNK_BYTES ? n * 4 - done : HC_CHUNK_BYTES;
        HC_CUDA(cudaMemcpy(buf, (char *)out + done, len, cudaMemcpyDeviceToHost));
        hc_write_all(buf, len);
        done += len;
    }
    free(buf);
}

/* ---------------------------------------------------------------- cases */

static const struct lab_case_def *hc_case_find(const char *name)
{
    for (size_t i = 0; i < LAB_NCASES; i++)
        if (strcmp(LAB_CASES[i].name, name) == 0)
            return &LAB_CASES[i];
    return NULL;
}

static void hc_setup(const struct lab_case_def *c, uint64_t case_seed)
{
    /* Once student code has run, memory it kept can be why this fails. */
    if (hc_student_ran)
        hc_blame_case = c->name;
    for (int attempt = 0;; attempt++) {
        if (HC_LAB.setup(c, case_seed) == 0)
            break;
        cudaError_t e = cudaGetLastError();
        hc_free_all();
        if (e == cudaErrorMemoryAllocation && hc_student_bytes < (1u << 20)) {
            /* Out of device memory while the student holds (almost) none:
             * other jobs on this GPU have it. Wait a little for them, then
             * it is ours (system_error, retried), never the student's. */
            if (attempt < 3) {
                struct timespec ts = {0, 500000000};
                nanosleep(&ts, NULL);
                continue;
            }
            hc_blame_case = NULL;
            hc_die("case %s: could not allocate its buffers: the GPU's memory is taken by other "
                   "jobs (your code holds %zu KiB)", c->name, hc_student_bytes >> 10);
        }
        if (e == cudaErrorMemoryAllocation && hc_blame_case != NULL) {
            char msg[300];
            snprintf(msg, sizeof msg,
                     "case %s: could not allocate its buffers: your code kept %zu MiB of device "
                     "memory allocated after it returned (cudaMalloc without cudaFree); free "
                     "what you allocate before your function returns",
                     c->name, hc_student_bytes >> 20);
            hc_die("%s", msg);
        }
        hc_die("case %s: could not allocate its buffers", c->name);
    }
    HC_CUDA(cudaDeviceSynchronize());
    hc_blame_case = NULL;
}

/* One correctness case: fresh inputs, poisoned output, one call. */
static void hc_run_check(const struct lab_case_def *c, uint64_t seed)
{
    uint64_t cs = gen_case_seed(seed, c->name);
    double ms = 0;
    cudaError_t e;
    hc_setup(c, cs);
    hc_poison_output();
    HC_CUDA(cudaDeviceSynchronize());
    hc_blame_case = c->name;
    hc_student_ran = 1;
    e = hc_call(&ms);
    if (e != cudaSuccess)
        hc_report_error(c->name, e);
    else
        hc_report_output(c->name, cs, ms);
    hc_blame_case = NULL;
    HC_LAB.teardown();
    hc_free_all();
}

#include "harness_time.cu" /* hc_run_time: the timing loop, the L2 flush, the gate */

/* ---------------------------------------------------------------- device */

/* FP32 lanes per SM by compute capability (CUDA C Programming Guide, "Arithmetic
 * Instructions" throughput table). */
static int hc_fp32_per_sm(int major, int minor)
{
    if (major == 6)
        return minor == 0 ? 64 : 128;
    if (major == 7)
        return 64;
    if (major == 8)
        return minor == 0 ? 64 : 128;
    return 128;   /* 9.x, 10.x, 12.x */
}

/* Device-to-device copy bandwidth, (bytes read + bytes written) / time,
 * median of 15 copies of 256 MiB (less on small GPUs). */
static double hc_copy_gbs(void)
{
    size_t freeb = 0, total = 0, bytes = 256u << 20;
    void *a, *b;
    cudaEvent_t e0, e1;
    float t[15];
    HC_CUDA(cudaMemGetInfo(&freeb, &total));
    while (bytes > (1u << 20) && 2 * bytes > freeb / 2)
        bytes /= 2;
    HC_CUDA(cudaMalloc(&a, bytes));
    HC_CUDA(cudaMalloc(&b, bytes));
    HC_CUDA(cudaMemset(a, 1, bytes));
    HC_CUDA(cudaMemset(b, 2, bytes));
    HC_CUDA(cudaEventCreate(&e0));
    HC_CUDA(cudaEventCreate(&e1));
    for (int i = 0; i < 3; i++)
        HC_CUDA(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
    for (int i = 0; i < 15; i++) {
        HC_CUDA(cudaEventRecord(e0, 0));
        HC_CUDA(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, 0));
        HC_CUDA(cudaEventRecord(e1, 0));
        HC_CUDA(cudaEventSynchronize(e1));
        HC_CUDA(cudaEventElapsedTime(&t[i], e0, e1));
    }
    qsort(t, 15, sizeof(float), [](const void *x, const void *y) {
        float p = *(const float *)x, q = *(const float *)y;
        return p < q ? -1 : p > q;
    });
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaFree(a);
    cudaFree(b);
    return 2.0 * bytes / (t[7] * 1e-3) / 1e9;
}

static void hc_report_device(void)
{
    struct cudaDeviceProp prop;
    struct hc_sb b = {NULL, 0, 0};
    int clock_khz = 0, l2 = 0, rt = 0, drv = 0;
    unsigned flags = 0;
    double peak;
    HC_CUDA(cudaGetDeviceProperties(&prop, 0));
    HC_CUDA(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
    HC_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    cudaRuntimeGetVersion(&rt);
    cudaDriverGetVersion(&drv);
    if (cudaGetDeviceFlags(&flags) != cudaSuccess)
        (void)cudaGetLastError();
    peak = 2.0 * prop.multiProcessorCount * hc_fp32_per_sm(prop.major, prop.minor) *
           (clock_khz * 1e3) / 1e9;
    /* Under compute-sanitizer the channel is never judged and the copies
     * only cost time (the sanitizer runs are on the grading's critical
     * path): report 0, "not measured". */
    double copy_gbs = getenv("CUDA_INJECTION64_PATH") != NULL ? 0.0 : hc_copy_gbs();
    hc_sb_add(&b, "{\"type\":\"device\",\"name\":");
    hc_sb_str(&b, prop.name);
    hc_sb_add(&b,
              ",\"cc\":\"%d.%d\",\"sms\":%d,\"copy_gbs\":%.1f,\"peak_fp32_gflops\":%.0f,"
              "\"clock_mhz\":%d,\"l2_bytes\":%d,\"mem_bytes\":%zu,\"runtime\":%d,\"driver\":%d,"
              "\"sync\":\"%s\"}",
              prop.major, prop.minor, prop.multiProcessorCount, copy_gbs, peak, clock_khz / 1000,
              l2, prop.totalGlobalMem, rt, drv,
              (flags & cudaDeviceScheduleMask) == cudaDeviceScheduleBlockingSync ? "blocking"
              : (flags & cudaDeviceScheduleMask) == cudaDeviceScheduleSpin       ? "spin"
              : (flags & cudaDeviceScheduleMask) == cudaDeviceScheduleYield      ? "yield"
                                                                                 : "auto");
    hc_sb_send(&b);
}

/* ------------------------------------------------------------------ main */

/* --seed-fd N: the run's seed is the text on descriptor N (a pipe the
 * runner wrote and closed: run_opts.secret), read to its end and closed
 * before any student code runs, so it is on no command line and in no
 * environment (bwrap's init, pid 1 inside, keeps both readable). Returns
 * buf, or dies. */
static const char *hc_seed_read(const char *num, char *buf, size_t len)
{
    char *end;
    long fd = strtol(num, &end, 10);
    size_t n = 0;
    if (*end || fd < 0 || fd > 1023)
        hc_die("--seed-fd: a descriptor number");
    for (;;) {
        ssize_t r = read((int)fd, buf + n, len - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            hc_die("--seed-fd: cannot read descriptor %ld: %s", fd, strerror(errno));
        if (r == 0)
            break;
        n += (size_t)r;
        if (n == len - 1)
            hc_die("--seed-fd: more than a seed");
    }
    close((int)fd);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        n--;
    buf[n] = '\0';
    return buf;
}

static void hc_usage(void) __attribute__((noreturn));
static void hc_usage(void)
{
    fprintf(stderr,
            "usage: prog check (--seed HEX | --seed-fd N) --cases a,b,c [--no-guard]\n"
            "       prog time  (--seed HEX | --seed-fd N) --case NAME [--max-ms N] [--no-guard] "
            "[--gate FD]\n"
            "       prog device\n"
            "Records go to fd 3 (docs/formats.md). Lab %s, cases:",
            LAB_NAME);
    for (size_t i = 0; i < LAB_NCASES; i++)
        fprintf(stderr, " %s", LAB_CASES[i].name);
    fputc('\n', stderr);
    hc_harness_error("bad command line");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *mode, *seed_s = NULL, *cases = NULL, *one = NULL;
    static char seed_buf[80];
    double max_ms = 3000;
    uint64_t seed = 0;
    struct hc_sb b = {NULL, 0, 0};

    if (argc < 2)
        hc_usage();
    mode = argv[1];
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--no-guard") == 0) {
            hc_guard_on = 0;
        } else if (i + 1 < argc && strcmp(argv[i], "--seed") == 0) {
            seed_s = argv[++i];
        } else if (i + 1 < argc && strcmp(argv[i], "--seed-fd") == 0) {
            seed_s = hc_seed_read(argv[++i], seed_buf, sizeof seed_buf);
        } else if (i + 1 < argc && strcmp(argv[i], "--cases") == 0) {
            cases = argv[++i];
        } else if (i + 1 < argc && strcmp(argv[i], "--case") == 0) {
            one = argv[++i];
        } else if (i + 1 < argc && strcmp(argv[i], "--gate") == 0) {
            char *end;
            long fd = strtol(argv[++i], &end, 10);
            if (*end || fd < 4 || fd > 1023 || fcntl((int)fd, F_GETFD) < 0)
                hc_die("--gate: an open descriptor from 4");
            hc_gate_fd = (int)fd;
        } else if (i + 1 < argc && strcmp(argv[i], "--max-ms") == 0) {
            char *end;
            max_ms = strtod(argv[++i], &end);
            if (*end || !(max_ms >= 1 && max_ms <= 600000))
                hc_die("--max-ms: a number of milliseconds in [1, 600000]");
        } else {
            hc_usage();
        }
    }
    /* compute-sanitizer's memcheck must see the exact allocations. */
    if (getenv("CUDA_INJECTION64_PATH") != NULL)
        hc_guard_on = 0;

    if (strcmp(mode, "check") == 0 || strcmp(mode, "time") == 0) {
        if (seed_s == NULL || gen_seed_parse_wide(seed_s, &seed) != 0)
            hc_die("--seed: 1 to 32 hex digits");
    } else if (strcmp(mode, "device") != 0) {
        hc_usage();
    }
    if (strcmp(mode, "check") == 0 && (cases == NULL || one != NULL))
        hc_usage();
    if (strcmp(mode, "time") == 0 && (one == NULL || cases != NULL))
        hc_usage();

    /* Validate every name before any student code runs. */
    if (cases != NULL) {
        char *list = strdup(cases), *save = NULL;
        if (list == NULL)
            hc_die("out of memory");
        for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
            if (hc_case_find(t) == NULL)
                hc_die("unknown case \"%s\"", t);
        free(list);
    }
    if (one != NULL && hc_case_find(one) == NULL)
        hc_die("unknown case \"%s\"", one);

    hc_channel_check();
    /* A check run waits for the GPU asleep, not spinning on a core (the
     * default for a process of one context on a host of many cores): in a
     * burst, every check run and sanitizer run shares the GPU with other
     * jobs' contexts, and their spinning took the host's CPUs. Before the
     * context exists (cudaSetDevice makes it). A timing run holds the GPU
     * alone and waits as the baselines' runs do. Refused: the default
     * stands (the device record says which). */
    if (strcmp(mode, "check") == 0 &&
        cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync) != cudaSuccess)
        (void)cudaGetLastError();
    HC_CUDA(cudaSetDevice(0));
    HC_CUDA(cudaFree(0));
    HC_CUDA(cudaMalloc(&hc_dcounter, sizeof(*hc_dcounter)));
    hc_report_device();

    if (strcmp(mode, "check") == 0) {
        char *list = strdup(cases), *save = NULL;
        for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
            hc_run_check(hc_case_find(t), seed);
        free(list);
    } else if (strcmp(mode, "time") == 0) {
        hc_run_time(hc_case_find(one), seed, max_ms);
    }
    hc_sb_add(&b, "{\"type\":\"done\"}");
    hc_sb_send(&b);
    return 0;
}
