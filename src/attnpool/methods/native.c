/* Gaussian pooling state in one pass: distances, exponentials and sums fused.

   Compiled when the package is built (meson.build), once per variant (precision,
   DIMS, VALUES, MATMUL; WITH_MOMENTS adds the local moments) and instruction set, each
   variant's functions named by STATE_NAME and MOMENTS_NAME; called from Python
   threads on disjoint query rows.
   GCC/Clang vector extensions: LANES reals per vector, lowered to the machine's SIMD.

   Everything is in base 2: the caller folds log2(e) into the coordinates, so a log
   weight x needs 2^x, whose range reduction (x = n + f, |f| <= 1/2) is exact.

   Per query, over key chunks of CHUNK keys:
     x_j   = log2 weight of key j, minus the row's shift
               MATMUL: q.k_j + b_j (b_j = -|k_j|^2/2, scaled; the query's constant dropped)
               else:   SCALE * |q - k_j|^2
     sum  += 2^x_j,   weighted[c] += 2^x_j * v_j[c]
   The shift is set from the first chunk: its largest log weight plus HEADROOM. A
   chunk with a log weight above shift + RESHIFT is summed again after the shift (and
   the sums so far) move to its maximum plus HEADROOM, so no weight exceeds 2^RESHIFT,
   the heaviest is at least 2^-HEADROOM, and none that matters underflows (the
   headroom spares most of the re-shifts a first chunk far from a row's nearest keys
   would cost): the row's sums are exact to the precision's rounding. A weight
   below 2^EXP_FLOOR of the shift counts as 2^EXP_FLOOR (m of them are far below the
   rounding of a sum of at least 1; a row with no finite log weight is empty). A row
   whose coordinates overflowed, or whose log weights rounding keeps above the shift
   after the re-shift or takes its heaviest key's weight below 1/2 (coordinates so
   large that the differences of their products lose every digit), comes out not
   finite (or empty); the caller pools such rows by another path.

   The sum pass forms the next key vector's log weights before the exponentials of the
   current one: both dependency chains are long, and interleaved they keep the FMA
   units busy (~1.4x on AVX-512 at d = 8).

   Far keys are skipped: given bounding boxes of BOX keys each (native.py orders the keys
   so that a box's are near one another), a block of queries first sums the chunk that
   holds its nearest box, then passes over every box whose largest possible weight (from
   the distance between the box and the queries' own box) keeps the total of what it
   has left out at most BUDGET of the row's sum. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "portable.h"
#if defined(__x86_64__) || defined(_M_X64)
/* Products below the smallest normal number flushed to 0 (MXCSR's FTZ bit) while a call
   runs, the caller's mode restored after: far pairs' weights sit at 2^EXP_FLOOR, and
   their products with values were subnormal, each a microcode assist on x86 (float32 in
   d = 8: 1.07 -> 0.17 s at n = m = 3e4, the same sums; such a term is below 2^-118 of
   a row's sum). */
#include <xmmintrin.h>
#define FLUSH_TO_ZERO_BEGIN const unsigned int saved_csr = _mm_getcsr(); _mm_setcsr(saved_csr | 0x8000u);
#define FLUSH_TO_ZERO_END _mm_setcsr(saved_csr);
#else /* (ARM cores handle subnormal numbers at full speed) */
#define FLUSH_TO_ZERO_BEGIN
#define FLUSH_TO_ZERO_END
#endif
#ifndef STATE_NAME /* one variant compiled on its own (the compilers' warning check) */
#define STATE_NAME gaussian_state
#define MOMENTS_NAME gaussian_moments
#define POLYNOMIAL_NAME gaussian_polynomial
#endif
#ifndef WITH_MOMENTS
#define WITH_MOMENTS DOUBLE
#endif
#include "vector_width.h"
#if VECTOR_BYTES == 64
#include <immintrin.h>
#define SCALEF 1 /* AVX-512's vrndscale and vscalef for 2^x */
#else
#define SCALEF 0
#endif

#if DOUBLE
typedef double real;
typedef long long integer;
#define MANTISSA 52
#define BIAS 1023
#define EXP_FLOOR (-1020.0)
#define EPSILON 2.220446049250313e-16
#define BUDGET 7.105427357601002e-15 /* 2^-47: below 1e-14 */
#else
typedef float real;
typedef int integer;
#define MANTISSA 23
#define BIAS 127
#define EXP_FLOOR (-125.0f)
#define EPSILON 1.1920928955078125e-07
#define BUDGET 9.313225746154785e-10 /* 2^-30: far below float32's rounding */
#endif
#define LANES (VECTOR_BYTES / (int)sizeof(real))

#define ROWS 6    /* queries per sweep: measured best (4, 5, 8 spill or idle) */
#define CHUNK 256 /* keys per chunk; native.py pads the keys to a multiple of it */
#define BOX 64    /* keys per bounding box */
#define BOXES (CHUNK / BOX)
#define FREE 0.5 /* the share of BUDGET for far boxes, passed over without accounting */
#define RESHIFT 12.0
#define EXP_CAP (RESHIFT + 1)
/* value columns weighed at once after a chunk's exponentials: as many as keep their
   sums in registers, in groups of equal size */
#define VALUE_GROUP ((VALUES + (VALUES + 4) / 5 - 1) / ((VALUES + 4) / 5))
#define HEADROOM 8.0 /* log2 of what a new shift leaves above a chunk's heaviest weight */
#define LOST_LOG2 64.0 /* log2 weights' rounding beyond which a row's ratios are noise */
#define SCALE (-0.72134752044448170368) /* -log2(e) / 2 */
#define LOG2E 1.44269504088896340736

typedef real vreal __attribute__((vector_size(LANES * sizeof(real))));
typedef integer vint __attribute__((vector_size(LANES * sizeof(real))));
/* the same vector at any address of a real */
typedef real uvreal __attribute__((vector_size(LANES * sizeof(real)), aligned(sizeof(real))));

static inline vreal splat(real x) {
    vreal v;
    for (int l = 0; l < LANES; l++) v[l] = x;
    return v;
}

static inline vint splat_int(integer x) {
    vint v;
    for (int l = 0; l < LANES; l++) v[l] = x;
    return v;
}

/* 0, 1, ..., LANES - 1 */
static inline vint lane_numbers(void) {
    vint v;
    for (int l = 0; l < LANES; l++) v[l] = l;
    return v;
}

static inline vreal load(const real *p) { return *(const uvreal *)p; }

