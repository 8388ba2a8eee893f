/*
 * common_lab.c - unit tests for common/lab.c: loading lab.json, the errors a
 * course author sees, allow-list matching, and the real labs/ of this repo.
 * TAP: "ok - name" / "not ok - name".
 */
#include "lab.h"
#include "formula.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/tap.h"

static char root[200];

static void write_file(const char *lab, const char *file, const char *text)
{
    char path[512];
    FILE *f;
    snprintf(path, sizeof(path), "%s/%s", root, lab);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/%s/%s", root, lab, file);
    f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        exit(2);
    }
    fputs(text, f);
    fclose(f);
}

static const char *good =
    "{\"lab\":\"matmul\",\"title\":\"Tiled matrix multiply\",\n"
    " \"interface\":\"extern \\\"C\\\" void matmul(const float* A, const float* B, float* C, "
    "int M, int N, int K);\",\n"
    " \"symbol\":\"matmul\",\"nvcc_flags\":[\"-O3\",\"-lineinfo\"],\"link_libs\":[],\n"
    " \"allow\":{\"undefined\":[\"cudaMalloc\",\"cuda*\",\"__cuda*\",\"printf\"],\n"
    "   \"forbidden\":{\"cublas*\":\"cuBLAS is not allowed\",\"cudaStreamCreate*\":\"default "
    "stream only\",\"dlopen\":\"no dlopen\"}},\n"
    " \"cases\":[{\"name\":\"1x1x1\",\"params\":{\"M\":1,\"N\":1,\"K\":1}},\n"
    "           {\"name\":\"17x31x13\",\"params\":{\"M\":17,\"N\":31,\"K\":13}},\n"
    "           {\"name\":\"4096^3\",\"params\":{\"M\":4096,\"N\":4096,\"K\":4096},"
    "\"timing\":true}],\n"
    " \"sanitize_case\":\"17x31x13\",\"timing_case\":\"4096^3\",\n"
    " \"baselines\":[\"naive\",\"optimized\",\"cublas\"],\n"
    " \"limits\":{\"compile_seconds\":60,\"run_seconds\":120,\"memory_mb\":16384}}\n";

/* Replace the first occurrence of from in good by to, write it as lab "name". */
/* The good lab.json with `from` replaced by `to`, loaded into *lab (the
 * caller frees it when 0 comes back). */
static int load_variant_lab(const char *name, const char *from, const char *to, struct lab *lab,
                            char *err, size_t errlen)
{
    char text[8192], dir[512];
    const char *p = strstr(good, from);
    if (p == NULL) {
        fprintf(stderr, "# variant %s: pattern not found\n", name);
        exit(2);
    }
    snprintf(text, sizeof(text), "%.*s%s%s", (int)(p - good), good, to, p + strlen(from));
    /* root/<name>/matmul: the folder name must match "lab" */
    snprintf(dir, sizeof(dir), "%s/%s", root, name);
    mkdir(dir, 0755);
    snprintf(dir, sizeof(dir), "%s/matmul", name);
    write_file(dir, "lab.json", text);
    snprintf(dir, sizeof(dir), "%s/%s/matmul", root, name);
    return lab_load(dir, lab, err, errlen);
}

static int load_variant(const char *name, const char *from, const char *to, char *err,
                        size_t errlen)
{
    struct lab lab;
    int rc = load_variant_lab(name, from, to, &lab, err, errlen);
    if (rc == 0)
        lab_free(&lab);
    return rc;
}

static int err_has(int rc, const char *err, const char *needle)
{
    if (rc == 0 || strstr(err, needle) == NULL) {
        fprintf(stderr, "# rc=%d err=\"%s\" (wanted \"%s\")\n", rc, err, needle);
        return 0;
    }
    return 1;
}

/* "work": formulas over a case's params, checked for every case at load,
 * and the repository's labs' formulas giving what the runner computed from
 * their names before (2MNK flops; 4(MK + KN + MN) bytes; ...). */
