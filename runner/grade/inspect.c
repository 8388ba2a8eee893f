/*
 * inspect.c - see inspect.h.
 *
 * How nvcc's own static constructor is told apart from a student's.
 * For any .cu file, even one without kernels, nvcc (13.0, -c -O3) emits one
 * .init_array entry: an R_X86_64_64 relocation against the section symbol of
 * .text.startup plus the offset of the local function
 * `_ZL24__sti____cudaRegisterAllv` (it registers the fatbinary and calls
 * atexit for the unregistration; no .fini_array). A student's
 * `__attribute__((constructor))` function, a global object with a
 * constructor (g++'s `_GLOBAL__sub_I_<name>`), or a pointer placed in
 * ".init_array" by hand each add one more entry whose relocation resolves
 * to another function; `__attribute__((destructor))` adds a .fini_array.
 * So: every relocation that fills an init/fini-type section is resolved to
 * the function symbol at (section, offset); exactly one entry is allowed in
 * total, and it must resolve to `_ZL24__sti____cudaRegisterAllv`. A second
 * function of that name cannot be defined by the student: nvcc's own
 * definition would clash at compile time.
 *
 * The syscall check scans raw bytes of every executable section, aligned or
 * not: inline assembly can hide `0f 05` inside another instruction and jump
 * into its middle, which a disassembler's linear sweep would not show.
 */
#include "runner/grade/inspect.h"

#include <ctype.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define INSPECT_MAX_OBJECT (512u << 20) /* nvcc objects are KiB to a few MiB */
#define INSPECT_MAX_NAME 4096

/* The one static constructor nvcc emits per translation unit. */
static const char NVCC_CTOR[] = "_ZL24__sti____cudaRegisterAllv";

/* Undefined names that nvcc's generated code and g++ emit for plain code
 * (kernel launch stubs, fatbinary registration, function-local statics,
 * exception unwinding; nvcc's host-side body of a non-static __device__
 * function calls exit(1)). Allowed unless the lab forbids them by pattern. */
static const char *const COMPILER_UNDEFINED[] = {
    "__cudaRegisterFatBinary", "__cudaRegisterFatBinaryEnd", "__cudaUnregisterFatBinary",
    "__cudaRegisterFunction", "__cudaRegisterVar", "__cudaRegisterManagedVar",
    "__cudaRegisterTexture", "__cudaRegisterSurface", "__cudaInitModule",
    "__cudaPushCallConfiguration", "__cudaPopCallConfiguration", "__cudaLaunchKernel",
    "__cudaLaunchKernel_ptsz", "__cudaGetKernel", "atexit", "exit",
    "__cxa_guard_acquire", "__cxa_guard_release", "__cxa_guard_abort",
    "__gxx_personality_v0", "_Unwind_Resume", "__stack_chk_fail",
    "_GLOBAL_OFFSET_TABLE_", "__dso_handle", NULL,
};

/* Exact names a student may not define: process entry and ELF init/fini,
 * the allocator, descriptor and file I/O, process control, dynamic loading,
 * the timers the harness relies on. Anything exported by the system's
 * libc/libm/libstdc++/libgcc_s is denied as well (loaded at run time). */
static const char *const DENY_EXACT[] = {
    "main", "_start", "_init", "_fini", "__libc_start_main", "__libc_csu_init",
    "malloc", "free", "calloc", "realloc", "aligned_alloc", "posix_memalign", "memalign",
    "valloc", "pvalloc", "malloc_usable_size",
    "write", "read", "open", "open64", "openat", "openat64", "close", "dup", "dup2", "dup3",
    "pwrite", "pwrite64", "pread", "pread64", "writev", "readv", "lseek", "fcntl", "ioctl",
    "mmap", "mmap64", "munmap", "mprotect", "syscall", "fopen", "fopen64", "fdopen",
    "fwrite", "fread", "fclose", "fflush", "printf", "fprintf", "dprintf", "puts", "fputs",
    "putchar", "vprintf", "vfprintf", "sprintf", "snprintf",
    "fork", "vfork", "clone", "execve", "execv", "execvp", "system", "popen", "exit", "_exit",
    "_Exit", "abort", "atexit", "signal", "sigaction", "raise", "kill",
    "dlopen", "dlsym", "dlclose", "dlvsym", "dladdr",
    "clock_gettime", "gettimeofday", "time", "clock", "getenv", "setenv", "memcpy", "memset",
    "memmove", "strlen", "__stack_chk_fail", "__stack_chk_guard", "environ", "__environ",
    "stdin", "stdout", "stderr", NULL,
};

