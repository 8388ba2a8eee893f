/*
 * inspect.c - libFuzzer target: runner/grade/inspect.c, the ELF reader that
 * judges a student's object file before it is linked with the trusted
 * harness. The input is the object file; it is judged against labs/matmul
 * (run from the repository root). A malformed object is a rejection with a
 * sentence for the student, never a crash or a read outside the buffer.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/lab.h"
#include "runner/grade/inspect.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct lab matmul;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char err[512];
    if (lab_load("labs/matmul", &matmul, err, sizeof(err)) != 0) {
        fprintf(stderr, "fuzz/inspect: run from the repository root: %s\n", err);
        exit(2);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A copy of exactly size bytes: a read past the object is caught. */
    unsigned char *obj = malloc(size ? size : 1);
    assert(obj);
    memcpy(obj, data, size);
    struct inspect_report rep;
    int rc = inspect_buffer(obj, size, &matmul, &rep);
    assert(rc == 0 || rc == -ENOMEM);
    assert(memchr(rep.reason, '\0', sizeof(rep.reason)));
    assert(memchr(rep.symbol, '\0', sizeof(rep.symbol)));
    if (rc == 0) {
        if (rep.accepted)
            assert(rep.reason[0] == '\0');
        else
            assert(rep.reason[0] != '\0');
    }
    free(obj);
    return 0;
}
