/* Generated from labs/embedding/lab.json by labs/common/gen-cases.py: do not edit. */
#define LAB_NAME "embedding"
#define LAB_TIMING_CASE "16384x4096"
#define LAB_SANITIZE_CASE "1000x33"
static const struct lab_case_def LAB_CASES[] = {
    {"1x1", 0, {1LL, 1LL, 1LL, 0LL}},
    {"1000x33", 0, {1000LL, 33LL, 5000LL, 0LL}},
    {"1000000x1", 0, {1000000LL, 1LL, 1000000LL, 0LL}},
    {"100003x33", 0, {100003LL, 33LL, 30000LL, 0LL}},
    {"65536x768", 1, {65536LL, 768LL, 50257LL, 0LL}},
    {"16384x4096", 1, {16384LL, 4096LL, 32000LL, 0LL}},
    {"8192x4096-bigvocab", 0, {8192LL, 4096LL, 1200000LL, 0LL}},
};
#define LAB_NCASES (sizeof(LAB_CASES) / sizeof(LAB_CASES[0]))