static inline vreal blend(vint mask, vreal a, vreal b) {
    return (vreal)(((vint)a & mask) | ((vint)b & ~mask));
}

#if SCALEF
/* a constant expression, as Clang requires of the instruction's immediate */
#define ROUND_NEAREST (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
static inline vreal round_nearest(vreal x) {
#if DOUBLE
    return (vreal)_mm512_roundscale_pd((__m512d)x, ROUND_NEAREST);
#else
    return (vreal)_mm512_roundscale_ps((__m512)x, ROUND_NEAREST);
#endif
}

/* p 2^n by lane, n integral */
static inline vreal times_power_of_2(vreal p, vreal n) {
#if DOUBLE
    return (vreal)_mm512_scalef_pd((__m512d)p, (__m512d)n);
#else
    return (vreal)_mm512_scalef_ps((__m512)p, (__m512)n);
#endif
}
#endif

#if !SCALEF
/* min(x, c) and max(x, c) by lane, c where x is NaN */
static inline vreal at_most(vreal x, real c) { return blend(x < c, x, splat(c)); }

static inline vreal at_least(vreal x, real c) { return blend(x > c, x, splat(c)); }
#endif

/* 2^x for ROWS vectors at once (their dependency chains interleave), x = n + f with n
   the nearest integer. A weight below 2^EXP_FLOOR counts as that (nothing, beside a
   row's largest weight of 1); one above 2^RESHIFT, or a NaN, shows in a chunk's sums
   as a sum not at most 2^RESHIFT. With AVX-512, n is rounded and 2^n applied in one
   instruction each (vrndscale, vscalef: any n, an overflow infinite), so x is only
   clamped below; elsewhere n is added to the result's exponent field, so x is first
   clamped to [EXP_FLOOR, EXP_CAP] (NaN to EXP_CAP). Both give the same weights, bit
   for bit; the first is 1.15-1.3x faster (fewer instructions on the FMA units). */
static inline void exp2_rows(vreal x[ROWS]) {
#if SCALEF
    vreal n[ROWS];
#else
    const real magic = (real)1.5 * (real)(1LL << MANTISSA); /* rounds to an integer */
    vint n[ROWS];
#endif
    vreal f[ROWS], p[ROWS];
    for (int r = 0; r < ROWS; r++) {
#if SCALEF
        x[r] = blend(x[r] < (real)EXP_FLOOR, splat((real)EXP_FLOOR), x[r]); /* NaN stays */
        n[r] = round_nearest(x[r]);
        f[r] = x[r] - n[r];
#else
        x[r] = at_least(at_most(x[r], (real)EXP_CAP), (real)EXP_FLOOR);
        vreal t = x[r] + magic;
        n[r] = (vint)t - (vint)splat(magic);
        f[r] = x[r] - (t - magic);
#endif
    }
#if DOUBLE
    /* Taylor series of e^(f ln 2) = sum_k (f ln 2)^k / k! to degree 13:
       remainder below 5e-18 on |f| <= 1/2 */
    static const double c[] = {
        1.36914888539041281e-12, 2.56784359934882055e-11, 4.44553827187081162e-10,
        7.05491162080112336e-09, 1.01780860092396999e-07, 1.32154867901443095e-06,
        1.52527338040598411e-05, 1.54035303933816088e-04, 1.33335581464284433e-03,
        9.61812910762847688e-03, 5.55041086648215831e-02, 2.40226506959100722e-01,
        6.93147180559945286e-01, 1.0};
    for (int r = 0; r < ROWS; r++) p[r] = splat(c[0]);
    for (int k = 1; k < (int)(sizeof c / sizeof c[0]); k++)
        for (int r = 0; r < ROWS; r++) p[r] = p[r] * f[r] + c[k];
#else
    /* minimax polynomial for 2^f on |f| <= 1/2 (Cephes exp2f), relative error ~2e-8 */
    for (int r = 0; r < ROWS; r++) p[r] = splat(1.535336188319500e-4f);
    for (int r = 0; r < ROWS; r++) p[r] = p[r] * f[r] + 1.339887440266574e-3f;
    for (int r = 0; r < ROWS; r++) p[r] = p[r] * f[r] + 9.618437357674640e-3f;
    for (int r = 0; r < ROWS; r++) p[r] = p[r] * f[r] + 5.550332471162809e-2f;
    for (int r = 0; r < ROWS; r++) p[r] = p[r] * f[r] + 2.402264791363012e-1f;
    for (int r = 0; r < ROWS; r++) p[r] = p[r] * f[r] + 6.931472028550421e-1f;
    for (int r = 0; r < ROWS; r++) p[r] = p[r] * f[r] + 1.0f;
#endif
    for (int r = 0; r < ROWS; r++)
#if SCALEF
        x[r] = times_power_of_2(p[r], n[r]);
#else
        x[r] = (vreal)((vint)p[r] + (n[r] << MANTISSA));
#endif
}

/* whether any lane of v is above c or NaN */
static inline int any_above(vreal v, real c) {
    vint above = ~(v <= c);
    integer any = 0;
    for (int l = 0; l < LANES; l++) any |= above[l];
    return any != 0;
}

static inline real largest(vreal v) {
    real top = v[0];
    for (int l = 1; l < LANES; l++) top = v[l] > top ? v[l] : top;
    return top;
}

/* a vector of reals in float64, and the sum of its lanes */
typedef double vwide __attribute__((vector_size(LANES * sizeof(double))));

static inline vwide widen(vreal v) { return __builtin_convertvector(v, vwide); }

static inline double wide_total(vwide v) {
    double sum = 0;
    for (int l = 0; l < LANES; l++) sum += v[l];
    return sum;
}

#if WITH_MOMENTS
static inline double total(vreal v) {
    double sum = 0;
    for (int l = 0; l < LANES; l++) sum += v[l];
    return sum;
}
#endif

#if MATMUL
#define KEY_ROWS (DIMS + 1)
#else
#define KEY_ROWS DIMS
#endif

/* The weighted sums of many value columns, from a chunk's weights kept (w[i], for the
   key vector at[i]) rather than summed as they come: a group of VALUE_GROUP columns at
   a time, so that its sums stay in registers. */
