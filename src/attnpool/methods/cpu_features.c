/* Which of the loops' instruction sets this processor and its operating system run.

   Compiled into the baseline library only (it must run everywhere). Returns a bit
   mask: 1, x86-64-v3 (AVX2, FMA, BMI1/2, F16C, LZCNT, MOVBE) with the OS saving the
   256-bit registers; 2, x86-64-v4 (AVX-512 F, CD, BW, DQ, VL) with the OS saving the
   512-bit ones as well. Other processors report 0: their baseline is all there is. */
#include "portable.h"

#if defined(__x86_64__) || defined(_M_X64)
#if defined(_MSC_VER)
#include <intrin.h>
static void cpuid(int leaf, int sub, unsigned r[4]) {
    int out[4];
    __cpuidex(out, leaf, sub);
    for (int i = 0; i < 4; i++) r[i] = (unsigned)out[i];
}
static unsigned long long xgetbv0(void) { return _xgetbv(0); }
#else
#include <cpuid.h>
static void cpuid(int leaf, int sub, unsigned r[4]) {
    __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
}
static unsigned long long xgetbv0(void) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}
#endif

static int all(unsigned word, unsigned bits) { return (word & bits) == bits; }

EXPORT int attnpool_instruction_sets(void) {
    unsigned r[4], leaf7[4], ext[4];
    cpuid(0, 0, r);
    if (r[0] < 7) return 0;
    cpuid(1, 0, r);
    /* FMA (12), MOVBE (22), OSXSAVE (27), AVX (28), F16C (29) */
    if (!all(r[2], 1u << 12 | 1u << 22 | 1u << 27 | 1u << 28 | 1u << 29)) return 0;
    unsigned long long xcr0 = xgetbv0();
    if ((xcr0 & 0x6) != 0x6) return 0; /* XMM and YMM state */
    cpuid(7, 0, leaf7);
    cpuid(0x80000001, 0, ext);
    /* BMI1 (3), AVX2 (5), BMI2 (8); LZCNT (5 of the extended ECX) */
    if (!all(leaf7[1], 1u << 3 | 1u << 5 | 1u << 8) || !all(ext[2], 1u << 5)) return 0;
    int sets = 1;
    /* AVX-512 F (16), DQ (17), CD (28), BW (30), VL (31); opmask and ZMM state */
    if (all(leaf7[1], 1u << 16 | 1u << 17 | 1u << 28 | 1u << 30 | 1u << 31) &&
        (xcr0 & 0xe6) == 0xe6)
        sets |= 2;
    return sets;
}
#else
EXPORT int attnpool_instruction_sets(void) { return 0; }
#endif
