/*
 * inspect.h - symbol inspection of a student's object file (docs/runner.md).
 *
 * The object is the output of `nvcc -c` on the student's file. It is read
 * and parsed here in C (an x86-64 ELF relocatable: .symtab, section headers,
 * relocations); no external tool touches it except c++filt, which only sees
 * symbol names, in a child process with CPU and memory rlimits.
 *
 * What is checked, in this order (the first failure is the rejection):
 *   1. the file is an x86-64 ELF relocatable object;
 *   2. every undefined symbol is on the lab's allow-list (lab_symbol_allowed;
 *      a forbidden pattern's reason wins), or is one of the few names that
 *      nvcc and g++ themselves emit for plain code (see inspect.c);
 *   3. every defined global symbol is the lab's interface, a kernel, one of
 *      the student's own helpers or a weak std:: template instantiation from
 *      the standard headers: never a name of the CUDA runtime or
 *      driver, libc, libstdc++ or the C++ ABI (interposing one of those would
 *      replace it for the trusted harness in the same process);
 *   4. static initialisation: the only .init_array entry allowed is nvcc's
 *      own fatbinary registration (__sti____cudaRegisterAll); no .preinit_array,
 *      .fini_array, .ctors, .dtors, .init or .fini contributions;
 *   5. no raw system-call instruction (syscall 0f 05, sysenter 0f 34,
 *      int 0x80 cd 80) anywhere in executable host sections;
 *   6. the lab's interface function is defined.
 */
#ifndef CUGRADE_INSPECT_H
#define CUGRADE_INSPECT_H

#include <stddef.h>
#include "lab.h"

struct inspect_report {
    int accepted;          /* 1: passed every check */
    char symbol[512];      /* on rejection: the symbol (demangled when C++), or "" */
    char reason[1024];     /* on rejection: a sentence for the student */
    size_t nundefined;     /* undefined symbols seen */
    size_t ndefined;       /* defined global symbols seen */
    size_t ninit;          /* .init_array entries seen */
};

/* Inspect the object file at path against lab's rules. Returns 0 and fills
 * *rep (rep->accepted says the verdict; a malformed object is a rejection,
 * not an error), or a negative errno when the file cannot be read at all. */
int inspect_object(const char *path, const struct lab *lab, struct inspect_report *rep);

/* Same, on an object already in memory (len bytes; not modified). */
int inspect_buffer(const unsigned char *buf, size_t len, const struct lab *lab,
                   struct inspect_report *rep);

/* Demangle n names with c++filt in a child process (CPU 5 s, 512 MiB).
 * Returns an array of n malloc'd strings (a name c++filt could not demangle,
 * or any name when c++filt is missing, comes back as a copy of itself), or
 * NULL on out-of-memory. Caller frees each string and the array. */
char **inspect_demangle(const char *const *names, size_t n);

/* Is name (a raw, possibly mangled symbol) one the student may not define?
 * Returns a static sentence saying why, or NULL when it is fine. demangled may
 * be NULL. */
const char *inspect_defined_denied(const char *name, const char *demangled);

#endif
