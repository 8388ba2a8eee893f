/*
 * runner_inspect.c - unit tests for runner/grade/inspect.c on real objects built
 * with nvcc from tests/runner/fixtures/ (skipped when nvcc is missing), and
 * for the text parsers beside it: compiler-log cleaning and
 * compute-sanitizer findings. Prints TAP lines.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab.h"
#include "runner/grade/compile.h"
#include "runner/grade/grade.h"
#include "runner/grade/inspect.h"
#include "runner/grade/score.h"

static int failures;
static char tmp[] = "/tmp/cugrade-inspect-XXXXXX";
static const char *root;

static void check(int cond, const char *name)
{
    printf("%s - %s\n", cond ? "ok" : "not ok", name);
    if (!cond)
        failures++;
}

/* nvcc -c the fixture (or inline source when src is set) into tmp; 0 on success. */
static int build(const char *fixture, const char *src, char *obj, size_t len)
{
    char cu[512], cmd[2048];
    if (src) {
        snprintf(cu, sizeof cu, "%s/%s", tmp, fixture);
        FILE *f = fopen(cu, "w");
        if (!f)
            return -1;
        fputs(src, f);
        fclose(f);
    } else {
        snprintf(cu, sizeof cu, "%s/tests/runner/fixtures/%s", root, fixture);
    }
    snprintf(obj, len, "%s/%s.o", tmp, fixture);
    snprintf(cmd, sizeof cmd,
             "/usr/local/cuda/bin/nvcc -c -O3 -lineinfo -arch=sm_90 '%s' -o '%s' 2>/dev/null", cu,
             obj);
    return system(cmd);
}

static void expect(const struct lab *lab, const char *fixture, const char *src, int accepted,
                   const char *symbol, const char *reason_part, const char *name)
{
    char obj[600];
    struct inspect_report rep;
    if (build(fixture, src, obj, sizeof obj) != 0) {
        printf("not ok - %s (nvcc failed on %s)\n", name, fixture);
        failures++;
        return;
    }
    int r = inspect_object(obj, lab, &rep);
    int ok = r == 0 && rep.accepted == accepted;
    if (ok && symbol)
        ok = strstr(rep.symbol, symbol) != NULL;
    if (ok && reason_part)
        ok = strstr(rep.reason, reason_part) != NULL;
    check(ok, name);
    if (!ok)
        printf("#   accepted=%d symbol=%s reason=%s\n", rep.accepted, rep.symbol, rep.reason);
}

static void test_sanitizer_parse(void)
{
    struct score_sanitizer s = {.tool = "memcheck"};
    grade_sanitizer_parse(
        "========= COMPUTE-SANITIZER\n"
        "========= Invalid __global__ write of size 4 bytes\n"
        "=========     at matmul_naive(const float *, const float *, float *, int, int, int)+0x2d0 in /work/kernel.cu:14\n"
        "=========     by thread (16,0,0) in block (1,0,0)\n"
        "=========     Address 0x7f4c0000 is out of bounds\n"
        "=========     Host Frame: [0x2fd8ef]\n"
        "=========                in /lib/x86_64-linux-gnu/libcuda.so.1\n"
        "========= Invalid __global__ read of size 4 bytes\n"
        "=========     at 0x1f0 in /work/kernel.cu:9:k(float *, int)\n"
        "========= ERROR SUMMARY: 2 errors\n",
        &s);
    check(s.nfindings == 2, "memcheck: two findings");
    check(s.nfindings >= 1 && s.findings[0].file && strcmp(s.findings[0].file, "kernel.cu") == 0 &&
              s.findings[0].line == 14,
          "memcheck: file:line from the device frame, /work/ cleaned");
    check(s.nfindings >= 2 && s.findings[1].line == 9,
          "memcheck: the newer 'at 0x.. in file:line:function' format");
    check(s.nfindings >= 1 && s.findings[0].hint && strstr(s.findings[0].hint, "bounds check"),
          "memcheck: an out-of-bounds write gets the bounds-check hint");
    score_sanitizer_clear(&s);

    struct score_sanitizer rc = {.tool = "racecheck"};
    grade_sanitizer_parse(
        "========= COMPUTE-SANITIZER\n"
        "========= Error: Race reported between Write access at reduce(const float *, float *, unsigned long)+0x1a0 in /work/kernel.cu:20\n"
        "=========     and Read access at reduce(const float *, float *, unsigned long)+0x1c0 in /work/kernel.cu:22 [512 hazards]\n"
        "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n",
        &rc);
    check(rc.nfindings == 1 && rc.findings[0].line == 20 && rc.findings[0].hint &&
              strstr(rc.findings[0].hint, "__syncthreads()"),
          "racecheck: a race at kernel.cu:20 with the __syncthreads() hint");
    score_sanitizer_clear(&rc);

    /* compute-sanitizer 2023+: "ERROR: Race reported ... at 0x.. in file:line:function". */
    struct score_sanitizer r2 = {.tool = "racecheck"};
    grade_sanitizer_parse(
        "========= COMPUTE-SANITIZER\n"
        "========= ERROR: Race reported between Read access at 0x6360 in /work/kernel.cu:23:tile(float const*, int)\n"
        "=========     and Write access at 0x1fe0 in /work/kernel.cu:19:tile(float const*, int) [1088 hazards]\n"
        "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n",
        &r2);
    check(r2.nfindings == 1 && r2.findings[0].line == 23 && r2.findings[0].file &&
              strcmp(r2.findings[0].file, "kernel.cu") == 0,
          "racecheck, newer format: ERROR: Race reported ... kernel.cu:23:function");
    score_sanitizer_clear(&r2);

    /* As memcheck printed it on the H200 for a 2048-thread block (CUDA 13). */
    struct score_sanitizer m2 = {.tool = "memcheck"};
    grade_sanitizer_parse(
        "========= COMPUTE-SANITIZER\n"
        "========= Program hit cudaErrorInvalidValue (error 1) due to \"invalid argument\" on CUDA API call to cudaLaunchKernel.\n"
        "=========     Saved host backtrace up to driver entry point at error\n"
        "========= ERROR SUMMARY: 1 error\n",
        &m2);
    check(m2.nfindings == 1 && m2.findings[0].hint && strstr(m2.findings[0].hint, "1024 threads"),
          "memcheck: a failed launch gets the launch-configuration hint");
    score_sanitizer_clear(&m2);
}