static inline void weigh_values(vreal weighted[ROWS][VALUES], const vreal w[][ROWS],
                                const ptrdiff_t *at, int count, const real *vt, ptrdiff_t m_pad) {
    for (int c0 = 0; c0 < VALUES; c0 += VALUE_GROUP) {
        vreal sums[ROWS][VALUE_GROUP];
        for (int r = 0; r < ROWS; r++)
            for (int g = 0; g < VALUE_GROUP; g++) sums[r][g] = splat(0);
        for (int i = 0; i < count; i++) {
            vreal v[VALUE_GROUP];
            for (int g = 0; g < VALUE_GROUP; g++)
                v[g] = c0 + g < VALUES ? load(vt + (c0 + g) * m_pad + at[i]) : splat(0);
            for (int r = 0; r < ROWS; r++)
                for (int g = 0; g < VALUE_GROUP; g++) sums[r][g] += w[i][r] * v[g];
        }
        for (int r = 0; r < ROWS; r++)
            for (int g = 0; g < VALUE_GROUP && c0 + g < VALUES; g++) weighted[r][c0 + g] = sums[r][g];
    }
}

/* x[r] = log2 weights of query row r over keys j .. j + LANES, minus base[r]; keys from
   m on (padding) get -inf, and so does key own[r] (leave-one-out: query row r is that
   key; -1 for none). kt: (KEY_ROWS, m_pad), one key per column. */
static inline void log_weights(vreal x[ROWS], const real qrows[ROWS][DIMS], const real base[ROWS],
                               const real *kt, ptrdiff_t m_pad, ptrdiff_t j, ptrdiff_t m,
                               const ptrdiff_t own[ROWS + 2]) {
    /* the rows' coordinates and bases are read as scalars where they are used, each an
       FMA's broadcast operand (one narrow load): the empty asm hides where they are, so
       the compiler cannot hoist ROWS x DIMS broadcast vectors out of the loop, which
       would not fit in registers and be reloaded whole (d = 8: 0.30 -> 0.26 ns a pair) */
    const real *qp = &qrows[0][0], *bp = base;
    __asm__("" : "+r"(qp), "+r"(bp));
#if MATMUL
    vreal bias = load(kt + DIMS * m_pad + j);
    for (int r = 0; r < ROWS; r++) x[r] = bias - bp[r];
    for (int c = 0; c < DIMS; c++) {
        vreal kc = load(kt + c * m_pad + j);
        for (int r = 0; r < ROWS; r++) x[r] += qp[r * DIMS + c] * kc;
    }
#else
    vreal s[ROWS];
    for (int r = 0; r < ROWS; r++) s[r] = splat(0);
    for (int c = 0; c < DIMS; c++) {
        vreal kc = load(kt + c * m_pad + j);
        for (int r = 0; r < ROWS; r++) {
            vreal diff = kc - qp[r * DIMS + c];
            s[r] += diff * diff;
        }
    }
    for (int r = 0; r < ROWS; r++) x[r] = s[r] * (real)SCALE - bp[r];
#endif
    /* lanes counted from j: no index beyond float32's integers is ever converted */
    if (own[ROWS] <= j + LANES - 1 && own[ROWS + 1] >= j) { /* a row's own key is here */
        for (int r = 0; r < ROWS; r++) {
            ptrdiff_t lane = own[r] - j;
            integer at = lane >= 0 && lane < LANES ? (integer)lane : -1;
            x[r] = blend(lane_numbers() == splat_int(at), splat(-INFINITY), x[r]);
        }
    }
    if (j + LANES > m) {
        vint inside = lane_numbers() < splat_int((integer)(m - j));
        for (int r = 0; r < ROWS; r++) x[r] = blend(inside, x[r], splat(-INFINITY));
    }
}

/* The key vectors of a chunk from j0 that its boxes not passed over hold (at); their
   count. */
static inline int chunk_vectors(const int skip[BOXES], ptrdiff_t j0, ptrdiff_t at[CHUNK / LANES]) {
    int count = 0;
    for (ptrdiff_t j = j0; j < j0 + CHUNK; j += LANES)
        if (!skip[(j - j0) / BOX]) at[count++] = j;
    return count;
}

/* w[i][r]: the weights 2^(log2 w - base[r]) of query row r over the key vector at[i].
   Each step forms the next vector's log weights before the exponentials of its own, so
   that the two long dependency chains interleave. over (or NULL): each row's lanes with
   a log weight above RESHIFT (or NaN), or'ed in. */
static inline void chunk_weights(vreal w[CHUNK / LANES][ROWS], const real qrows[ROWS][DIMS],
                                 const real base[ROWS], const real *kt, ptrdiff_t m_pad,
                                 ptrdiff_t m, const ptrdiff_t own[ROWS + 2], const ptrdiff_t *at,
                                 int count, vint over[ROWS]) {
    vreal x[ROWS], next[ROWS];
    vint seen[ROWS] = {{0}}; /* in registers, not through the pointer */
    if (count) log_weights(x, qrows, base, kt, m_pad, at[0], m, own);
    for (int i = 0; i < count; i++) {
        log_weights(next, qrows, base, kt, m_pad, at[i + 1 < count ? i + 1 : i], m, own);
        if (over)
            for (int r = 0; r < ROWS; r++) seen[r] |= ~(x[r] <= (real)RESHIFT);
        exp2_rows(x);
        for (int r = 0; r < ROWS; r++) {
            w[i][r] = x[r];
            x[r] = next[r];
        }
    }
    for (int r = 0; over && r < ROWS; r++) over[r] |= seen[r];
}

/* Query rows i0 .. i0 + ROWS, by coordinate; rows past the last (rows of them
   are real) repeat it, and their results are not written. */
static inline void query_rows(real qrows[ROWS][DIMS], const real *q, ptrdiff_t i0, int rows) {
    for (int r = 0; r < ROWS; r++) {
        ptrdiff_t i = i0 + (r < rows ? r : rows - 1);
        for (int c = 0; c < DIMS; c++) qrows[r][c] = q[i * DIMS + c];
    }
}

/* The keys each row leaves out (own[i], -1 for none; own NULL: none), rows as query_rows;
   then the least and the largest of them (PTRDIFF_MAX and -1 for none). */
static inline void own_keys(ptrdiff_t row_own[ROWS + 2], const ptrdiff_t *own, ptrdiff_t i0, int rows) {
    row_own[ROWS] = PTRDIFF_MAX;
    row_own[ROWS + 1] = -1;
    for (int r = 0; r < ROWS; r++) {
        row_own[r] = own ? own[i0 + (r < rows ? r : rows - 1)] : -1;
        if (row_own[r] >= 0 && row_own[r] < row_own[ROWS]) row_own[ROWS] = row_own[r];
        if (row_own[r] > row_own[ROWS + 1]) row_own[ROWS + 1] = row_own[r];
    }
}