/* Prefixes a student may not define: the CUDA runtime and its libraries,
 * the driver API (cu + capital letter, tested separately), glibc internals,
 * the C++ ABI and unwinder, and the compiler's own init functions. */
static const char *const DENY_PREFIX[] = {
    "cuda", "__cuda", "__cudart", "cublas", "cublasLt", "cufft", "curand", "cusparse",
    "cusolver", "nvrtc", "nvtx", "nvJitLink", "__nv", "__libc_", "__GI_", "_IO_", "__cxa_",
    "__gxx_", "_Unwind_", "__gcc_", "_GLOBAL__", "_dl_", "__pthread", "pthread_", "__sti__",
    "_ZNSt", "_ZSt", "_ZNKSt", "_ZN9__gnu_cxx", "_ZN10__cxxabiv1", "_ZTVN10__cxxabiv1",
    "_Znw", "_Zna", "_Zdl", "_Zda", NULL,
};

struct elf_obj {
    const unsigned char *buf;
    size_t len;
    Elf64_Ehdr eh;
    Elf64_Shdr *sh;        /* copied section headers */
    size_t nsh;
    const char *shstr;     /* section names */
    size_t shstr_len;
    size_t symtab;         /* index of SHT_SYMTAB */
    const char *str;       /* its string table */
    size_t str_len;
    size_t nsym;
};