static void test_work(void)
{
    char err[512], dir[512];
    struct lab lab;
    double x = 0;
    int rc = load_variant("work_q", " \"sanitize_case\"",
                          " \"work\":{\"flops\":\"2*M*N*Q\"},\n \"sanitize_case\"", err,
                          sizeof err);
    check(err_has(rc, err, "work.flops: case 1x1x1: unknown name \"Q\""),
          "a formula naming no param is refused at load, naming the field and the case");
    rc = load_variant("work_syntax", " \"sanitize_case\"",
                      " \"work\":{\"bytes\":\"4*(M*K\"},\n \"sanitize_case\"", err,
                      sizeof err);
    check(err_has(rc, err, "work.bytes: case 1x1x1: expected ')'"), "an unclosed '(' is refused");
    rc = load_variant("work_key", " \"sanitize_case\"",
                      " \"work\":{\"flop\":\"M\"},\n \"sanitize_case\"", err, sizeof err);
    check(err_has(rc, err, "work.flop: unknown field"), "a misspelt work field is refused");
    rc = load_variant("work_num", " \"sanitize_case\"",
                      " \"work\":{\"flops\":3},\n \"sanitize_case\"", err, sizeof err);
    check(err_has(rc, err, "work.flops: must be a formula"), "a formula must be a string");
    check(formula_eval("max(2, -3*4, 1) + min(8, 6) / 2 - (1 - 2)", NULL, &x, err, sizeof err) ==
                  0 &&
              x == 6,
          "formula: max, min, unary minus, precedence, parentheses");
    check(formula_eval("1 / 0", NULL, &x, err, sizeof err) == -EINVAL &&
              formula_eval("", NULL, &x, err, sizeof err) == -EINVAL &&
              formula_eval("2 3", NULL, &x, err, sizeof err) == -EINVAL &&
              formula_eval("sqrt(4)", NULL, &x, err, sizeof err) == -EINVAL,
          "formula: division by zero, empty, trailing junk, an unknown function refused");

    const char *repo = getenv("CUGRADE_ROOT");
    if (!repo)
        return;
    snprintf(dir, sizeof dir, "%s/labs/matmul", repo);
    if (lab_load(dir, &lab, err, sizeof err) == 0) {
        const struct lab_case *c = lab_case_find(&lab, "17x31x13");
        double b = 0, f = 0, e = 0;
        check(lab_case_work(&lab, c, "bytes", &b) == 0 &&
                  b == 4.0 * (17 * 13 + 13 * 31 + 17 * 31) &&
                  lab_case_work(&lab, c, "flops", &f) == 0 && f == 2.0 * 17 * 31 * 13 &&
                  lab_case_work(&lab, c, "elements", &e) == 0 && e == 17 * 31,
              "labs/matmul: bytes 4(MK + KN + MN), flops 2MNK, elements the largest matrix");
        lab_free(&lab);
    }
    snprintf(dir, sizeof dir, "%s/labs/embedding", repo);
    if (lab_load(dir, &lab, err, sizeof err) == 0) {
        const struct lab_case *c = lab_case_find(&lab, "1000x33");
        double b = 0, e = 0;
        check(lab_case_work(&lab, c, "bytes", &b) == 0 && b == 1000 * 8 + 2.0 * 1000 * 33 * 4 &&
                  lab_case_work(&lab, c, "flops", &x) == -ENOENT &&
                  lab_case_work(&lab, c, "elements", &e) == 0 && e == 5000 * 33,
              "labs/embedding: bytes of indices and rows, no flops, elements the table");
        lab_free(&lab);
    }
    snprintf(dir, sizeof dir, "%s/labs/reduction", repo);
    if (lab_load(dir, &lab, err, sizeof err) == 0) {
        const struct lab_case *c = lab_case_find(&lab, "1000");
        double b = 0, f = 0;
        check(lab_case_work(&lab, c, "bytes", &b) == 0 && b == 4000 &&
                  lab_case_work(&lab, c, "flops", &f) == 0 && f == 1000 &&
                  lab_case_work(&lab, c, "elements", &x) == -ENOENT,
              "labs/reduction: 4n bytes, n flops, elements left to the largest param");
        lab_free(&lab);
    }
}

/* "allow": {"base": NAME}: the shared list NAME of common/allow.json beside
 * the lab's folder, the lab's own patterns added to it; the repository's
 * matmul keeps every rule it had when it carried its own copy. */
/* "language": "cuda" or "python" when present; a typo fails the load
 * (before, it was ignored: a Python-only lab then took .cu files). */