/* Far keys. Boxes lo, hi (boxes, DIMS), in the keys' coordinates, bound BOX keys each;
   a chunk's box bounds its BOXES boxes. Per block of queries (its own box qlo, qhi):
   reach, an upper bound on the distance term SCALE |q - k|^2 over a box's keys and the
   block's queries; lift[r], what row r's log weights add to it (MATMUL: the query's
   LOG2E |q|^2 / 2 that the product form keeps); slack[r], what rounding may add. */
typedef struct {
    const double *lo, *hi;
    double *chunk_lo, *chunk_hi; /* (chunks, DIMS) */
    ptrdiff_t boxes, chunks;
    double key_lift;   /* MATMUL: the largest LOG2E |k|^2 / 2, which the bias carries */
    double free, near; /* log2: FREE BUDGET / (BOX boxes), BUDGET / BOX */
    /* growth's power and each row's stretch (NULL: 1): polynomial moments multiply a
       weight by at most (1 + 2 |k - c|^2 stretch)^power */
    double power;
    const double *stretch;
    double qlo[DIMS], qhi[DIMS];
} far_keys;

static double reach(const far_keys *far, const double *lo, const double *hi) {
    double d2 = 0;
    for (int c = 0; c < DIMS; c++) {
        double below = lo[c] - far->qhi[c], above = far->qlo[c] - hi[c];
        double gap = below > above ? below : above;
        d2 += gap > 0 ? gap * gap : 0.0;
    }
    /* rounding makes the loop's terms at most (DIMS + 3) EPSILON larger */
    return SCALE * d2 * (1.0 - (DIMS + 3) * EPSILON);
}

/* The block's box, lift and slack; returns the chunk of the largest reach. */
static ptrdiff_t block_start(far_keys *far, const real qrows[ROWS][DIMS], double lift[ROWS],
                             double slack[ROWS]) {
    const double unit = MATMUL ? LOG2E : 1.0; /* the product form's queries carry LOG2E */
    for (int c = 0; c < DIMS; c++) {
        far->qlo[c] = INFINITY;
        far->qhi[c] = -INFINITY;
    }
    for (int r = 0; r < ROWS; r++) {
        double norm = 0;
        for (int c = 0; c < DIMS; c++) {
            double v = qrows[r][c] / unit;
            far->qlo[c] = v < far->qlo[c] ? v : far->qlo[c];
            far->qhi[c] = v > far->qhi[c] ? v : far->qhi[c];
            norm += v * v;
        }
        lift[r] = MATMUL ? -SCALE * norm : 0.0;
        slack[r] = 1.0 + 16.0 * (DIMS + 2) * EPSILON * (lift[r] + far->key_lift);
    }
    ptrdiff_t best = 0;
    double best_reach = -INFINITY;
    for (ptrdiff_t c = 0; c < far->chunks; c++) {
        double top = reach(far, far->chunk_lo + c * DIMS, far->chunk_hi + c * DIMS);
        if (top > best_reach) {
            best = c;
            best_reach = top;
        }
    }
    return best;
}

/* log2 of what the moments multiply a weight by at most, 1 + |k - k_ref|^2 over the
   box's keys (spread[r]: |q_r - k_ref|^2; the moments' own terms are at most that
   times the weight), or 0 for plain sums (spread NULL). Polynomial moments of degree
   2 power in z = (k - c) / s (spread[r]: |q_r - c|^2; stretch[r]: max 1 / s^2): at
   most (1 + |z|^2)^power, with |k - c|^2 <= 2 (|k - q|^2 + |q - c|^2). */
static inline double growth(const far_keys *far, const double *lo, const double *hi,
                            const double *spread, int r) {
    if (!spread) return 0.0;
    double d2 = 0;
    for (int c = 0; c < DIMS; c++) {
        double a = hi[c] - far->qlo[c], b = far->qhi[c] - lo[c];
        double most = a > b ? a : b;
        d2 += most > 0 ? most * most : 0.0;
    }
    double stretch = far->stretch ? far->stretch[r] : 1.0;
    return far->power * log2(1.0 + 2.0 * (d2 + spread[r]) * stretch);
}

/* Which boxes of a chunk a block passes over, given each row's level (its shift plus
   log2 of its sum so far, less the shift's rounding): those whose largest weights keep
   what the row leaves out within BUDGET of its sum. Half of it (FREE) goes to boxes
   below far->free each (all of them together stay within it: no accounting), the
   rest, spent[r], to boxes below far->near as they come. Returns whether it passes
   over all. */
static int skip_boxes(const far_keys *far, ptrdiff_t chunk, const double lift[ROWS],
                      const double slack[ROWS], const double level[ROWS], double spent[ROWS],
                      const double *spread, int skip[BOXES]) {
    const double *clo = far->chunk_lo + chunk * DIMS, *chi = far->chunk_hi + chunk * DIMS;
    double chunk_reach = reach(far, clo, chi);
    int all = 1;
    for (int r = 0; r < ROWS; r++)
        all &= chunk_reach + lift[r] + slack[r] + growth(far, clo, chi, spread, r) - level[r] <= far->free;
    if (all) {
        for (int b = 0; b < BOXES; b++) skip[b] = 1;
        return 1;
    }
    for (int b = 0; b < BOXES; b++) {
        const double *lo = far->lo + (chunk * BOXES + b) * DIMS, *hi = far->hi + (chunk * BOXES + b) * DIMS;
        double box_reach = reach(far, lo, hi), add[ROWS];
        skip[b] = 1;
        for (int r = 0; r < ROWS && skip[b]; r++) {
            double top = box_reach + lift[r] + slack[r] + growth(far, lo, hi, spread, r) - level[r];
            add[r] = top <= far->free ? 0.0 : BOX * exp2(top);
            skip[b] = top <= far->free || (top <= far->near && spent[r] + add[r] <= (1 - FREE) * BUDGET);
        }
        if (skip[b])
            for (int r = 0; r < ROWS; r++) spent[r] += add[r];
        all &= skip[b];
    }
    return all;
}

#if WITH_MOMENTS
/* Which boxes of a chunk cannot hold a row's heaviest key: the largest log weight each
   allows is below every row's largest so far (top, by lane). Returns whether none can. */
