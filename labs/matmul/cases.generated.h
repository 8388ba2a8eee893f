/* Generated from labs/matmul/lab.json by labs/common/gen-cases.py: do not edit. */
#define LAB_NAME "matmul"
#define LAB_TIMING_CASE "4096^3"
#define LAB_SANITIZE_CASE "100x1x300"
static const struct lab_case_def LAB_CASES[] = {
    {"1x1x1", 0, {1LL, 1LL, 1LL, 0LL}},
    {"17x31x13", 0, {17LL, 31LL, 13LL, 0LL}},
    {"100x1x300", 0, {100LL, 1LL, 300LL, 0LL}},
    {"333x555x777", 0, {333LL, 555LL, 777LL, 0LL}},
    {"512x1024x256", 0, {512LL, 1024LL, 256LL, 0LL}},
    {"1000^3", 1, {1000LL, 1000LL, 1000LL, 0LL}},
    {"1023x1025x129", 0, {1023LL, 1025LL, 129LL, 0LL}},
    {"2048^3", 1, {2048LL, 2048LL, 2048LL, 0LL}},
    {"4096^3", 1, {4096LL, 4096LL, 4096LL, 0LL}},
};
#define LAB_NCASES (sizeof(LAB_CASES) / sizeof(LAB_CASES[0]))