static void test_language(void)
{
    char err[512];
    int rc = load_variant("lang_typo", " \"sanitize_case\"",
                          " \"language\":\"pyhton\",\n \"sanitize_case\"", err, sizeof err);
    check(err_has(rc, err, "language: must be \"cuda\" or \"python\" (not \"pyhton\")"),
          "a misspelt language is refused at load, naming the value");
    rc = load_variant("lang_num", " \"sanitize_case\"",
                      " \"language\":1,\n \"sanitize_case\"", err, sizeof err);
    check(err_has(rc, err, "language: must be"), "a language that is not a string is refused");
    /* The one reading of "language" (the runner and the server ask
     * lab.python_only, neither parses lab.json again). */
    struct lab lab;
    rc = load_variant_lab("lang_py", " \"sanitize_case\"",
                          " \"language\":\"python\",\n \"sanitize_case\"", &lab, err, sizeof err);
    check(rc == 0 && lab.python_only == 1, "\"python\" loads: python_only");
    if (rc == 0)
        lab_free(&lab);
    rc = load_variant_lab("lang_cuda", " \"sanitize_case\"",
                          " \"language\":\"cuda\",\n \"sanitize_case\"", &lab, err, sizeof err);
    check(rc == 0 && lab.python_only == 0, "\"cuda\" loads: not python_only");
    if (rc == 0)
        lab_free(&lab);
    rc = load_variant_lab("lang_none", " \"sanitize_case\"", " \"sanitize_case\"", &lab, err,
                          sizeof err);
    check(rc == 0 && lab.python_only == 0, "no language: not python_only");
    if (rc == 0)
        lab_free(&lab);
}

/* "python": {"owner", "hide"} is read here, once (the runner uses
 * lab.python_owner and lab.python_hide); a bad owner name or a relative
 * hide pattern fails the load, naming the field. */
static void test_python(void)
{
    char err[512];
    struct lab lab;
    int rc =
        load_variant_lab("py_ok", " \"sanitize_case\"",
                         " \"python\":{\"owner\":\"lab.py\",\"hide\":[\"/usr/lib/libx*.so*\","
                         "\"@python/lib/liby.so\"],\"hide_message\":\"no\"},\n \"sanitize_case\"",
                         &lab, err, sizeof err);
    check(rc == 0 && lab.python_owner && strcmp(lab.python_owner, "lab.py") == 0 &&
              lab.npython_hide == 2 && strcmp(lab.python_hide[1], "@python/lib/liby.so") == 0 &&
              !lab.python_pool,
          "python.owner and python.hide are the lab's fields; no \"pool\": no warm mode");
    if (rc == 0)
        lab_free(&lab);
    rc = load_variant_lab("py_pool", " \"sanitize_case\"",
                          " \"python\":{\"owner\":\"lab.py\",\"pool\":true},\n \"sanitize_case\"",
                          &lab, err, sizeof err);
    check(rc == 0 && lab.python_pool, "python.pool true: the own owner has the warm pool's mode");
    if (rc == 0)
        lab_free(&lab);
    rc = load_variant("py_pool_num", " \"sanitize_case\"",
                      " \"python\":{\"owner\":\"lab.py\",\"pool\":1},\n \"sanitize_case\"", err,
                      sizeof err);
    check(err_has(rc, err, "python.pool: must be true or false"),
          "a pool flag that is not a boolean is refused at load");
    rc = load_variant("py_pool_alone", " \"sanitize_case\"",
                      " \"python\":{\"pool\":true},\n \"sanitize_case\"", err, sizeof err);
    check(err_has(rc, err, "python.pool: only with python.owner"),
          "a pool flag without an owner of its own is refused at load");
    rc = load_variant_lab("py_none", " \"sanitize_case\"", " \"sanitize_case\"", &lab, err,
                          sizeof err);
    check(rc == 0 && lab.python_owner == NULL && lab.npython_hide == 0,
          "no \"python\": no owner of its own, nothing hidden");
    if (rc == 0)
        lab_free(&lab);
    rc = load_variant("py_owner", " \"sanitize_case\"",
                      " \"python\":{\"owner\":\"../x.py\"},\n \"sanitize_case\"", err, sizeof err);
    check(err_has(rc, err, "python.owner: must be a .py file name"),
          "an owner that is not a plain .py name is refused at load");
    rc = load_variant("py_hide", " \"sanitize_case\"",
                      " \"python\":{\"hide\":[\"/a\",\"lib/x.so\"]},\n \"sanitize_case\"", err,
                      sizeof err);
    check(err_has(rc, err, "python.hide[1]: must be absolute"),
          "a relative hide pattern is refused at load");
}