static int lighter_boxes(const far_keys *far, ptrdiff_t chunk, const double lift[ROWS],
                         const double slack[ROWS], const vreal top[ROWS], int skip[BOXES]) {
    double best[ROWS];
    for (int r = 0; r < ROWS; r++) best[r] = largest(top[r]);
    double chunk_reach = reach(far, far->chunk_lo + chunk * DIMS, far->chunk_hi + chunk * DIMS);
    int all = 1;
    for (int r = 0; r < ROWS; r++) all &= chunk_reach + lift[r] + slack[r] < best[r];
    for (int b = 0; b < BOXES; b++) {
        ptrdiff_t box = chunk * BOXES + b;
        double box_reach = all ? 0.0 : reach(far, far->lo + box * DIMS, far->hi + box * DIMS);
        skip[b] = 1;
        for (int r = 0; r < ROWS && !all; r++) skip[b] &= box_reach + lift[r] + slack[r] < best[r];
    }
    if (!all) {
        all = 1;
        for (int b = 0; b < BOXES; b++) all &= skip[b];
    }
    return all;
}
#endif

/* Sets far up for the boxes lo, hi (chunks' boxes allocated); returns whether there
   are any (lo not NULL) and the allocation held. */
static int far_start(far_keys *far, const double *lo, const double *hi, ptrdiff_t m_pad) {
    far->lo = lo;
    far->hi = hi;
    far->boxes = m_pad / BOX;
    far->chunks = m_pad / CHUNK;
    far->key_lift = 0;
    far->power = 1;
    far->stretch = NULL;
    far->near = log2(BUDGET / BOX);
    far->free = log2(FREE * BUDGET / BOX) - log2((double)far->boxes);
    far->chunk_lo = far->chunk_hi = NULL;
    if (!lo) return 0;
    far->chunk_lo = malloc(2 * far->chunks * DIMS * sizeof(double));
    if (!far->chunk_lo) return 0;
    far->chunk_hi = far->chunk_lo + far->chunks * DIMS;
    for (ptrdiff_t k = 0; k < far->chunks; k++) {
        for (int c = 0; c < DIMS; c++) {
            double *l = far->chunk_lo + k * DIMS + c, *h = far->chunk_hi + k * DIMS + c;
            *l = INFINITY;
            *h = -INFINITY;
            for (int b = 0; b < BOXES; b++) {
                ptrdiff_t at = (k * BOXES + b) * DIMS + c;
                *l = lo[at] < *l ? lo[at] : *l;
                *h = hi[at] > *h ? hi[at] : *h;
            }
        }
    }
    for (ptrdiff_t b = 0; MATMUL && b < far->boxes; b++) {
        double norm = 0;
        for (int c = 0; c < DIMS; c++) {
            double l = lo[b * DIMS + c], h = hi[b * DIMS + c];
            if (l <= h) norm += l * l > h * h ? l * l : h * h;
        }
        far->key_lift = -SCALE * norm > far->key_lift ? -SCALE * norm : far->key_lift;
    }
    return 1;
}

/* A row's level after its sums changed: see skip_boxes. */
static inline double row_level(double shift, double sum) {
    return shift - EPSILON * fabs(shift) + log2(sum);
}

/* For queries q (n, DIMS), keys kt (KEY_ROWS, m_pad) and values vt (VALUES, m_pad):
   shift (n,) in log2 units, sum (n,) and weighted (n, VALUES) of 2^(log2 w - shift).
   own (n,) or NULL: the key each query row leaves out of its sums (-1: none). lo, hi
   (m_pad / BOX, DIMS) or NULL: the keys' boxes, for passing over far ones. */
EXPORT void STATE_NAME(const real *q, ptrdiff_t n, const real *kt, const real *vt, ptrdiff_t m,
                    ptrdiff_t m_pad, double *shift, double *sum, double *weighted,
                    const ptrdiff_t *own, const double *lo, const double *hi) {
    FLUSH_TO_ZERO_BEGIN
    const real zero[ROWS] = {0};
    far_keys far = {0};
    int pruning = far_start(&far, lo, hi, m_pad);
    ptrdiff_t chunks = m_pad / CHUNK;
    for (ptrdiff_t i0 = 0; i0 < n; i0 += ROWS) {
        int rows = n - i0 < ROWS ? (int)(n - i0) : ROWS;
        ptrdiff_t row_own[ROWS + 2], first = 0;
        /* the rows' sums by lane, in float64 */
        vwide row_sum[ROWS], row_weighted[ROWS][VALUES];
        double row_shift[ROWS], lift[ROWS], slack[ROWS], spent[ROWS], level[ROWS];
        real qrows[ROWS][DIMS];
        for (int r = 0; r < ROWS; r++) {
            row_shift[r] = -INFINITY;
            spent[r] = 0;
            level[r] = -INFINITY;
            row_sum[r] = (vwide){0};
            for (int c = 0; c < VALUES; c++) row_weighted[r][c] = (vwide){0};
        }
        query_rows(qrows, q, i0, rows);
        own_keys(row_own, own, i0, rows);
        if (pruning) first = block_start(&far, qrows, lift, slack);
        /* the chunk of the nearest box first (it sets the shifts), then the others */
        for (ptrdiff_t t = -1; t < chunks; t++) {
            if (t == first) continue;
            ptrdiff_t j0 = (t < 0 ? first : t) * CHUNK;
            int skip[BOXES] = {0};
            if (pruning && t >= 0 && skip_boxes(&far, t, lift, slack, level, spent, NULL, skip))
                continue;
            int reshift = t < 0;
            for (;;) {
                if (reshift) { /* shifts to this chunk's maxima where those are larger */
                    vreal top[ROWS], x[ROWS];
                    for (int r = 0; r < ROWS; r++) top[r] = splat(-INFINITY);
                    for (ptrdiff_t j = j0; j < j0 + CHUNK; j += LANES) {
                        if (skip[(j - j0) / BOX]) continue;
                        log_weights(x, qrows, zero, kt, m_pad, j, m, row_own);
                        for (int r = 0; r < ROWS; r++) top[r] = blend(x[r] > top[r], x[r], top[r]);
                    }
                    for (int r = 0; r < ROWS; r++) {
                        double new_shift = largest(top[r]) + HEADROOM;
                        if (new_shift > row_shift[r]) {
                            double scale = row_shift[r] == -INFINITY ? 0.0 : exp2(row_shift[r] - new_shift);
                            row_sum[r] *= scale;
                            for (int c = 0; c < VALUES; c++) row_weighted[r][c] *= scale;
                            row_shift[r] = new_shift;
                        }
                    }
                }
                real base[ROWS];
                vreal chunk_sum[ROWS], chunk_weighted[ROWS][VALUES];
                vreal weights[CHUNK / LANES][ROWS];
                for (int r = 0; r < ROWS; r++) {
                    /* a row without a finite log weight yet: any finite base leaves it at 0 */
                    base[r] = isfinite(row_shift[r]) ? (real)row_shift[r] : (real)0;
                    chunk_sum[r] = splat(0);
                    for (int c = 0; c < VALUES; c++) chunk_weighted[r][c] = splat(0);
                }
                /* the weights of the chunk's key vectors, then the sums they weigh */
                ptrdiff_t at[CHUNK / LANES];
                int count = chunk_vectors(skip, j0, at);
                chunk_weights(weights, qrows, base, kt, m_pad, m, row_own, at, count, NULL);
                for (int i = 0; i < count; i++)
                    for (int r = 0; r < ROWS; r++) chunk_sum[r] += weights[i][r];
                weigh_values(chunk_weighted, weights, at, count, vt, m_pad);
                /* a weight over 2^RESHIFT (or a NaN log weight): the chunk's sums are
                   discarded, and summed again after a re-shift (or the row made NaN) */
                int any = 0, row_over[ROWS];
                for (int r = 0; r < ROWS; r++) {
                    row_over[r] = any_above(chunk_sum[r], (real)(1 << (int)RESHIFT));
                    any |= row_over[r];
                }
                if (any && !reshift) { /* once: a row still over after it is not finite */
                    reshift = 1;
                    continue;
                }
                for (int r = 0; r < ROWS; r++) {
                    /* log weights that rounding keeps above the shift (coordinates so large
                       that their products lose the digits): the caller pools the row again */
                    row_sum[r] += row_over[r] ? (vwide){0} + NAN : widen(chunk_sum[r]);
                    for (int c = 0; c < VALUES; c++) row_weighted[r][c] += widen(chunk_weighted[r][c]);
                    if (pruning) level[r] = row_level(row_shift[r], wide_total(row_sum[r]));
                }
                break;
            }
        }
        for (int r = 0; r < rows; r++) {
            /* a row without a finite log weight is empty; one whose heaviest key, formed
               again after the shift, lost its weight of at least 2^-HEADROOM to rounding
               is not finite, and so is one (difference form) whose log weights' rounding,
               (DIMS + 3) EPSILON of their size, exceeds LOST_LOG2: no digit of its weights'
               ratios is left, which with FMA shows as a lost heaviest weight and without
               it as weights all equal */
            int empty = row_shift[r] == -INFINITY;
            int lost = !MATMUL && fabs(row_shift[r]) * (DIMS + 3) * EPSILON > LOST_LOG2;
            double row_total = wide_total(row_sum[r]);
            shift[i0 + r] = row_shift[r];
            sum[i0 + r] = empty ? 0.0
                          : !lost && row_total >= 0.5 * exp2(-HEADROOM) ? row_total
                                                                         : NAN;
            for (int c = 0; c < VALUES; c++)
                weighted[(i0 + r) * VALUES + c] = empty ? 0.0 : wide_total(row_weighted[r][c]);
        }
    }
    FLUSH_TO_ZERO_END
    free(far.chunk_lo);
}