/* printf into the report's reason and set its symbol. */
static void reject(struct inspect_report *rep, const char *symbol, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void reject(struct inspect_report *rep, const char *symbol, const char *fmt, ...)
{
    va_list ap;
    rep->accepted = 0;
    snprintf(rep->symbol, sizeof rep->symbol, "%s", symbol ? symbol : "");
    va_start(ap, fmt);
    vsnprintf(rep->reason, sizeof rep->reason, fmt, ap);
    va_end(ap);
}

static int in_bounds(size_t len, uint64_t off, uint64_t size)
{
    return off <= len && size <= len - off;
}

/* Name at off in a string table, or NULL when it runs off the table. */
static const char *strtab_get(const char *tab, size_t len, uint64_t off)
{
    if (!tab || off >= len)
        return NULL;
    if (!memchr(tab + off, '\0', len - off))
        return NULL;
    return tab + off;
}

static const char *section_name(const struct elf_obj *o, size_t i)
{
    const char *n = strtab_get(o->shstr, o->shstr_len, o->sh[i].sh_name);
    return n ? n : "?";
}

static int sym_get(const struct elf_obj *o, size_t i, Elf64_Sym *s)
{
    const Elf64_Shdr *st = &o->sh[o->symtab];
    memcpy(s, o->buf + st->sh_offset + i * sizeof(Elf64_Sym), sizeof *s);
    return 0;
}

/* Parse headers; returns NULL or a sentence saying what is wrong. */
static const char *elf_open(struct elf_obj *o, const unsigned char *buf, size_t len)
{
    memset(o, 0, sizeof *o);
    o->buf = buf;
    o->len = len;
    if (len < sizeof(Elf64_Ehdr) || memcmp(buf, ELFMAG, SELFMAG) != 0)
        return "the compiler's output is not an ELF object file.";
    memcpy(&o->eh, buf, sizeof o->eh);
    if (o->eh.e_ident[EI_CLASS] != ELFCLASS64 || o->eh.e_ident[EI_DATA] != ELFDATA2LSB ||
        o->eh.e_type != ET_REL || o->eh.e_machine != EM_X86_64)
        return "the compiler's output is not an x86-64 relocatable object.";
    if (o->eh.e_shentsize != sizeof(Elf64_Shdr) || o->eh.e_shnum == 0 ||
        o->eh.e_shnum > 65000 ||
        !in_bounds(len, o->eh.e_shoff, (uint64_t)o->eh.e_shnum * sizeof(Elf64_Shdr)))
        return "the object's section headers are malformed.";
    o->nsh = o->eh.e_shnum;
    o->sh = malloc(o->nsh * sizeof *o->sh);
    if (!o->sh)
        return "out of memory";
    memcpy(o->sh, buf + o->eh.e_shoff, o->nsh * sizeof *o->sh);
    /* Only SHT_NOBITS has no bytes in the file. A SHT_NULL section may
     * still be flagged executable and is scanned like any other (found by
     * fuzzing: one pointing past the buffer was read). */
    for (size_t i = 0; i < o->nsh; i++)
        if (o->sh[i].sh_type != SHT_NOBITS &&
            !in_bounds(len, o->sh[i].sh_offset, o->sh[i].sh_size))
            return "a section of the object lies outside the file.";
    /* Its bounds were checked only if it is a string table. */
    if (o->eh.e_shstrndx >= o->nsh || o->sh[o->eh.e_shstrndx].sh_type != SHT_STRTAB)
        return "the object has no section name table.";
    o->shstr = (const char *)buf + o->sh[o->eh.e_shstrndx].sh_offset;
    o->shstr_len = o->sh[o->eh.e_shstrndx].sh_size;
    size_t nsymtab = 0;
    for (size_t i = 0; i < o->nsh; i++)
        if (o->sh[i].sh_type == SHT_SYMTAB) {
            o->symtab = i;
            nsymtab++;
        }
    if (nsymtab != 1)
        return "the object does not have exactly one symbol table.";
    const Elf64_Shdr *st = &o->sh[o->symtab];
    if (st->sh_entsize != sizeof(Elf64_Sym) || st->sh_size % sizeof(Elf64_Sym) ||
        st->sh_link >= o->nsh || o->sh[st->sh_link].sh_type != SHT_STRTAB)
        return "the object's symbol table is malformed.";
    o->nsym = st->sh_size / sizeof(Elf64_Sym);
    o->str = (const char *)buf + o->sh[st->sh_link].sh_offset;
    o->str_len = o->sh[st->sh_link].sh_size;
    return NULL;
}

/* ---------------------------------------------------------------------- */
/* Names exported by the system's shared libraries: a student who defines
 * one interposes it for the harness (ELF symbol interposition). */

struct nameset {
    char **v;
    size_t n, cap;
};

static struct nameset sys_names;
static pthread_once_t sys_once = PTHREAD_ONCE_INIT;

static int nameset_add(struct nameset *s, const char *name)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 4096;
        char **v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        s->v = v;
        s->cap = cap;
    }
    if (!(s->v[s->n] = strdup(name)))
        return -ENOMEM;
    s->n++;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int read_file(const char *path, size_t cap, unsigned char **out, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    int rc;
    struct stat st;
    unsigned char *b = NULL;
    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) < 0) {
        rc = -errno;
        goto fail;
    }
    rc = -EINVAL;
    if (!S_ISREG(st.st_mode))
        goto fail;
    rc = -EFBIG;
    if ((uint64_t)st.st_size > cap)
        goto fail;
    rc = -ENOMEM;
    if (!(b = malloc((size_t)st.st_size + 1)))
        goto fail;
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, b + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = r < 0 ? -errno : -EIO;
            goto fail;
        }
        got += (size_t)r;
    }
    close(fd);
    *out = b;
    *len = got;
    return 0;
fail:
    free(b);
    close(fd);
    return rc;
}

/* Add the defined global/weak names of a shared library's .dynsym. */
static void load_dynsyms(const char *path)
{
    unsigned char *b = NULL;
    size_t len = 0;
    if (read_file(path, 64u << 20, &b, &len) < 0)
        return;
    Elf64_Ehdr eh;
    if (len < sizeof eh || memcmp(b, ELFMAG, SELFMAG) != 0)
        goto out;
    memcpy(&eh, b, sizeof eh);
    if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr) ||
        !in_bounds(len, eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr)))
        goto out;
    for (size_t i = 0; i < eh.e_shnum; i++) {
        Elf64_Shdr sh, strh;
        memcpy(&sh, b + eh.e_shoff + i * sizeof sh, sizeof sh);
        if (sh.sh_type != SHT_DYNSYM || sh.sh_link >= eh.e_shnum ||
            !in_bounds(len, sh.sh_offset, sh.sh_size))
            continue;
        memcpy(&strh, b + eh.e_shoff + sh.sh_link * sizeof strh, sizeof strh);
        if (!in_bounds(len, strh.sh_offset, strh.sh_size))
            continue;
        for (size_t k = 1; k < sh.sh_size / sizeof(Elf64_Sym); k++) {
            Elf64_Sym s;
            memcpy(&s, b + sh.sh_offset + k * sizeof s, sizeof s);
            int bind = ELF64_ST_BIND(s.st_info);
            if (s.st_shndx == SHN_UNDEF || (bind != STB_GLOBAL && bind != STB_WEAK &&
                                            bind != STB_GNU_UNIQUE))
                continue;
            const char *n = strtab_get((const char *)b + strh.sh_offset, strh.sh_size, s.st_name);
            if (n && *n && nameset_add(&sys_names, n) < 0)
                goto out;
        }
    }