static void test_allow_base(void)
{
    char err[512], dir[512];
    const char *reason = NULL;
    struct lab lab;
    int rc;
    write_file("base", "x", "");
    write_file(
        "base/common", "allow.json",
        "{\"about\": \"shared\",\n"
        " \"cuda\": {\"undefined\": [\"cuda*\", \"printf\"],\n"
        "          \"forbidden\": {\"dlopen\": \"no dlopen\", \"cudaIpc*\": \"no IPC\"}}}\n");
    rc = load_variant("base",
                      "\"allow\":{\"undefined\":[\"cudaMalloc\",\"cuda*\",\"__cuda*\",\"printf\"],",
                      "\"allow\":{\"base\":\"cuda\",\"undefined\":[\"__cuda*\"],", err, sizeof err);
    check(rc == 0, "allow.base names a list of common/allow.json");
    if (rc != 0)
        fprintf(stderr, "# %s\n", err);
    snprintf(dir, sizeof dir, "%s/base/matmul", root);
    if (rc == 0 && lab_load(dir, &lab, err, sizeof err) == 0) {
        check(lab_symbol_allowed(&lab, "cudaMalloc", &reason) == 1 &&
                  lab_symbol_allowed(&lab, "__cudaRegisterFatBinary", &reason) == 1 &&
                  lab_symbol_allowed(&lab, "puts", &reason) == 0 && reason == NULL,
              "...its undefined patterns and the lab's own are allowed, nothing else");
        check(lab_symbol_allowed(&lab, "dlopen", &reason) == 0 && reason &&
                  strcmp(reason, "no dlopen") == 0 &&
                  lab_symbol_allowed(&lab, "cudaIpcGetMemHandle", &reason) == 0 && reason &&
                  strcmp(reason, "no IPC") == 0 &&
                  lab_symbol_allowed(&lab, "cublasSgemm", &reason) == 0 && reason &&
                  strcmp(reason, "cuBLAS is not allowed") == 0,
              "...its forbidden patterns and the lab's own are refused with their reasons");
        lab_free(&lab);
    }
    rc = load_variant("base", "\"allow\":{", "\"allow\":{\"base\":\"hip\",", err, sizeof err);
    check(err_has(rc, err, "allow.base: \"hip\" is not a list of"), "an unknown base is refused");
    rc = load_variant("base", "\"allow\":{", "\"allow\":{\"base\":\"about\",", err, sizeof err);
    check(err_has(rc, err, "allow.base"), "the file's about is no list");
    rc = load_variant("nobase", "\"allow\":{", "\"allow\":{\"base\":\"cuda\",", err, sizeof err);
    check(err_has(rc, err, "common/allow.json"), "a base without common/allow.json is refused, "
                                                 "naming the file");

    const char *repo = getenv("CUGRADE_ROOT");
    if (!repo)
        return;
    snprintf(dir, sizeof dir, "%s/labs/matmul", repo);
    rc = lab_load(dir, &lab, err, sizeof err);
    check(rc == 0, "labs/matmul loads with its shared base");
    if (rc == 0) {
        check(lab.nallowed == 105 && lab.nforbidden == 57 &&
                  strcmp(lab.forbidden[53].pattern, "cuMemAlloc*") == 0 &&
                  strcmp(lab.forbidden[54].pattern, "cublas*") == 0 &&
                  lab_symbol_allowed(&lab, "cudaStreamCreate", &reason) == 0 && reason &&
                  strstr(reason, "default stream") != NULL &&
                  lab_symbol_allowed(&lab, "cudaMalloc", &reason) == 1,
              "labs/matmul: the shared 105 allowed and 54 forbidden patterns, then its own 3");
        lab_free(&lab);
    }
}