#if WITH_MOMENTS
/* Local moments for local linear fits, in one column layout per query row:
     [S, Σ w δ (DIMS), Σ w δ δᵀ (DIMS²), Σ w y' (VALUES), Σ w δ y' (VALUES × DIMS)]
   with w = 2^(log2 w - shift), δ = k - k_ref and y' = y - y_ref taken about the row's
   heaviest key k_ref (the first of its largest log weight, index written to ref): its
   own terms are exactly 0, so a row that one key dominates keeps the others' moments
   (about the query, E[δδᵀ] - E[δ]E[δ]ᵀ cancels to rounding). A first pass over the
   keys finds it and the shift (that key's log weight: no weight exceeds 1); own as in
   gaussian_state. A row whose log weights rounding keeps above the shift by more
   than RESHIFT comes out NaN; one without a finite log weight, all 0 (ref -1). lo, hi
   as in gaussian_state: the first pass passes over boxes that cannot hold the heaviest
   key, the second over those whose weights, times 1 + |k - k_ref|^2 (the most a
   moment multiplies one by), keep what a row leaves out within BUDGET of its sum. The
   second pass works a chunk at a time: its weights, then its moments a row at a time
   (six rows' sums at once would not stay in registers: 1.7 -> 1.1 ns a pair at d = 3). */
#define MOMENTS (1 + DIMS + DIMS * DIMS + VALUES * (1 + DIMS))