out:
    free(b);
}

static void sys_names_load(void)
{
    static const char *const dirs[] = {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
                                       "/lib64", "/usr/lib64", NULL};
    static const char *const libs[] = {"libc.so.6", "libm.so.6", "libstdc++.so.6",
                                       "libgcc_s.so.1", NULL};
    for (size_t l = 0; libs[l]; l++)
        for (size_t d = 0; dirs[d]; d++) {
            char p[512];
            snprintf(p, sizeof p, "%s/%s", dirs[d], libs[l]);
            if (access(p, R_OK) == 0) {
                size_t before = sys_names.n;
                load_dynsyms(p);
                if (sys_names.n > before)
                    break;
            }
        }
    if (sys_names.n)
        qsort(sys_names.v, sys_names.n, sizeof *sys_names.v, cmp_str);
}

static int sys_name_exported(const char *name)
{
    pthread_once(&sys_once, sys_names_load);
    return sys_names.n &&
           bsearch(&name, sys_names.v, sys_names.n, sizeof *sys_names.v, cmp_str) != NULL;
}

const char *inspect_defined_denied(const char *name, const char *demangled)
{
    static const char R_CUDA[] =
        "it is a name of the CUDA runtime, driver or a CUDA library; defining it would "
        "replace the real one inside the grading program. Rename it or make it static.";
    static const char R_SYS[] =
        "it is a name of the C library, the C++ runtime or the program's start-up code; "
        "defining it would replace the real one inside the grading program. Rename it "
        "or make it static.";
    for (size_t i = 0; DENY_EXACT[i]; i++)
        if (strcmp(name, DENY_EXACT[i]) == 0)
            return R_SYS;
    for (size_t i = 0; DENY_PREFIX[i]; i++)
        if (strncmp(name, DENY_PREFIX[i], strlen(DENY_PREFIX[i])) == 0)
            return (name[0] == 'c' || strncmp(name, "__cuda", 6) == 0 ||
                    strncmp(name, "__nv", 4) == 0 || name[0] == 'n')
                       ? R_CUDA
                       : R_SYS;
    /* The driver API: cuInit, cuMemAlloc, cuLaunchKernel... ("cube" is fine). */
    if (name[0] == 'c' && name[1] == 'u' && isupper((unsigned char)name[2]))
        return R_CUDA;
    if (demangled && (strncmp(demangled, "std::", 5) == 0 ||
                      strncmp(demangled, "operator new", 12) == 0 ||
                      strncmp(demangled, "operator delete", 15) == 0 ||
                      strncmp(demangled, "__cxxabiv1::", 12) == 0 ||
                      strncmp(demangled, "__gnu_cxx::", 11) == 0))
        return R_SYS;
    if (sys_name_exported(name))
        return R_SYS;
    return NULL;
}

/* ---------------------------------------------------------------------- */

