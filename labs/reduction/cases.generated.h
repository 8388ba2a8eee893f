/* Generated from labs/reduction/lab.json by labs/common/gen-cases.py: do not edit. */
#define LAB_NAME "reduction"
#define LAB_TIMING_CASE "2^28"
#define LAB_SANITIZE_CASE "1000"
static const struct lab_case_def LAB_CASES[] = {
    {"1", 0, {1LL, 1LL, 0LL, 0LL}},
    {"1000", 0, {1000LL, 1LL, 0LL, 0LL}},
    {"2^20+7", 0, {1048583LL, 1LL, 0LL, 0LL}},
    {"2^26", 1, {67108864LL, 2LL, 0LL, 0LL}},
    {"2^28", 1, {268435456LL, 2LL, 0LL, 0LL}},
    {"2.5e9", 0, {2500000000LL, 1LL, 0LL, 0LL}},
};
#define LAB_NCASES (sizeof(LAB_CASES) / sizeof(LAB_CASES[0]))