EXPORT void MOMENTS_NAME(const real *q, ptrdiff_t n, const real *kt, const real *vt, ptrdiff_t m,
                      ptrdiff_t m_pad, double *shift, double *moments, ptrdiff_t *ref,
                      const ptrdiff_t *own, const double *lo, const double *hi) {
    const real zero[ROWS] = {0};
    const real floor_weight = (real)exp2(EXP_FLOOR);
    far_keys far = {0};
    int pruning = far_start(&far, lo, hi, m_pad);
    ptrdiff_t chunks = m_pad / CHUNK;
    for (ptrdiff_t i0 = 0; i0 < n; i0 += ROWS) {
        int rows = n - i0 < ROWS ? (int)(n - i0) : ROWS;
        ptrdiff_t row_own[ROWS + 2], first = 0;
        double lift[ROWS], slack[ROWS];
        real qrows[ROWS][DIMS];
        vreal x[ROWS], top[ROWS];
        vint at[ROWS];
        query_rows(qrows, q, i0, rows);
        own_keys(row_own, own, i0, rows);
        for (int r = 0; r < ROWS; r++) {
            top[r] = splat(-INFINITY);
            at[r] = (vint){0} - 1;
        }
        if (pruning) first = block_start(&far, qrows, lift, slack);
        /* the heaviest key per lane (the first of equals), from the nearest chunk on: a box
           whose largest log weight is below every row's largest so far holds none */
        for (ptrdiff_t t = -1; t < chunks; t++) {
            if (t == first) continue;
            ptrdiff_t chunk = t < 0 ? first : t, j0 = chunk * CHUNK;
            int skip[BOXES] = {0};
            if (pruning && t >= 0 && lighter_boxes(&far, chunk, lift, slack, top, skip)) continue;
            for (ptrdiff_t j = j0; j < j0 + CHUNK; j += LANES) {
                if (skip[(j - j0) / BOX]) continue;
                log_weights(x, qrows, zero, kt, m_pad, j, m, row_own);
                vint index;
                for (int l = 0; l < LANES; l++) index[l] = j + l;
                for (int r = 0; r < ROWS; r++) {
                    vint larger = (x[r] > top[r]) | ((x[r] == top[r]) & (index < at[r]));
                    top[r] = blend(larger, x[r], top[r]);
                    at[r] = (at[r] & ~larger) | (index & larger);
                }
            }
        }
        double row_shift[ROWS], spread[ROWS], level[ROWS], spent[ROWS];
        ptrdiff_t row_ref[ROWS];
        real base[ROWS];
        vreal rv[ROWS][DIMS], ry[ROWS][VALUES];
        for (int r = 0; r < ROWS; r++) {
            row_shift[r] = -INFINITY;
            row_ref[r] = -1;
            for (int l = 0; l < LANES; l++) {
                if (top[r][l] > row_shift[r] || (top[r][l] == row_shift[r] && at[r][l] < row_ref[r])) {
                    row_shift[r] = top[r][l];
                    row_ref[r] = at[r][l];
                }
            }
            if (!isfinite(row_shift[r])) row_ref[r] = -1;
            ptrdiff_t k = row_ref[r] >= 0 ? row_ref[r] : 0;
            base[r] = isfinite(row_shift[r]) ? (real)row_shift[r] : (real)0;
            for (int c = 0; c < DIMS; c++) rv[r][c] = splat(kt[c * m_pad + k]);
            for (int c = 0; c < VALUES; c++) ry[r][c] = splat(vt[c * m_pad + k]);
            spread[r] = 0;
            for (int c = 0; c < DIMS; c++) {
                double gap = kt[c * m_pad + k] - qrows[r][c] / (MATMUL ? LOG2E : 1.0);
                spread[r] += gap * gap;
            }
            level[r] = row_shift[r] - EPSILON * fabs(row_shift[r]); /* the sum is at least 1 */
            spent[r] = 0;
        }
        vreal s0[ROWS], s1[ROWS][DIMS], s2[ROWS][DIMS][DIMS], sy[ROWS][VALUES],
            syd[ROWS][VALUES][DIMS];
        vint over[ROWS];
        for (int r = 0; r < ROWS; r++) {
            over[r] = (vint){0};
            s0[r] = splat(0);
            for (int a = 0; a < DIMS; a++) {
                s1[r][a] = splat(0);
                for (int b = 0; b < DIMS; b++) s2[r][a][b] = splat(0);
            }
            for (int c = 0; c < VALUES; c++) {
                sy[r][c] = splat(0);
                for (int a = 0; a < DIMS; a++) syd[r][c][a] = splat(0);
            }
        }
        for (ptrdiff_t chunk = 0; chunk < chunks; chunk++) {
            ptrdiff_t at[CHUNK / LANES];
            int skip[BOXES] = {0};
            if (pruning && skip_boxes(&far, chunk, lift, slack, level, spent, spread, skip)) continue;
            /* the chunk's weights first, then its moments a row at a time, so that one
               row's sums stay in registers */
            int count = chunk_vectors(skip, chunk * CHUNK, at);
            vreal w[CHUNK / LANES][ROWS];
            chunk_weights(w, qrows, base, kt, m_pad, m, row_own, at, count, over);
            for (int r = 0; r < ROWS && count; r++) {
                vreal a0 = splat(0), a1[DIMS], a2[DIMS][DIMS], ay[VALUES], ayd[VALUES][DIMS];
                for (int a = 0; a < DIMS; a++) {
                    a1[a] = splat(0);
                    for (int b = a; b < DIMS; b++) a2[a][b] = splat(0);
                }
                for (int c = 0; c < VALUES; c++) {
                    ay[c] = splat(0);
                    for (int a = 0; a < DIMS; a++) ayd[c][a] = splat(0);
                }
                for (int i = 0; i < count; i++) {
                    /* a weight at the floor counts as 0, as in the polynomial moments: a
                       row one key dominates keeps no far key's offsets (local linear's
                       slope through the floor's far keys was not the exact sums') */
                    vreal delta[DIMS], weight = blend(w[i][r] > floor_weight, w[i][r], splat(0));
                    a0 += weight;
                    for (int a = 0; a < DIMS; a++) delta[a] = load(kt + a * m_pad + at[i]) - rv[r][a];
                    for (int a = 0; a < DIMS; a++) {
                        vreal wd = weight * delta[a];
                        a1[a] += wd;
                        for (int b = a; b < DIMS; b++) a2[a][b] += wd * delta[b];
                    }
                    for (int c = 0; c < VALUES; c++) {
                        vreal wy = weight * (load(vt + c * m_pad + at[i]) - ry[r][c]);
                        ay[c] += wy;
                        for (int a = 0; a < DIMS; a++) ayd[c][a] += wy * delta[a];
                    }
                }
                s0[r] += a0;
                for (int a = 0; a < DIMS; a++) {
                    s1[r][a] += a1[a];
                    for (int b = a; b < DIMS; b++) s2[r][a][b] += a2[a][b];
                }
                for (int c = 0; c < VALUES; c++) {
                    sy[r][c] += ay[c];
                    for (int a = 0; a < DIMS; a++) syd[r][c][a] += ayd[c][a];
                }
            }
        }
        for (int r = 0; r < rows; r++) {
            int row_over = 0;
            for (int l = 0; l < LANES; l++) row_over |= over[r][l] != 0;
            double *out = moments + (i0 + r) * MOMENTS;
            shift[i0 + r] = row_shift[r];
            ref[i0 + r] = row_ref[r];
            out[0] = row_over ? NAN : total(s0[r]);
            if (row_ref[r] >= 0 && !(out[0] >= 0.5)) out[0] = NAN; /* as in gaussian_state */
            for (int a = 0; a < DIMS; a++) {
                out[1 + a] = total(s1[r][a]);
                for (int b = a; b < DIMS; b++)
                    out[1 + DIMS + a * DIMS + b] = out[1 + DIMS + b * DIMS + a] = total(s2[r][a][b]);
            }
            for (int c = 0; c < VALUES; c++) {
                out[1 + DIMS + DIMS * DIMS + c] = total(sy[r][c]);
                for (int a = 0; a < DIMS; a++)
                    out[1 + DIMS + DIMS * DIMS + VALUES + c * DIMS + a] = total(syd[r][c][a]);
            }
            /* without a finite log weight, the row is empty */
            for (int k = 0; row_ref[r] < 0 && !row_over && k < MOMENTS; k++) out[k] = 0;
        }
    }
    free(far.chunk_lo);
}