char **inspect_demangle(const char *const *names, size_t n)
{
    char **out = calloc(n ? n : 1, sizeof *out);
    char in_path[] = "/tmp/cugrade-demangle-in-XXXXXX";
    char out_path[] = "/tmp/cugrade-demangle-out-XXXXXX";
    int in_fd = -1, out_fd = -1;
    FILE *f = NULL;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (!(out[i] = strdup(names[i])))
            goto oom;
    /* Only mangled, printable, single-line names go to c++filt. */
    size_t want = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(names[i], "_Z", 2) == 0)
            want++;
    if (!want)
        return out;
    in_fd = mkstemp(in_path);
    out_fd = mkstemp(out_path);
    if (in_fd < 0 || out_fd < 0)
        goto done;
    f = fdopen(in_fd, "w");
    if (!f)
        goto done;
    in_fd = -1;
    for (size_t i = 0; i < n; i++)
        if (strncmp(names[i], "_Z", 2) == 0)
            fprintf(f, "%s\n", names[i]);
    if (fclose(f) != 0) {
        f = NULL;
        goto done;
    }
    f = NULL;
    pid_t pid = fork();
    if (pid < 0)
        goto done;
    if (pid == 0) {
        /* The demangler has had crash bugs on crafted names: it runs in a
         * child with its own CPU and memory caps, on names only. */
        struct rlimit cpu = {5, 5}, as = {512u << 20, 512u << 20}, core = {0, 0};
        setrlimit(RLIMIT_CPU, &cpu);
        setrlimit(RLIMIT_AS, &as);
        setrlimit(RLIMIT_CORE, &core);
        int i0 = open(in_path, O_RDONLY);
        if (i0 < 0 || dup2(i0, 0) < 0 || dup2(out_fd, 1) < 0)
            _exit(127);
        int dn = open("/dev/null", O_WRONLY);
        if (dn >= 0)
            dup2(dn, 2);
        char *const argv[] = {(char *)"c++filt", NULL};
        char *const envp[] = {(char *)"PATH=/usr/bin:/bin", (char *)"LC_ALL=C", NULL};
        execve("/usr/bin/c++filt", argv, envp);
        execve("/bin/c++filt", argv, envp);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        goto done;
    f = fopen(out_path, "r");
    if (!f)
        goto done;
    char *line = NULL;
    size_t cap = 0;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(names[i], "_Z", 2) != 0)
            continue;
        ssize_t r = getline(&line, &cap, f);
        if (r <= 0)
            break;
        if (line[r - 1] == '\n')
            line[r - 1] = '\0';
        char *d = strdup(line);
        if (d) {
            free(out[i]);
            out[i] = d;
        }
    }
    free(line);
done:
    if (f)
        fclose(f);
    if (in_fd >= 0)
        close(in_fd);
    if (out_fd >= 0)
        close(out_fd);
    unlink(in_path);
    unlink(out_path);
    return out;
oom:
    for (size_t i = 0; i < n; i++)
        free(out[i]);
    free(out);
    return NULL;
}

/* ---------------------------------------------------------------------- */

static int is_initfini_section(const struct elf_obj *o, size_t i)
{
    const char *n = section_name(o, i);
    uint32_t t = o->sh[i].sh_type;
    if (t == SHT_INIT_ARRAY || t == SHT_FINI_ARRAY || t == SHT_PREINIT_ARRAY)
        return 1;
    static const char *const names[] = {".init_array", ".fini_array", ".preinit_array",
                                        ".ctors", ".dtors", ".init", ".fini", NULL};
    for (size_t k = 0; names[k]; k++) {
        size_t l = strlen(names[k]);
        if (strncmp(n, names[k], l) == 0 && (n[l] == '\0' || n[l] == '.'))
            return 1;
    }
    return 0;
}

/* The name of the function symbol defined at (shndx, value), or NULL. */
static const char *function_at(const struct elf_obj *o, size_t shndx, uint64_t value)
{
    for (size_t i = 1; i < o->nsym; i++) {
        Elf64_Sym s;
        sym_get(o, i, &s);
        if (s.st_shndx == shndx && s.st_value == value &&
            ELF64_ST_TYPE(s.st_info) == STT_FUNC)
            return strtab_get(o->str, o->str_len, s.st_name);
    }
    return NULL;
}

/* The function whose body covers (shndx, off), or NULL. */
static const char *function_covering(const struct elf_obj *o, size_t shndx, uint64_t off)
{
    for (size_t i = 1; i < o->nsym; i++) {
        Elf64_Sym s;
        sym_get(o, i, &s);
        if (s.st_shndx == shndx && ELF64_ST_TYPE(s.st_info) == STT_FUNC &&
            off >= s.st_value && off < s.st_value + (s.st_size ? s.st_size : 1))
            return strtab_get(o->str, o->str_len, s.st_name);
    }
    return NULL;
}