int main(void)
{
    struct lab lab;
    char err[256], dir[512];
    root = getenv("CUGRADE_ROOT");
    if (!root)
        root = ".";

    char *c = compile_log_clean("/work/kernel.cu(12): error: x\n/tmp/tmpxft_0000abcd_00000000-6_kernel.cudafe1.cpp:3: note\n/usr/bin/ld: /lab/harness.o: in function main\n");
    check(c && strcmp(c, "kernel.cu(12): error: x\nkernel.cudafe1.cpp:3: note\n/usr/bin/ld: harness.o: in function main\n") == 0,
          "compiler output: sandbox paths cleaned, line numbers kept");
    free(c);
    check(compile_starved(60, 2, 40) && compile_starved(3, 0.1, 2.8),
          "compile timeout: waited for a CPU longer than it ran, most of the limit: starved (ours)");
    check(!compile_starved(60, 50, 10) && !compile_starved(60, 0.2, 0.3) && !compile_starved(60, 20, 20.5 - 1),
          "compile timeout: ran more than it waited, or hardly waited: the file's (a heavy or blocking file)");
    check(!compile_starved(60, 0.1, -1) && !compile_starved(0, 0, 5),
          "compile timeout: no CPU-pressure accounting (or no limit): charged as before");
    test_sanitizer_parse();

    snprintf(dir, sizeof dir, "%s/labs/matmul", root);
    if (lab_load(dir, &lab, err, sizeof err) != 0) {
        printf("not ok - load labs/matmul: %s\n", err);
        return 1;
    }
    if (access("/usr/local/cuda/bin/nvcc", X_OK) != 0 || !mkdtemp(tmp)) {
        /* make test installs the toolkit's nvcc; without it the inspection
         * of real objects is untested: a failure, not a skip. */
        printf("not ok - nvcc not installed (or no temp dir): object inspection not tested\n");
        lab_free(&lab);
        return 1;
    }
    struct lab red, emb;
    /* A lab that does not load is a failure, not a check left out: its
     * objects' inspection would go untested without a word. */
    snprintf(dir, sizeof dir, "%s/labs/reduction", root);
    int have_red = lab_load(dir, &red, err, sizeof err) == 0;
    if (!have_red)
        printf("#   %s\n", err);
    check(have_red, "labs/reduction loads");
    snprintf(dir, sizeof dir, "%s/labs/embedding", root);
    int have_emb = lab_load(dir, &emb, err, sizeof err) == 0;
    if (!have_emb)
        printf("#   %s\n", err);
    check(have_emb, "labs/embedding loads");

    expect(&lab, "good_matmul.cu", NULL, 1, NULL, NULL, "a tiled matmul passes inspection");
    if (have_red)
        expect(&red, "good_reduction.cu", NULL, 1, NULL, NULL, "a reduction with atomicAdd passes");
    if (have_emb)
        expect(&emb, "good_embedding.cu", NULL, 1, NULL, NULL, "an embedding gather passes");
    expect(&lab, "cublas_matmul.cu", NULL, 0, "cublas", "cuBLAS is not allowed",
           "cuBLAS in the matmul lab is rejected with the lab's reason");
    expect(&lab, "dlopen_matmul.cu", NULL, 0, "dl", "at run time",
           "dlopen/dlsym is rejected");
    expect(&lab, "define_event_elapsed.cu", NULL, 0, "cudaEventElapsedTime", "CUDA runtime",
           "defining cudaEventElapsedTime is rejected");
    expect(&lab, "define_write.cu", NULL, 0, "write", "C library", "defining write() is rejected");
    expect(&lab, "static_ctor.cu", NULL, 0, NULL, "static constructor",
           "a global object with a constructor is rejected");
    expect(&lab, "attr_ctor.cu", NULL, 0, "before_main", "static constructor",
           "__attribute__((constructor)) is rejected, named demangled");
    expect(&lab, "destructor.cu", NULL, 0, ".fini_array", NULL, "a destructor is rejected");
    expect(&lab, "raw_syscall.cu", NULL, 0, "matmul", "syscall", "inline asm syscall is rejected");
    expect(&lab, "missing_interface.cu", NULL, 0, "matmul", "does not define",
           "a file without the interface is rejected");
    expect(&lab, "hidden_syscall.cu",
           "extern \"C\" void matmul(const float* A, const float* B, float* C, int M, int N, int K)\n"
           "{ asm volatile(\"jmp 1f\\n .byte 0x0f, 0x05\\n 1:\"); }\n",
           0, NULL, "syscall", "syscall bytes hidden from a linear disassembly are found");
    expect(&lab, "init_array_ptr.cu",
           "static void evil(void) {}\n"
           "__attribute__((section(\".init_array\"), used)) static void (*p)(void) = evil;\n"
           "extern \"C\" void matmul(const float* A, const float* B, float* C, int M, int N, int K) {}\n",
           0, NULL, "static constructor", "a function pointer placed in .init_array is rejected");
    expect(&lab, "driver_api.cu",
           "#include <cuda.h>\n"
           "extern \"C\" void matmul(const float* A, const float* B, float* C, int M, int N, int K)\n"
           "{ cuInit(0); }\n",
           0, "cuInit", "driver API", "the driver API is rejected");
    expect(&lab, "stream.cu",
           "extern \"C\" void matmul(const float* A, const float* B, float* C, int M, int N, int K)\n"
           "{ cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking); }\n",
           0, "cudaStreamCreate", "default stream", "stream creation is rejected where forbidden");
    expect(&lab, "helpers.cu",
           "#include <cstdio>\n"
           "__device__ float sq(float x) { return x * x; }\n"
           "float scale_factor = 1.0f;\n"
           "int cube(int x) { return x * x * x; }\n"
           "__global__ void k(float* c, int f) { c[0] = sq(c[0]) * f; }\n"
           "extern \"C\" void matmul(const float* A, const float* B, float* C, int M, int N, int K)\n"
           "{ static int calls; if (!calls++) printf(\"hi\\n\"); k<<<1, 1>>>(C, cube(2)); }\n",
           1, NULL, NULL, "own helpers, globals, printf and function-local statics pass");

    expect(&lab, "std_templates.cu",
           "#include <vector>\n#include <algorithm>\n"
           "extern \"C\" void matmul(const float* A, const float* B, float* C, int M, int N, int K)\n"
           "{ std::vector<int> v; for (int i = 0; i < M; i++) v.push_back(i * 7 % 13);\n"
           "  std::vector<std::vector<float>> w(N); for (auto& x : w) x.push_back(1.0f);\n"
           "  std::sort(v.begin(), v.end()); }\n",
           1, NULL, NULL, "weak std:: template instantiations (vector<T>::_M_realloc_insert) pass");
    expect(&lab, "std_strong.cu",
           "namespace std { void terminate() noexcept { } }\n"
           "extern \"C\" void matmul(const float* A, const float* B, float* C, int M, int N, int K) {}\n",
           0, "std::terminate", "C++ runtime", "a strong definition in std:: is rejected");

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0)
        fprintf(stderr, "cleanup failed\n");
    lab_free(&lab);
    if (have_red)
        lab_free(&red);
    if (have_emb)
        lab_free(&emb);
    return failures ? 1 : 0;
}
