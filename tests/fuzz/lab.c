/*
 * lab.c - libFuzzer target: common/lab.c, the lab.json an instructor
 * writes (the server and the runner load it with lab_load). The input is
 * written as fuzzlab/lab.json in a private temporary folder and loaded from
 * there. A loaded lab must keep the promises lab.h makes: its name is its
 * folder's, its symbol appears in its interface, the sanitize and timing
 * cases exist.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/lab.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[256], file[300];

static void remove_dir(void)
{
    unlink(file);
    rmdir(dir);
    char *slash = strrchr(dir, '/');
    *slash = '\0';
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof(dir), "%s/cugrade-fuzz-lab-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("fuzz/lab: mkdtemp");
        exit(2);
    }
    strcat(dir, "/fuzzlab");
    snprintf(file, sizeof(file), "%s/lab.json", dir);
    if (mkdir(dir, 0700) != 0) {
        perror("fuzz/lab: mkdir");
        exit(2);
    }
    atexit(remove_dir);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert(fd >= 0);
    assert(write(fd, data, size) == (ssize_t)size);
    close(fd);

    struct lab lab;
    char err[512];
    int rc = lab_load(dir, &lab, err, sizeof(err));
    if (rc != 0) {
        assert(rc == -EINVAL || rc == -ENOMEM || rc == -EFBIG);
        assert(err[0] != '\0');
        return 0;
    }
    assert(strcmp(lab.name, "fuzzlab") == 0);
    assert(lab.title && lab.interface && lab.symbol && lab.doc);
    assert(strstr(lab.interface, lab.symbol));
    for (size_t i = 0; i < lab.ncases; i++) {
        assert(lab.cases[i].name);
        assert(lab_case_find(&lab, lab.cases[i].name));
    }
    if (lab.sanitize_case)
        assert(lab_case_find(&lab, lab.sanitize_case));
    if (lab.timing_case) {
        const struct lab_case *c = lab_case_find(&lab, lab.timing_case);
        assert(c && c->timing);
    }
    assert(lab.compile_seconds >= 1 && lab.run_seconds >= 1 && lab.memory_mb >= 16);
    static const char *const probe[] = {"cudaMalloc", "cudaLaunchKernel", "dlopen", "fork",
                                        "cublasSgemm", "malloc", "", "_Z3foov"};
    for (size_t i = 0; i < sizeof(probe) / sizeof(probe[0]); i++) {
        const char *reason = NULL;
        int ok = lab_symbol_allowed(&lab, probe[i], &reason);
        assert(!ok || reason == NULL);
    }
    lab_free(&lab);
    return 0;
}