/* Check step 4; returns 1 when fine, 0 after reject(). */
static int check_initfini(const struct elf_obj *o, const struct lab *lab,
                          struct inspect_report *rep)
{
    size_t entries = 0, slots = 0;
    for (size_t i = 0; i < o->nsh; i++) {
        if (!is_initfini_section(o, i))
            continue;
        const char *sn = section_name(o, i);
        if (o->sh[i].sh_type != SHT_INIT_ARRAY || strcmp(sn, ".init_array") != 0) {
            if (o->sh[i].sh_size == 0)
                continue;
            reject(rep, sn,
                   "your file adds code that runs before or after the program (section %s: "
                   "a destructor, an init/fini function or a prioritised constructor). "
                   "Nothing may run outside the lab's interface.",
                   sn);
            return 0;
        }
        slots += o->sh[i].sh_size / 8;
    }
    for (size_t i = 0; i < o->nsh; i++) {
        const Elf64_Shdr *r = &o->sh[i];
        if (r->sh_type != SHT_RELA && r->sh_type != SHT_REL)
            continue;
        if (r->sh_info >= o->nsh || !is_initfini_section(o, r->sh_info))
            continue;
        if (r->sh_type == SHT_REL || r->sh_entsize != sizeof(Elf64_Rela)) {
            reject(rep, "", "the object's constructor table has an unexpected layout.");
            return 0;
        }
        for (size_t k = 0; k < r->sh_size / sizeof(Elf64_Rela); k++) {
            Elf64_Rela ra;
            Elf64_Sym s;
            memcpy(&ra, o->buf + r->sh_offset + k * sizeof ra, sizeof ra);
            size_t si = ELF64_R_SYM(ra.r_info);
            entries++;
            const char *fn = NULL;
            if (si > 0 && si < o->nsym) {
                sym_get(o, si, &s);
                if (ELF64_ST_TYPE(s.st_info) == STT_SECTION)
                    fn = function_at(o, s.st_shndx, (uint64_t)ra.r_addend);
                else if (s.st_shndx != SHN_UNDEF && ra.r_addend == 0)
                    fn = strtab_get(o->str, o->str_len, s.st_name);
                else
                    fn = strtab_get(o->str, o->str_len, s.st_name);
            }
            if (!fn || strcmp(fn, NVCC_CTOR) != 0) {
                char **d = NULL;
                const char *nm = fn ? fn : "?";
                d = inspect_demangle(&nm, 1);
                reject(rep, d ? d[0] : nm,
                       "your file has a static constructor (%s): code that would run before "
                       "main(), before the harness starts. Use no __attribute__((constructor)) "
                       "and no global objects with constructors; do the work inside %s().",
                       d ? d[0] : nm, lab->symbol ? lab->symbol : "the lab's function");
                if (d) {
                    free(d[0]);
                    free(d);
                }
                return 0;
            }
        }
    }
    rep->ninit = entries;
    if (entries > 1 || slots != entries) {
        reject(rep, "", "your file has more static constructors than the CUDA compiler emits.");
        return 0;
    }
    return 1;
}

/* Check step 5; returns 1 when fine, 0 after reject(). */
static int check_syscalls(const struct elf_obj *o, struct inspect_report *rep)
{
    for (size_t i = 0; i < o->nsh; i++) {
        const Elf64_Shdr *s = &o->sh[i];
        if (!(s->sh_flags & SHF_EXECINSTR) || s->sh_type == SHT_NOBITS || s->sh_size < 2)
            continue;
        const unsigned char *p = o->buf + s->sh_offset;
        for (size_t k = 0; k + 1 < s->sh_size; k++) {
            const char *what = NULL;
            if (p[k] == 0x0f && p[k + 1] == 0x05)
                what = "a raw syscall instruction (0f 05)";
            else if (p[k] == 0x0f && p[k + 1] == 0x34)
                what = "a raw sysenter instruction (0f 34)";
            else if (p[k] == 0xcd && p[k + 1] == 0x80)
                what = "a raw int 0x80 instruction (cd 80)";
            if (!what)
                continue;
            const char *fn = function_covering(o, i, k);
            char **d = NULL;
            if (fn)
                d = inspect_demangle(&fn, 1);
            reject(rep, d ? d[0] : (fn ? fn : ""),
                   "your host code contains %s in %s at %s+0x%zx. System calls from student "
                   "code are not allowed (they could forge the harness's results); "
                   "remove the inline assembly.",
                   what, d ? d[0] : (fn ? fn : "?"), section_name(o, i), k);
            if (d) {
                free(d[0]);
                free(d);
            }
            return 0;
        }
    }
    return 1;
}

static int compiler_undefined(const char *name)
{
    for (size_t i = 0; COMPILER_UNDEFINED[i]; i++)
        if (strcmp(name, COMPILER_UNDEFINED[i]) == 0)
            return 1;
    return 0;
}