int main(void)
{
    char err[512], dir[512];
    struct lab lab, *labs = NULL;
    const char *reason;
    int rc, n;

    snprintf(root, sizeof(root), "/tmp/cugrade-lab-test.%d", (int)getpid());
    mkdir(root, 0755);
    write_file("matmul", "lab.json", good);
    write_file("matmul", "README.md", "# Matmul\nWrite a kernel.\n");
    snprintf(dir, sizeof(dir), "%s/matmul", root);

    rc = lab_load(dir, &lab, err, sizeof(err));
    check(rc == 0, "a good lab.json loads");
    if (rc != 0) {
        fprintf(stderr, "# %s\n", err);
        return 1;
    }
    check(strcmp(lab.name, "matmul") == 0 && strcmp(lab.symbol, "matmul") == 0 &&
              strcmp(lab.title, "Tiled matrix multiply") == 0,
          "name, symbol and title are read");
    check(lab.handout && strstr(lab.handout, "Write a kernel.") != NULL, "README.md is the handout");
    check(lab.nnvcc_flags == 2 && strcmp(lab.nvcc_flags[1], "-lineinfo") == 0, "nvcc_flags read");
    check(lab.nlink_libs == 0, "empty link_libs");
    check(lab.ncases == 3 && lab.cases[2].timing == 1 && lab.cases[0].timing == 0,
          "cases and their timing flag");
    check(json_integer_value(json_object_get(lab.cases[1].params, "N")) == 31,
          "case params are the JSON object");
    check(lab_case_find(&lab, "17x31x13") == &lab.cases[1] && lab_case_find(&lab, "17x31") == NULL,
          "lab_case_find exact names only");
    check(strcmp(lab.sanitize_case, "17x31x13") == 0 && strcmp(lab.timing_case, "4096^3") == 0,
          "sanitize_case and timing_case");
    check(lab.nbaselines == 3 && strcmp(lab.baselines[2], "cublas") == 0, "baselines");
    check(lab.compile_seconds == 60 && lab.run_seconds == 120 && lab.memory_mb == 16384, "limits");
    check(lab.derive_factor == 0, "no limits.derive: wall limits are not derived");

    check(lab_pattern_match("cuda*", "cudaMalloc"), "prefix pattern matches");
    check(!lab_pattern_match("cuda*", "xcudaMalloc"), "prefix pattern anchors at the start");
    check(lab_pattern_match("printf", "printf") && !lab_pattern_match("printf", "printf_chk") &&
              !lab_pattern_match("printf", "print"),
          "exact pattern is exact");
    check(lab_pattern_match("*", "anything"), "a lone * matches everything");

    check(lab_symbol_allowed(&lab, "cudaMalloc", &reason) == 1 && reason == NULL,
          "allowed symbol is allowed");
    check(lab_symbol_allowed(&lab, "cublasSgemm_v2", &reason) == 0 && reason &&
              strcmp(reason, "cuBLAS is not allowed") == 0,
          "forbidden symbol names its reason");
    check(lab_symbol_allowed(&lab, "cudaStreamCreateWithFlags", &reason) == 0 && reason &&
              strstr(reason, "default stream") != NULL,
          "forbidden wins over a broader allowed prefix");
    check(lab_symbol_allowed(&lab, "fork", &reason) == 0 && reason == NULL,
          "unlisted symbol is refused with no reason");
    check(lab_symbol_allowed(&lab, "dlopen", NULL) == 0, "reason pointer may be NULL");
    lab_free(&lab);
    check(lab.name == NULL && lab.ncases == 0, "lab_free zeroes the struct");

    /* Errors a course author makes, each named by field. */
    rc = load_variant("tdm1", "\"memory_mb\":16384}",
                      "\"memory_mb\":16384,\"device_mb\":900,\"timing_device_mb\":901}", err,
                      sizeof(err));
    check(err_has(rc, err, "timing_device_mb (901) is more than device_mb (900)"),
          "limits.timing_device_mb past device_mb is refused");
    rc = load_variant("tdm2", "\"memory_mb\":16384}",
                      "\"memory_mb\":16384,\"device_mb\":900,\"timing_device_mb\":300}", err,
                      sizeof(err));
    check(rc == 0, "limits.timing_device_mb within device_mb loads");
    {
        struct lab l2;
        char d2[512];
        snprintf(d2, sizeof(d2), "%s/tdm2/matmul", root);
        check(lab_load(d2, &l2, err, sizeof(err)) == 0 && l2.device_mb == 900 &&
                  l2.timing_device_mb == 300,
              "timing_device_mb is read");
        lab_free(&l2);
    }
    rc = load_variant("tdm3", "\"memory_mb\":16384}", "\"memory_mb\":16384,\"device_mb\":900}",
                      err, sizeof(err));
    {
        struct lab l3;
        char d3[512];
        snprintf(d3, sizeof(d3), "%s/tdm3/matmul", root);
        check(rc == 0 && lab_load(d3, &l3, err, sizeof(err)) == 0 && l3.timing_device_mb == 900 &&
                  l3.sanitize_device_mb == 900,
              "timing_device_mb and sanitize_device_mb default to device_mb");
        lab_free(&l3);
    }
    rc = load_variant("sdm1", "\"memory_mb\":16384}",
                      "\"memory_mb\":16384,\"device_mb\":900,\"sanitize_device_mb\":901}", err,
                      sizeof(err));
    check(err_has(rc, err, "sanitize_device_mb (901) is more than device_mb (900)"),
          "limits.sanitize_device_mb past device_mb is refused");
    rc = load_variant("sdm2", "\"memory_mb\":16384}",
                      "\"memory_mb\":16384,\"device_mb\":900,\"sanitize_device_mb\":64}", err,
                      sizeof(err));
    {
        struct lab l4;
        char d4[512];
        snprintf(d4, sizeof(d4), "%s/sdm2/matmul", root);
        check(rc == 0 && lab_load(d4, &l4, err, sizeof(err)) == 0 && l4.sanitize_device_mb == 64,
              "sanitize_device_mb is read");
        lab_free(&l4);
    }
    rc = load_variant("a1", "\"title\"", "\"title\"", err, sizeof(err));
    check(rc == 0, "an unchanged copy in another folder loads");
    rc = load_variant("a2", "\"lab\":\"matmul\"", "\"lab\":\"other\"", err, sizeof(err));
    check(rc == -EINVAL && err_has(rc, err, "does not match its folder name"),
          "lab name must match the folder");
    rc = load_variant("a3", "{\"name\":\"17x31x13\",", "{", err, sizeof(err));
    check(err_has(rc, err, "cases[1]: missing name"), "missing case name is named with its index");
    rc = load_variant("a4", "\"name\":\"17x31x13\"", "\"name\":\"1x1x1\"", err, sizeof(err));
    check(err_has(rc, err, "appears twice"), "duplicate case names refused");
    rc = load_variant("a5", "\"name\":\"17x31x13\"", "\"name\":\"a,b\"", err, sizeof(err));
    check(err_has(rc, err, "cases[1].name"), "a comma in a case name is refused");
    rc = load_variant("a6", "\"name\":\"17x31x13\"", "\"name\":\"x@recheck\"", err, sizeof(err));
    check(err_has(rc, err, "cases[1].name"), "an @ in a case name is refused");
    rc = load_variant("a7", "\"sanitize_case\":\"17x31x13\"", "\"sanitize_case\":\"nope\"", err,
                      sizeof(err));
    check(err_has(rc, err, "sanitize_case: \"nope\" is not one of the lab's cases"),
          "sanitize_case must be a case");
    rc = load_variant("a8", "\"timing_case\":\"4096^3\"", "\"timing_case\":\"1x1x1\"", err,
                      sizeof(err));
    check(err_has(rc, err, "not marked \"timing\""), "timing_case must be a timing case");
    rc = load_variant("a9", "\"symbol\":\"matmul\"", "\"symbol\":\"matmul2\"", err, sizeof(err));
    check(err_has(rc, err, "does not appear in interface"), "symbol must be in the interface");
    rc = load_variant("a10", "\"cublas*\"", "\"cu*blas\"", err, sizeof(err));
    check(err_has(rc, err, "allow.forbidden"), "a * inside a pattern is refused");
    rc = load_variant("a11", "\"title\":\"Tiled matrix multiply\",", "", err, sizeof(err));
    check(err_has(rc, err, "missing title"), "missing title is named");
    rc = load_variant("a12", "\"memory_mb\":16384", "\"memory_mb\":\"lots\"", err, sizeof(err));
    check(err_has(rc, err, "limits.memory_mb"), "bad limit is named");
    rc = load_variant("a13", "\"nvcc_flags\":[\"-O3\",", "\"nvcc_flags\":[3,", err, sizeof(err));
    check(err_has(rc, err, "nvcc_flags[0]"), "non-string flag is named");
    /* A second title, which alone would load: a second "lab" was refused
     * as a folder mismatch whether or not duplicates were. */
    rc = load_variant("a14", "\"limits\"", "\"title\":\"Another title\",\"limits\"", err,
                      sizeof(err));
    check(rc == -EINVAL && strstr(err, "lab.json:") != NULL && strstr(err, "duplicate") != NULL,
          "duplicate JSON keys are refused");
    rc = load_variant("a15", "\"timing\":true", "\"timing\":1", err, sizeof(err));
    check(err_has(rc, err, "cases[2].timing"), "timing must be a boolean");
    rc = load_variant("a16", "\"memory_mb\":16384", "\"memory_mb\":16384,\"derive\":3", err,
                      sizeof(err));
    check(err_has(rc, err, "limits.derive"), "limits.derive must be an object");
    rc = load_variant("a17", "\"memory_mb\":16384",
                      "\"memory_mb\":16384,\"derive\":{\"factor\":0.5}", err, sizeof(err));
    check(err_has(rc, err, "limits.factor"), "a derive factor under 1 would kill correct programs");
    rc = load_variant("a18", "\"memory_mb\":16384",
                      "\"memory_mb\":16384,\"derive\":{\"factor\":4,\"floor_seconds\":8}", err,
                      sizeof(err));
    check(rc == 0, "limits.derive with defaults for what it leaves out loads");

    snprintf(dir, sizeof(dir), "%s/nonexistent", root);
    rc = lab_load(dir, &lab, err, sizeof(err));
    check(rc == -ENOENT && strstr(err, "nonexistent/lab.json") != NULL, "missing lab.json is -ENOENT");

    /* lab_load_all: skips folders without lab.json, stops at a broken one. */
    {
        char saved[200], text[8192];
        const char *p;
        snprintf(saved, sizeof(saved), "%s", root);
        if (snprintf(root, sizeof(root), "%.150s/all", saved) < 0)
            return 2;
        mkdir(root, 0755);
        p = strstr(good, "\"lab\":\"matmul\"");
        snprintf(text, sizeof(text), "%.*s\"lab\":\"zeta\"%s", (int)(p - good), good,
                 p + strlen("\"lab\":\"matmul\""));
        write_file("zeta", "lab.json", text);
        snprintf(text, sizeof(text), "%.*s\"lab\":\"alpha\"%s", (int)(p - good), good,
                 p + strlen("\"lab\":\"matmul\""));
        write_file("alpha", "lab.json", text);
        write_file("common", "gen.cuh", "/* not a lab */");
        n = lab_load_all(root, &labs, err, sizeof(err));
        check(n == 2 && strcmp(labs[0].name, "alpha") == 0 && strcmp(labs[1].name, "zeta") == 0,
              "lab_load_all loads every lab, sorted, skipping folders without lab.json");
        if (n > 0)
            lab_free_all(labs, (size_t)n);
        write_file("broken", "lab.json", "{\"lab\":");
        n = lab_load_all(root, &labs, err, sizeof(err));
        check(n < 0 && labs == NULL && strstr(err, "broken/lab.json") != NULL,
              "lab_load_all names the broken lab");
        snprintf(root, sizeof(root), "%s", saved);
    }

    /* The repository's own labs must load (when run from tests/run.sh). */
    {
        const char *repo = getenv("CUGRADE_ROOT");
        char path[512];
        if (repo) {
            snprintf(path, sizeof(path), "%s/labs", repo);
            n = lab_load_all(path, &labs, err, sizeof(err));
            if (n < 0)
                fprintf(stderr, "# %s\n", err);
            check(n >= 3, "the repository's labs/ load (reduction, matmul, embedding)");
            for (int i = 0; i < n; i++) {
                char name[128];
                char harness[700];
                snprintf(name, sizeof(name), "lab %s has a handout, a timing case and a sanitize case",
                         labs[i].name);
                /* A Python-only lab (profiling: no harness.cu) has no kernel to sanitize. */
                snprintf(harness, sizeof(harness), "%s/labs/%s/harness.cu", repo, labs[i].name);
                int cuda = access(harness, F_OK) == 0;
                check(labs[i].handout != NULL && labs[i].timing_case != NULL &&
                          (labs[i].sanitize_case != NULL || !cuda),
                      name);
            }
            if (n > 0)
                lab_free_all(labs, (size_t)n);
        }
    }

    test_work();
    test_allow_base();
    test_language();
    test_python();
    {
        char cmd[600];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
        if (system(cmd) != 0)
            fprintf(stderr, "# could not remove %s\n", root);
    }
    return failures ? 1 : 0;
}