/* Local polynomial moments, the last of a polynomial fit's passes (the first are
   MOMENTS_NAME's: the shift, the heaviest key k_ref and the moments that give each
   row's weighted mean offset mu and spread s). With z = (k - k_ref - mu) / s by
   column, centre = k_ref + mu and stretch = 1 / s (n, DIMS) per row, and w =
   2^(log2 w - shift) (a weight at 2^EXP_FLOOR counts as 0, so no far key's powers
   enter): powers (n, terms) = sum_k w z^gamma over the monomials gamma of the table
   (by total degree, the constant first: monomial g > 0 is monomial parent[g] times
   z[axis[g]], the table being [parent (terms), axis (terms)]), and responses (n,
   VALUES, basis) = sum_k w z^alpha (y - y_ref) over the first basis monomials. degree:
   the largest total degree is 2 degree. Rows with ref -1 come out 0; one with a log
   weight above its shift by more than RESHIFT, NaN. Returns -1 (nothing written) for
   more than MAX_TERMS monomials or MAX_BASIS of them times VALUES. lo, hi as in
   gaussian_state: boxes whose weights, times the most a monomial multiplies one by,
   keep what a row leaves out within BUDGET of its sum are passed over. */
#define MAX_TERMS 128
#define MAX_RESPONSES 128

EXPORT int POLYNOMIAL_NAME(const real *q, ptrdiff_t n, const real *kt, const real *vt, ptrdiff_t m,
                           ptrdiff_t m_pad, const double *shift, const ptrdiff_t *ref,
                           const double *centre, const double *stretch, double *powers,
                           double *responses, const ptrdiff_t *own, const double *lo,
                           const double *hi, ptrdiff_t terms, ptrdiff_t basis,
                           const ptrdiff_t *table, ptrdiff_t degree) {
    if (terms > MAX_TERMS || terms < 1 || basis > terms || basis * VALUES > MAX_RESPONSES) return -1;
    const ptrdiff_t *parent = table, *axis = table + terms;
    const real floor_weight = (real)exp2(EXP_FLOOR);
    far_keys far = {0};
    int pruning = far_start(&far, lo, hi, m_pad);
    double row_stretch[ROWS];
    far.power = (double)degree;
    far.stretch = row_stretch;
    ptrdiff_t chunks = m_pad / CHUNK;
    for (ptrdiff_t i0 = 0; i0 < n; i0 += ROWS) {
        int rows = n - i0 < ROWS ? (int)(n - i0) : ROWS;
        ptrdiff_t row_own[ROWS + 2];
        double lift[ROWS], slack[ROWS], spread[ROWS], level[ROWS], spent[ROWS];
        real qrows[ROWS][DIMS], base[ROWS];
        vreal rc[ROWS][DIMS], rs[ROWS][DIMS], ry[ROWS][VALUES];
        vreal sums[ROWS][MAX_TERMS], weighted[ROWS][MAX_RESPONSES];
        vint over[ROWS];
        query_rows(qrows, q, i0, rows);
        own_keys(row_own, own, i0, rows);
        if (pruning) block_start(&far, qrows, lift, slack); /* the rows' box: any chunk order */
        for (int r = 0; r < ROWS; r++) {
            ptrdiff_t i = i0 + (r < rows ? r : rows - 1), k = ref[i] >= 0 ? ref[i] : 0;
            base[r] = ref[i] >= 0 && isfinite(shift[i]) ? (real)shift[i] : (real)0;
            spread[r] = 0;
            row_stretch[r] = 0;
            for (int c = 0; c < DIMS; c++) {
                double at = kt[c * m_pad + k] + centre[i * DIMS + c];
                double gap = at - qrows[r][c] / (MATMUL ? LOG2E : 1.0);
                rc[r][c] = splat((real)at);
                rs[r][c] = splat((real)stretch[i * DIMS + c]);
                spread[r] += gap * gap;
                double s2 = stretch[i * DIMS + c] * stretch[i * DIMS + c];
                row_stretch[r] = s2 > row_stretch[r] ? s2 : row_stretch[r];
            }
            for (int c = 0; c < VALUES; c++) ry[r][c] = splat(vt[c * m_pad + k]);
            level[r] = base[r] - EPSILON * fabs(base[r]); /* the sum is at least 1 */
            spent[r] = 0;
            over[r] = (vint){0};
            for (ptrdiff_t g = 0; g < terms; g++) sums[r][g] = splat(0);
            for (ptrdiff_t g = 0; g < basis * VALUES; g++) weighted[r][g] = splat(0);
        }
        for (ptrdiff_t chunk = 0; chunk < chunks; chunk++) {
            ptrdiff_t at[CHUNK / LANES];
            int skip[BOXES] = {0};
            if (pruning && skip_boxes(&far, chunk, lift, slack, level, spent, spread, skip)) continue;
            int count = chunk_vectors(skip, chunk * CHUNK, at);
            vreal w[CHUNK / LANES][ROWS];
            chunk_weights(w, qrows, base, kt, m_pad, m, row_own, at, count, over);
            for (int r = 0; r < rows && count; r++) {
                for (int i = 0; i < count; i++) {
                    vreal z[DIMS], term[MAX_TERMS];
                    term[0] = blend(w[i][r] > floor_weight, w[i][r], splat(0));
                    for (int c = 0; c < DIMS; c++)
                        z[c] = (load(kt + c * m_pad + at[i]) - rc[r][c]) * rs[r][c];
                    for (ptrdiff_t g = 1; g < terms; g++) term[g] = term[parent[g]] * z[axis[g]];
                    for (ptrdiff_t g = 0; g < terms; g++) sums[r][g] += term[g];
                    for (int c = 0; c < VALUES; c++) {
                        vreal y = load(vt + c * m_pad + at[i]) - ry[r][c];
                        for (ptrdiff_t g = 0; g < basis; g++) weighted[r][c * basis + g] += term[g] * y;
                    }
                }
            }
        }
        for (int r = 0; r < rows; r++) {
            int row_over = 0, empty = ref[i0 + r] < 0;
            for (int l = 0; l < LANES; l++) row_over |= over[r][l] != 0;
            for (ptrdiff_t g = 0; g < terms; g++)
                powers[(i0 + r) * terms + g] = empty ? 0.0 : row_over ? NAN : total(sums[r][g]);
            for (ptrdiff_t g = 0; g < basis * VALUES; g++)
                responses[(i0 + r) * basis * VALUES + g] = empty ? 0.0 : total(weighted[r][g]);
        }
    }
    free(far.chunk_lo);
    return 0;
}
#endif