/* demangled "foo(int)" -> "foo"; "ns::f<int>(x)" -> "ns::f<int>". Caller frees. */
static char *demangled_base(const char *d)
{
    const char *p = strchr(d, '(');
    size_t n = p ? (size_t)(p - d) : strlen(d);
    char *b = malloc(n + 1);
    if (b) {
        memcpy(b, d, n);
        b[n] = '\0';
    }
    return b;
}

static int printable(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x21 || (unsigned char)*s > 0x7e)
            return 0;
    return 1;
}

/* Step 1: the object's named global and undefined symbols into names and
 * kinds (0 undefined, 1 defined global, 2 defined weak; room for o->nsym),
 * their count in *nn, and whether the lab's interface is defined as a
 * function in *have_iface. Returns 1, or 0 with rep rejected (a malformed
 * table, a name no tool prints faithfully). */
static int collect_symbols(const struct elf_obj *o, const struct lab *lab,
                           struct inspect_report *rep, const char **names, int *kinds, size_t *nn,
                           int *have_iface)
{
    for (size_t i = 1; i < o->nsym; i++) {
        Elf64_Sym s;
        sym_get(o, i, &s);
        int bind = ELF64_ST_BIND(s.st_info), type = ELF64_ST_TYPE(s.st_info);
        if (type == STT_SECTION || type == STT_FILE)
            continue;
        const char *n = strtab_get(o->str, o->str_len, s.st_name);
        if (!n) {
            reject(rep, "", "the object's symbol table is malformed.");
            return 0;
        }
        if (!*n)
            continue;
        int undef = s.st_shndx == SHN_UNDEF;
        if (!undef && bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE)
            continue;
        /* A name that no tool prints faithfully could hide from the reader of
         * a rejection (and from c++filt): refuse it outright. */
        if (strlen(n) > INSPECT_MAX_NAME || !printable(n)) {
            reject(rep, "", "your file defines or uses a symbol with an unprintable or "
                            "overlong name.");
            return 0;
        }
        if (!undef && lab->symbol && strcmp(n, lab->symbol) == 0 && type == STT_FUNC)
            *have_iface = 1;
        names[*nn] = n;
        kinds[*nn] = undef ? 0 : bind == STB_GLOBAL ? 1 : 2;
        (*nn)++;
    }
    return 1;
}

/* Is the undefined symbol name (demangled dem) allowed? 1 yes; 0 with rep
 * rejected (forbidden: the pattern's reason; else: not on the list). */
static int check_one_undefined(const char *name, const char *dem, const struct lab *lab,
                               struct inspect_report *rep)
{
    const char *reason = NULL, *r2 = NULL, *r3 = NULL;
    int ok = lab_symbol_allowed(lab, name, &reason);
    int ok2 = 0, ok3 = 0;
    char *base = NULL;
    if (strcmp(dem, name) != 0) {
        ok2 = lab_symbol_allowed(lab, dem, &r2);
        base = demangled_base(dem);
        if (base)
            ok3 = lab_symbol_allowed(lab, base, &r3);
    }
    const char *forbid = reason ? reason : r2 ? r2 : r3;
    if (forbid) {
        reject(rep, dem, "%s uses %s: %s", "your file", base ? base : dem, forbid);
        free(base);
        return 0;
    }
    free(base);
    if (ok || ok2 || ok3 || compiler_undefined(name))
        return 1;
    reject(rep, dem,
           "your file uses %s, which this lab does not allow (it is not on the lab's "
           "list of functions student code may call).",
           dem);
    return 0;
}

/* Step 2: undefined symbols against the lab's allow-list, in name order
 * so that the rejection named is the same whatever the compiler's order
 * (cublasCreate before cublasSgemm, dlopen before dlsym). Returns 1, 0
 * with rep rejected, or -ENOMEM. */
static int check_undefined(const char **names, const int *kinds, char **dem, size_t nn,
                           const struct lab *lab, struct inspect_report *rep)
{
    size_t *order = malloc((nn ? nn : 1) * sizeof *order);
    int rc = 1;
    if (!order)
        return -ENOMEM;
    for (size_t i = 0; i < nn; i++)
        order[i] = i;
    for (size_t i = 1; i < nn; i++) /* insertion sort: a few hundred names at most */
        for (size_t k = i; k > 0 && strcmp(names[order[k - 1]], names[order[k]]) > 0; k--) {
            size_t t = order[k];
            order[k] = order[k - 1];
            order[k - 1] = t;
        }
    for (size_t oi = 0; oi < nn && rc == 1; oi++) {
        size_t i = order[oi];
        if (kinds[i] != 0)
            continue;
        rep->nundefined++;
        rc = check_one_undefined(names[i], dem[i], lab, rep);
    }
    free(order);
    return rc;
}

/* Step 3: defined global symbols: the lab's interface, the standard
 * library's weak template instances, nothing that would replace a name of
 * the runtime or the C library. Returns 1, or 0 with rep rejected. */
static int check_defined(const char **names, const int *kinds, char **dem, size_t nn,
                         const struct lab *lab, struct inspect_report *rep)
{
    for (size_t i = 0; i < nn; i++) {
        if (kinds[i] == 0)
            continue;
        rep->ndefined++;
        if (lab->symbol && strcmp(names[i], lab->symbol) == 0)
            continue;
        /* Weak definitions in std:: are the standard library's own templates
         * instantiated from its headers (std::vector<int>::_M_realloc_insert):
         * the same code libstdc++ would run. A strong definition in std:: is
         * the student's and is refused below. */
        if (kinds[i] == 2 && (strncmp(dem[i], "std::", 5) == 0 ||
                              strncmp(dem[i], "__gnu_cxx::", 11) == 0 ||
                              strstr(dem[i], " std::") == dem[i] + strcspn(dem[i], " ")))
            continue;
        const char *why = inspect_defined_denied(names[i], dem[i]);
        if (why) {
            reject(rep, dem[i], "your file defines %s: %s", dem[i], why);
            return 0;
        }
    }
    return 1;
}

int inspect_buffer(const unsigned char *buf, size_t len, const struct lab *lab,
                   struct inspect_report *rep)
{
    struct elf_obj o;
    const char **names = NULL;
    int *kinds = NULL; /* 0 undefined, 1 defined global, 2 defined weak */
    char **dem = NULL;
    size_t nn = 0;
    int rc = 0, have_iface = 0, r;

    memset(rep, 0, sizeof *rep);
    const char *bad = elf_open(&o, buf, len);
    if (bad) {
        if (strcmp(bad, "out of memory") == 0) {
            rc = -ENOMEM;
            goto out;
        }
        reject(rep, "", "%s", bad);
        goto out;
    }
    names = calloc(o.nsym ? o.nsym : 1, sizeof *names);
    kinds = calloc(o.nsym ? o.nsym : 1, sizeof *kinds);
    if (!names || !kinds) {
        rc = -ENOMEM;
        goto out;
    }
    if (!collect_symbols(&o, lab, rep, names, kinds, &nn, &have_iface))
        goto out;
    dem = inspect_demangle(names, nn);
    if (!dem) {
        rc = -ENOMEM;
        goto out;
    }
    if ((r = check_undefined(names, kinds, dem, nn, lab, rep)) <= 0) {
        rc = r < 0 ? r : 0;
        goto out;
    }
    if (!check_defined(names, kinds, dem, nn, lab, rep))
        goto out;
    if (!check_initfini(&o, lab, rep))
        goto out;
    if (!check_syscalls(&o, rep))
        goto out;
    if (lab->symbol && !have_iface) {
        reject(rep, lab->symbol,
               "your file does not define %s, the lab's interface: %s", lab->symbol,
               lab->interface ? lab->interface : "(see the handout)");
        goto out;
    }
    rep->accepted = 1;
out:
    if (dem)
        for (size_t i = 0; i < nn; i++)
            free(dem[i]);
    free(dem);
    free(names);
    free(kinds);
    free(o.sh);
    return rc;
}

int inspect_object(const char *path, const struct lab *lab, struct inspect_report *rep)
{
    unsigned char *b = NULL;
    size_t len = 0;
    memset(rep, 0, sizeof *rep);
    int rc = read_file(path, INSPECT_MAX_OBJECT, &b, &len);
    if (rc == -EFBIG) {
        reject(rep, "", "the compiled object is larger than %u MiB.", INSPECT_MAX_OBJECT >> 20);
        return 0;
    }
    if (rc < 0)
        return rc;
    rc = inspect_buffer(b, len, lab, rep);
    free(b);
    return rc;
}
