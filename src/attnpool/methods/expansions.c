/* Host loops of the one- and two-dimensional methods, in float64.

   Compiled with native.c's flags for each instruction set, with no variants:
   everything here is float64, any width.

   fgt (methods/fgt.py): the Taylor coefficients of boxes of keys, and their sums at
   queries. Box b holds keys with centre c_b = origin + (b + 1/2) width; for a key k
   in it, t = k - c_b, and for a query u, s = u - c_b:

       A_j(b) = sum_k F_k exp(-t^2/2) t^j / j!,
       sum over the window's boxes of exp(-(s^2 - r^2)/2) sum_j A_j(b) s^j

   (r^2: the query's squared distance to its nearest key, a factor that keeps the sum
   in range). The table is (order * f, columns), row j*f + c, so a query's window of
   boxes is contiguous; queries run one a vector lane, their Horner steps side by side.

   binned (methods/binned.py): linear binning of points onto a regular grid, each
   point's features split between the 2^d corners of its cell; and (binned_taylor.py)
   each point's moments about its nearest node. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef ptrdiff_t isize;

#include "portable.h"
#include "vector_width.h"

#define LANES (VECTOR_BYTES / (int)sizeof(double))
typedef double vector __attribute__((vector_size(VECTOR_BYTES)));

typedef long long lanes_int __attribute__((vector_size(VECTOR_BYTES)));

static inline vector load(const double *from)
{
    vector v;
    memcpy(&v, from, sizeof v);
    return v;
}

/* where: a lane of `when` (a comparison's -1 or 0) picks `yes`, else `no` */
static inline vector pick(lanes_int when, vector yes, vector no)
{
    return (vector)((when & (lanes_int)yes) | (~when & (lanes_int)no));
}

static inline double lane_sum(vector v) /* pairwise, as a tree of shuffles */
{
    double a[LANES];
    memcpy(a, &v, sizeof v);
    for (int half = LANES / 2; half >= 1; half /= 2)
        for (int lane = 0; lane < half; lane++)
            a[lane] += a[lane + half];
    return a[0];
}

/* e^x by lane, within a few roundings: x = k ln 2 + r with ln 2 in two parts (Cody and
   Waite; k ln2_hi exact), |r| <= ln 2 / 2, e^r by its Taylor series to degree 13
   (remainder below 4e-18), and k added to the exponent. x is first clamped to
   [-708, 709], where 2^k stays normal: below, the result is e^-708 (3e-308), nothing
   beside the weights these loops sum. NaN stays NaN. */
static inline vector exp_lanes(vector x)
{
    const double magic = 6755399441055744.0; /* 1.5 * 2^52: adding it rounds to integers */
    const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
    vector low = (vector){0.0} - 708.0, high = (vector){0.0} + 709.0;
    vector clamped = pick(x < low, low, pick(x > high, high, x));
    vector shifted = clamped * 1.44269504088896338700 + magic;
    vector k = shifted - magic;
    vector r = (clamped - k * ln2_hi) - k * ln2_lo;
    vector p = (vector){0.0} + 1.0 / 6227020800.0; /* 1/13! */
    static const double taylor[] = {1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0,
                                    1.0 / 362880.0, 1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0,
                                    1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0};
    for (int j = 0; j < (int)(sizeof taylor / sizeof taylor[0]); j++)
        p = p * r + taylor[j];
    lanes_int exponent = ((lanes_int)shifted - (lanes_int)((vector){0.0} + magic)) << 52;
    return pick(x == x, (vector)((lanes_int)p + exponent), x);
}

/* Largest window of boxes a query sums, and coefficients a box holds (fgt.py keeps to
   fewer). The fgt functions return 0, or 1 where they did nothing (beyond these, or no
   memory). */
#define MAX_WINDOW 512
#define MAX_TERMS 1024

EXPORT int fgt_coefficients(const double *keys, const double *features, const long long *box,
                      isize m, isize f, double origin, double width, isize order,
                      isize pad, isize columns, double *table)
{
    isize terms = order * f;
    if (terms > MAX_TERMS)
        return 1;
    /* on the heap: a caller's thread may have a small stack (musl gives 128 KiB) */
    vector *own = aligned_allocate(sizeof(vector), (size_t)(terms + f) * sizeof(vector));
    vector *feature = own + terms; /* own: the current box's coefficients, j-major */
    double inverse[MAX_TERMS + 1]; /* 1 / ((j + 1)(j + 2)) */
    if (!own)
        return 1;
    for (isize j = 0; j <= order; j++)
        inverse[j] = 1.0 / ((double)(j + 1) * (double)(j + 2));
    for (isize i = 0; i < m;) { /* keys sorted: a box's keys are consecutive */
        isize end = i;
        while (end < m && box[end] == box[i])
            end++;
        double centre = origin + ((double)box[i] + 0.5) * width;
        for (isize r = 0; r < terms; r++)
            own[r] = (vector){0.0};
        for (isize first = i; first < end; first += LANES) {
            vector t, inside;
            for (isize lane = 0; lane < LANES; lane++) {
                isize key = first + lane < end ? first + lane : first;
                t[lane] = keys[key] - centre;
                inside[lane] = first + lane < end ? 1.0 : 0.0;
                for (isize c = 0; c < f; c++)
                    feature[c][lane] = features ? features[key * f + c] : 1.0;
            }
            /* t^j / j! in two chains, even and odd j, each a step of t^2 / ((j+1)(j+2)):
               half the latency of one chain of t / (j+1) */
            vector even = exp_lanes(-0.5 * t * t) * inside, odd = even * t, square = t * t;
            for (isize j = 0; j < order; j += 2) {
                for (isize c = 0; c < f; c++)
                    own[j * f + c] += even * feature[c];
                if (j + 1 < order)
                    for (isize c = 0; c < f; c++)
                        own[(j + 1) * f + c] += odd * feature[c];
                even *= square * inverse[j];
                odd *= square * inverse[j + 1];
            }
        }
        for (isize r = 0; r < terms; r++)
            table[r * columns + box[i] + pad] += lane_sum(own[r]);
        i = end;
    }
    aligned_free(own);
    return 0;
}

/* Queries run one a lane, LANES at a time, with those of boxes up to SPREAD apart
   together: the group's columns span their windows, a lane's factors 0 outside its own.
   A column's coefficients are broadcast to the lanes; COLUMNS columns' Horner chains run
   side by side in registers. */
#define SPREAD 4
#define COLUMNS 8
/* Columns from which a lane's Gaussian factor is computed afresh, between them by ratios:
   exp(-(s_{c+1}^2 - r^2)/2) = exp(-(s_c^2 - r^2)/2) exp(width s_c - width^2/2), and that
   ratio's own ratio exp(-width^2) = step; at most ANCHOR - 1 steps, two roundings each. */
#define ANCHOR 8

/* out (n, f): each query's sums over the window of 2*half + 1 boxes around its own
   (box floor(u / width); its window's first column is box + half + 1). A query whose
   window is not inside the table gets NaN (the caller sums it otherwise). */
EXPORT int fgt_evaluate(const double *u, const double *nearest2, isize n, const double *table,
                  isize columns, isize f, double width, isize half, isize order,
                  double *out)
{
    isize window = 2 * half + 1, stride = f * columns;
    double step = exp(-width * width);
    if (window + SPREAD > MAX_WINDOW)
        return 1;
    /* on the heap: a caller's thread may have a small stack (musl gives 128 KiB) */
    isize most = MAX_WINDOW + COLUMNS;
    vector *offset = aligned_allocate(sizeof(vector), 2 * (size_t)most * sizeof(vector));
    vector *factor = offset + most;
    if (!offset)
        return 1;
    for (isize i = 0; i < n;) {
        isize own = (isize)floor(u[i] / width), first = own + half + 1;
        if (first < 0 || first + window > columns) {
            for (isize c = 0; c < f; c++)
                out[i * f + c] = NAN;
            i += 1;
            continue;
        }
        isize count = 1, span = window;
        while (count < LANES && i + count < n) {
            isize apart = (isize)floor(u[i + count] / width) - own;
            if (apart < 0 || apart > SPREAD || first + window + apart > columns)
                break;
            span = window + apart > span ? window + apart : span;
            count++;
        }
        vector at, r2, low;
        for (isize lane = 0; lane < LANES; lane++) {
            isize row = i + (lane < count ? lane : 0);
            at[lane] = u[row];
            r2[lane] = nearest2[row];
            low[lane] = floor(u[row] / width) - (double)own;
        }
        for (isize c = 0; c < span; c += ANCHOR) { /* each anchor's chain in registers */
            vector at_anchor = at - ((double)(own - half + c) + 0.5) * width;
            vector gauss = exp_lanes(-0.5 * (at_anchor * at_anchor - r2));
            vector ratio = exp_lanes(width * at_anchor - 0.5 * width * width);
            for (isize k = c; k < c + ANCHOR && k < span; k++) {
                offset[k] = at - ((double)(own - half + k) + 0.5) * width;
                lanes_int inside = ((double)k >= low) & ((double)k < low + (double)window);
                factor[k] = pick(inside, gauss, (vector){0.0});
                gauss *= ratio;
                ratio *= step;
            }
        }
        for (isize c = span; c < span + COLUMNS; c++) { /* the last block's spare columns */
            offset[c] = offset[span - 1];
            factor[c] = (vector){0.0};
        }
        for (isize feature = 0; feature < f; feature++) {
            const double *row = table + feature * columns + first;
            vector total = {0.0};
            for (isize c = 0; c < span; c += COLUMNS) {
                isize column[COLUMNS]; /* the spare ones read the last column, times 0 */
                vector sums[COLUMNS];
                for (isize k = 0; k < COLUMNS; k++) {
                    column[k] = c + k < span ? c + k : span - 1;
                    sums[k] = (vector){0.0} + row[(order - 1) * stride + column[k]];
                }
                for (isize j = order - 2; j >= 0; j--)
                    for (isize k = 0; k < COLUMNS; k++)
                        sums[k] = sums[k] * offset[c + k] + row[j * stride + column[k]];
                for (isize k = 0; k < COLUMNS; k++)
                    total += sums[k] * factor[c + k];
            }
            for (isize lane = 0; lane < count; lane++)
                out[(i + lane) * f + feature] = total[lane];
        }
        i += count;
    }
    aligned_free(offset);
    return 0;
}

/* A sorted sample's leave-one-out log weights (fgt.py's leave_one_out_log_weights): for
   the points c (n, ascending) times scale, out_i = log sum_{j != i} exp(-(p_i - p_j)^2/2)
   with p = c scale. The expansions' weights over all points (boxes of `width`, `half` a
   side, Taylor `order`; keys, and features, the points' ones) less each point's own term
   1; where that rest is below min_weight (its error relative to the weight with the own
   term would show) or not a number (a window off the table), pair by pair over the
   points within sqrt(r^2 + reach2) (r: the distance to its nearest other, a neighbour in
   the order; the rest weigh less than the tolerance reach2 = 2 log(n / tolerance) was
   made for), shifted by that nearest term. Returns 0, or 1 where it did nothing. */
EXPORT int fgt_leave_one_out(const double *c, isize n, double scale, double width, isize half,
                      isize order, double min_weight, double reach2, double *out)
{
    if (n < 2) {
        for (isize i = 0; i < n; i++)
            out[i] = -INFINITY;
        return 0;
    }
    double *p = malloc(3 * (size_t)n * sizeof(double));
    long long *box = malloc((size_t)n * sizeof(long long));
    if (!p || !box) {
        free(p);
        free(box);
        return 1;
    }
    double *u = p + n, *zero = p + 2 * n;
    for (isize i = 0; i < n; i++) {
        p[i] = c[i] * scale;
        u[i] = p[i] - p[0];
        box[i] = (long long)floor(u[i] / width);
        zero[i] = 0.0;
    }
    isize pad = 2 * half + 1, columns = (isize)box[n - 1] + 1 + 2 * pad;
    double *table = calloc((size_t)(order * columns), sizeof(double));
    int failed = !table ||
                 fgt_coefficients(p, NULL, box, n, 1, p[0], width, order, pad, columns, table) ||
                 fgt_evaluate(u, zero, n, table, columns, 1, width, half, order, out);
    free(table);
    free(box);
    for (isize i = 0; i < n && !failed; i++) {
        double rest = out[i] - 1.0;
        if (rest >= min_weight) {
            out[i] = log(rest);
            continue;
        }
        double left = i > 0 ? (c[i] - c[i - 1]) * scale : INFINITY;
        double right = i < n - 1 ? (c[i + 1] - c[i]) * scale : INFINITY;
        double r2 = left < right ? left * left : right * right, sum = 0.0;
        for (isize j = i - 1; j >= 0; j--) {
            double d = (c[i] - c[j]) * scale;
            if (d * d > r2 + reach2)
                break;
            sum += exp(-0.5 * (d * d - r2));
        }
        for (isize j = i + 1; j < n; j++) {
            double d = (c[j] - c[i]) * scale;
            if (d * d > r2 + reach2)
                break;
            sum += exp(-0.5 * (d * d - r2));
        }
        out[i] = log(sum) - 0.5 * r2;
    }
    free(p);
    return failed;
}

/* Linear binning (binned.py's): point i's node coordinates p_j = (x_ij scale_j -
   start_j) / spacing_j (times the reciprocal: a rounding apart), d = 1 or 2 columns; its
   cell's lowest corner l_j = floor(p_j) clipped to [0, size_j - 2], f_j = p_j - l_j, and
   features (n, nf) (NULL: a single 1) added to the 2^d corners with weights
   prod_j (f_j or 1 - f_j), into grid (nodes, width), nodes in row-major order. moments:
   also each feature times a_j b_j = f_j (1 - f_j) spacing_j^2 (the point's place in its
   cell, binned_gaussian.py's weights), column k nf + c for dimension k - 1 (width
   nf (1 + d); else nf). cells (n,), unless NULL: each point's lowest corner, flat. */
EXPORT void linear_bin(const double *points, isize n, isize d, const double *scale,
                const double *start, const double *spacing, const long long *size,
                const double *features, isize nf, double *grid, long long *cells,
                isize moments)
{
    double inverse[2] = {1.0 / spacing[0], d == 2 ? 1.0 / spacing[1] : 1.0};
    if (d == 1 && !features) { /* counts in one column, without branches */
        double last = (double)(size[0] - 2), square = spacing[0] * spacing[0];
        isize width = moments ? 2 : 1;
        for (isize i = 0; i < n; i++) {
            double at = (points[i] * scale[0] - start[0]) * inverse[0];
            double left = floor(at);
            left = left < 0.0 ? 0.0 : left > last ? last : left;
            double fraction = at - left;
            isize flat = (isize)left;
            grid[flat * width] += 1.0 - fraction;
            grid[(flat + 1) * width] += fraction;
            if (moments) {
                double place = fraction * (1.0 - fraction) * square;
                grid[flat * 2 + 1] += (1.0 - fraction) * place;
                grid[flat * 2 + 3] += fraction * place;
            }
            if (cells)
                cells[i] = flat;
        }
        return;
    }
    isize width = moments ? nf * (1 + d) : nf, parts = moments ? 1 + d : 1;
    for (isize i = 0; i < n; i++) {
        isize flat = 0, stride = d == 2 ? (isize)size[1] : 1;
        double fraction[2] = {0.0, 0.0}, place[3] = {1.0, 0.0, 0.0};
        for (isize j = 0; j < d; j++) {
            double at = (points[i * d + j] * scale[j] - start[j]) * inverse[j];
            double left = floor(at);
            left = left < 0.0 ? 0.0 : left;
            left = left > (double)(size[j] - 2) ? (double)(size[j] - 2) : left;
            fraction[j] = at - left;
            place[1 + j] = fraction[j] * (1.0 - fraction[j]) * spacing[j] * spacing[j];
            flat = flat * (j == 1 ? (isize)size[1] : 1) + (isize)left;
        }
        if (cells)
            cells[i] = flat;
        for (isize c = 0; c < nf; c++) {
            double feature = features ? features[i * nf + c] : 1.0;
            for (isize k = 0; k < parts; k++) {
                isize column = k * nf + c;
                double low = (1.0 - fraction[0]) * feature * place[k];
                double high = fraction[0] * feature * place[k];
                if (d == 1) {
                    grid[flat * width + column] += low;
                    grid[(flat + 1) * width + column] += high;
                } else {
                    grid[flat * width + column] += low * (1.0 - fraction[1]);
                    grid[(flat + 1) * width + column] += low * fraction[1];
                    grid[(flat + stride) * width + column] += high * (1.0 - fraction[1]);
                    grid[(flat + stride + 1) * width + column] += high * fraction[1];
                }
            }
        }
    }
}

/* Adds a key's moments `s^a t^b` (a + b <= order) about its node to the node's `row`,
   then the remainder's `|s^a t^(order+1-a)|`. Inlined for each order the plans take:
   the loops unrolled, the powers kept in registers. */
static inline __attribute__((always_inline)) void pair_moments(double s, double t, isize order,
                                                               double *row)
{
    double power[2][16 + 2];
    power[0][0] = power[1][0] = 1.0;
    for (isize k = 1; k <= order + 1; k++) {
        power[0][k] = power[0][k - 1] * s;
        power[1][k] = power[1][k - 1] * t;
    }
    for (isize a = 0; a <= order; a++)
        for (isize b = 0; b <= order - a; b++)
            *row++ += power[0][a] * power[1][b];
    for (isize a = 0; a <= order + 1; a++)
        row[a] += fabs(power[0][a] * power[1][order + 1 - a]);
}

/* Taylor binning (binned_taylor.py's): point i's node coordinates p_j as linear_bin's,
   its nearest node c_j = floor(p_j + 1/2) clipped to [0, size_j - 1] and t_j = p_j - c_j
   (within 1/2 where the grid covers the point). Added at node c, row-major, d = 1 or 2:
   the moments F t^a (d = 1) or F t_0^a t_1^b (d = 2, a + b <= order, a-major), column
   k nf + c for moment k and feature c (NULL features: a single 1); then the remainder's
   weights |t|^(order+1), or |t_0|^a |t_1|^b for a = 0 ... order + 1, b = order + 1 - a,
   unweighted. Width: nf (order + 1) + 1, or nf (order + 1)(order + 2)/2 + order + 2.
   cells (n,), unless NULL: each point's node, flat. band (3,), unless NULL (one column of
   counts only): the indices of the points at most band[0] or at least band[1] go to
   beside, at most band[2] of them, their number to *besides (-1 where they were not
   sought, or were more: the memory written stays small whatever the data). */
EXPORT void taylor_bin(const double *points, isize n, isize d, const double *scale,
                const double *start, const double *spacing, const long long *size,
                const double *features, isize nf, isize order, double *grid,
                int *cells, const double *band, long long *beside, long long *besides)
{
    if (band)
        *besides = -1;
    enum { MAX_ORDER = 15 };
    if (order > MAX_ORDER)
        return;
    isize moments = d == 1 ? order + 1 : (order + 1) * (order + 2) / 2;
    isize width = nf * moments + (d == 1 ? 1 : order + 2);
    double inverse[2] = {1.0 / spacing[0], d == 2 ? 1.0 / spacing[1] : 1.0};
    if (d == 1 && !features) { /* counts in one column: the common case, kept simple */
        double last = (double)(size[0] - 1), origin = start[0], ratio = scale[0] * inverse[0];
        double shift = origin * inverse[0] - 0.5;
        enum { BLOCK = 256 }; /* the places in vectors, then the sums point by point */
        double offset[BLOCK], below = band ? band[0] : -INFINITY, above = band ? band[1] : INFINITY;
        isize nodes[BLOCK];
        long long found = 0, most = band ? (long long)band[2] : 0;
        for (isize i0 = 0; i0 < n; i0 += BLOCK) {
            isize count = n - i0 < BLOCK ? n - i0 : BLOCK;
            for (isize i = 0; i < count; i++) {
                double x = points[i0 + i], at = x * ratio - shift, node = floor(at);
                node = node < 0.0 ? 0.0 : node > last ? last : node;
                offset[i] = at - node - 0.5;
                nodes[i] = (isize)node;
                if ((x <= below || x >= above) && found++ < most)
                    beside[found - 1] = i0 + i;
            }
            for (isize i = 0; i < count; i++) {
                double t = offset[i], power = 1.0, *row = grid + nodes[i] * width;
                for (isize a = 0; a <= order; a++, power *= t)
                    row[a] += power;
                row[order + 1] += fabs(power);
            }
            if (cells)
                for (isize i = 0; i < count; i++)
                    cells[i0 + i] = (int)nodes[i];
        }
        if (band)
            *besides = found <= most ? found : -1;
        return;
    }
    if (d == 2 && !features) {
        double last[2] = {(double)(size[0] - 1), (double)(size[1] - 1)}, ratio[2], shift[2];
        for (int j = 0; j < 2; j++) {
            ratio[j] = scale[j] * inverse[j];
            shift[j] = start[j] * inverse[j] - 0.5;
        }
        isize stride = (isize)size[1];
        /* the places in vectors a block at a time; then each key's row, fetched ahead
           (the rows are scattered over a grid larger than the caches) */
        enum { BLOCK = 256, AHEAD = 8 };
        double offsets[2][BLOCK];
        isize flats[BLOCK];
        for (isize i0 = 0; i0 < n; i0 += BLOCK) {
            isize count = n - i0 < BLOCK ? n - i0 : BLOCK;
            for (isize i = 0; i < count; i++) {
                double node[2];
                for (int j = 0; j < 2; j++) {
                    double at = points[2 * (i0 + i) + j] * ratio[j] - shift[j];
                    node[j] = floor(at);
                    node[j] = node[j] < 0.0 ? 0.0 : node[j] > last[j] ? last[j] : node[j];
                    offsets[j][i] = at - node[j] - 0.5;
                }
                flats[i] = (isize)node[0] * stride + (isize)node[1];
            }
            for (isize i = 0; i < count; i++) {
                if (i + AHEAD < count) {
                    const char *next = (const char *)(grid + flats[i + AHEAD] * width);
                    for (isize line = 0; line < width * 8; line += 64)
                        __builtin_prefetch(next + line, 1);
                    __builtin_prefetch(next + width * 8 - 1, 1);
                }
                double *row = grid + flats[i] * width, s = offsets[0][i], t = offsets[1][i];
                switch (order) { /* the loops unrolled for the orders the plans take */
                case 1: pair_moments(s, t, 1, row); break;
                case 2: pair_moments(s, t, 2, row); break;
                case 3: pair_moments(s, t, 3, row); break;
                case 4: pair_moments(s, t, 4, row); break;
                case 5: pair_moments(s, t, 5, row); break;
                case 6: pair_moments(s, t, 6, row); break;
                case 7: pair_moments(s, t, 7, row); break;
                case 8: pair_moments(s, t, 8, row); break;
                default: pair_moments(s, t, order, row);
                }
            }
            if (cells)
                for (isize i = 0; i < count; i++)
                    cells[i0 + i] = (int)flats[i];
        }
        return;
    }
    for (isize i = 0; i < n; i++) {
        double power[2][MAX_ORDER + 2], size_of[2] = {0.0, 0.0};
        isize flat = 0;
        for (isize j = 0; j < d; j++) {
            double at = (points[i * d + j] * scale[j] - start[j]) * inverse[j];
            double node = floor(at + 0.5);
            node = node < 0.0 ? 0.0 : node;
            node = node > (double)(size[j] - 1) ? (double)(size[j] - 1) : node;
            double t = at - node;
            power[j][0] = 1.0;
            for (isize k = 1; k <= order + 1; k++)
                power[j][k] = power[j][k - 1] * t;
            size_of[j] = fabs(t);
            flat = flat * (j == 1 ? (isize)size[1] : 1) + (isize)node;
        }
        if (cells)
            cells[i] = (int)flat;
        double *row = grid + flat * width;
        for (isize c = 0; c < nf; c++) {
            double feature = features ? features[i * nf + c] : 1.0;
            isize k = 0;
            if (d == 1) {
                for (isize a = 0; a <= order; a++, k++)
                    row[k * nf + c] += feature * power[0][a];
            } else {
                for (isize a = 0; a <= order; a++) {
                    double first = feature * power[0][a];
                    for (isize b = 0; a + b <= order; b++, k++)
                        row[k * nf + c] += first * power[1][b];
                }
            }
        }
        double *rest = row + nf * moments, top = fabs(power[0][order + 1]);
        if (d == 1) {
            rest[0] += top;
            continue;
        }
        double first = 1.0;
        for (isize a = 0; a <= order + 1; a++) {
            rest[a] += first * fabs(power[1][order + 1 - a]);
            first *= size_of[0];
        }
    }
}

/* The k-d locality order of points (n, d) (locality.py's): each segment of more than
   leaf rows split along its widest column at leaf * (ceil(rows / leaf) / 2) rows, the
   nearer half first, down to runs of leaf; order (n,) is written with the permutation.
   The rows of work (n, d), a copy of the points, move with their indices, so that
   every pass reads memory in order. The splits are selections in three-way partitions
   about pseudo-random pivots: ties (a column of equal values) cost no more than
   distinct values. */
static unsigned long long next_random(unsigned long long *state)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return *state >> 33;
}

static inline void swap_rows(double *work, long long *order, isize d, isize a, isize b)
{
    long long row = order[a];
    order[a] = order[b];
    order[b] = row;
    for (isize j = 0; j < d; j++) {
        double x = work[a * d + j];
        work[a * d + j] = work[b * d + j];
        work[b * d + j] = x;
    }
}

static void select_rows(double *work, long long *order, isize d, isize axis, isize start,
                        isize stop, isize nth, unsigned long long *state)
{
    while (stop - start > 1) {
        isize span = stop - start;
        isize chosen = start + (isize)(next_random(state) % (unsigned long long)span);
        double pivot = work[chosen * d + axis];
        isize below = start, at = start, above = stop; /* [start, below) <, [below, at) == */
        while (at < above) {
            double x = work[at * d + axis];
            if (x < pivot) {
                swap_rows(work, order, d, at, below);
                below++;
                at++;
            } else if (x > pivot) {
                above--;
                swap_rows(work, order, d, at, above);
            } else {
                at++;
            }
        }
        if (nth < below)
            stop = below;
        else if (nth >= above)
            start = above;
        else
            return; /* the nth row is among the pivot's equals */
    }
}

EXPORT void locality_order(double *work, isize n, isize d, isize leaf, long long *order)
{
    enum { DEPTH = 128 };
    isize stack[DEPTH][2], top = 0;
    unsigned long long state = 0x9E3779B97F4A7C15ULL;
    for (isize i = 0; i < n; i++)
        order[i] = i;
    stack[top][0] = 0;
    stack[top][1] = n;
    top++;
    while (top > 0) {
        top--;
        isize start = stack[top][0], stop = stack[top][1];
        if (stop - start <= leaf)
            continue;
        double low[64], high[64];
        isize columns = d < 64 ? d : 64, axis = 0;
        for (isize j = 0; j < columns; j++) {
            low[j] = INFINITY;
            high[j] = -INFINITY;
        }
        for (isize i = start; i < stop; i++)
            for (isize j = 0; j < columns; j++) {
                double x = work[i * d + j];
                low[j] = x < low[j] ? x : low[j];
                high[j] = x > high[j] ? x : high[j];
            }
        double widest = -1.0;
        for (isize j = 0; j < columns; j++)
            if (high[j] - low[j] > widest) {
                widest = high[j] - low[j];
                axis = j;
            }
        isize half = leaf * (((stop - start) + leaf - 1) / leaf / 2);
        select_rows(work, order, d, axis, start, stop, start + half, &state);
        if (top + 2 > DEPTH)
            return; /* cannot happen: the halves shrink geometrically */
        stack[top][0] = start + half;
        stack[top][1] = stop;
        top++;
        stack[top][0] = start;
        stack[top][1] = start + half;
        top++;
    }
}

/* The Gaussian's log sums, log sum_j e^(-|r - x_j|^2 / 2), of k rows (scaled, two
   columns) over the keys within reach[r] of each. The keys (scaled, two columns) are
   sorted by cell on a grid of shape[0] x shape[1] cells, cell i's from offsets[i] to
   offsets[i + 1]; a key of cell (c0, c1) lies within slack[j] of origin[j] + c_j width[j]
   to origin[j] + (c_j + 1) width[j] along each column j. A row visits the rows of cells
   within its reach and, on each, the cells that may hold a key on its chord (their
   keys contiguous). The squared distances within reach are gathered, then summed
   relative to the least, by lanes, so that nothing overflows or underflows however
   far the row: exact to rounding; -inf where no key is within reach. */
EXPORT void box_gaussian_log_sums(const double *rows, isize k, const double *keys,
                           const long long *offsets, const long long *shape,
                           const double *origin, const double *width, const double *slack,
                           const double *reach, double *out)
{
    double inverse[2] = {1.0 / width[0], 1.0 / width[1]};
    double *gathered = malloc(((size_t)offsets[shape[0] * shape[1]] + LANES) * sizeof(double));
    if (!gathered) {
        for (isize r = 0; r < k; r++)
            out[r] = NAN;
        return;
    }
    for (isize r = 0; r < k; r++) {
        double q[2] = {rows[2 * r], rows[2 * r + 1]}, radius = reach[r];
        double limit = radius * radius, least = INFINITY;
        isize count = 0;
        long long span[2][2];
        for (int j = 0; j < 2; j++) { /* the cells within a cell of the row's box */
            double low = (q[j] - radius - slack[j] - origin[j]) * inverse[j];
            double high = (q[j] + radius + slack[j] - origin[j]) * inverse[j];
            low = low < -1.0 ? -1.0 : low > (double)shape[j] ? (double)shape[j] : low;
            high = high < -1.0 ? -1.0 : high > (double)shape[j] ? (double)shape[j] : high;
            span[j][0] = (long long)low - 1;
            span[j][1] = (long long)high + 2;
            span[j][0] = span[j][0] > 0 ? span[j][0] : 0;
            span[j][1] = span[j][1] < shape[j] ? span[j][1] : shape[j];
        }
        for (long long i = span[0][0]; i < span[0][1]; i++) {
            double below = origin[0] + (double)i * width[0] - slack[0] - q[0];
            double above = q[0] - origin[0] - (double)(i + 1) * width[0] - slack[0];
            double across = below > above ? below : above;
            across = across > 0.0 ? across : 0.0;
            if (across > radius)
                continue;
            /* the cells along the chord: as the box, from the chord's half-length (kept
               within the grid before it becomes an index) */
            double half = sqrt(limit - across * across) + slack[1];
            double low = (q[1] - half - origin[1]) * inverse[1];
            double high = (q[1] + half - origin[1]) * inverse[1];
            low = low < -1.0 ? -1.0 : low > (double)shape[1] ? (double)shape[1] : low;
            high = high < -1.0 ? -1.0 : high > (double)shape[1] ? (double)shape[1] : high;
            long long first = (long long)low - 2, last = (long long)high + 2;
            first = first > span[1][0] ? first : span[1][0];
            last = last < span[1][1] ? last : span[1][1];
            if (first >= last)
                continue;
            const long long *cells = offsets + i * shape[1];
            for (long long j = cells[first]; j < cells[last]; j++) {
                double a = keys[2 * j] - q[0], b = keys[2 * j + 1] - q[1];
                double squared = a * a + b * b;
                gathered[count] = squared;
                count += squared <= limit;
                least = squared < least ? squared : least;
            }
        }
        vector total = {0.0};
        for (isize j = count; j < count + LANES; j++)
            gathered[j] = INFINITY; /* e^-inf: the last lanes add nothing */
        for (isize j = 0; j < count; j += LANES)
            total += exp_lanes(((vector){0.0} + 0.5 * least) - 0.5 * load(gathered + j));
        double sum = lane_sum(total);
        out[r] = count ? log(sum) - 0.5 * least : -INFINITY;
    }
    free(gathered);
}

/* Sums of separable convolutions on a grid of size0 x size1 nodes, summed directly. Stage
   one, along the second axis: for each of `triples` (column c_t, group g_t, table T_t of
   2 w1 + 1 taps at offsets -w1..w1),
       G[g_t][i][j] += sum_v binned[i][j - v][c_t] T_t[v + w1];
   stage two, along the first axis: for each of `groups` (output o_g, table A_g of
   2 w0 + 1 taps),
       out[o_g][i][j] += sum_u G[g][i - u][j] A_g[u + w0],
   nodes beyond the grid empty. binned is node-major (width numbers a node); out holds
   `outputs` planes of size0 x size1. Each row of nodes is first laid out column by
   column, padded, so that the taps run along contiguous memory; a vector of outputs
   sums all its taps in registers before it is stored. Returns 0, or -1 where memory
   could not be had (out untouched). */
EXPORT int separable_direct(const double *binned, isize size0, isize size1, isize width,
                     isize triples, const long long *column, const long long *group,
                     const double *along1, isize w1, isize groups, const long long *output,
                     const double *along0, isize w0, isize outputs, double *out)
{
    isize plane = size0 * size1, taps1 = 2 * w1 + 1, taps0 = 2 * w0 + 1, padded = size1 + 2 * w1;
    double *staged = calloc((size_t)(groups * plane), sizeof(double));
    double *row = calloc((size_t)(width * padded), sizeof(double));
    if (!staged || !row) {
        free(staged);
        free(row);
        return -1;
    }
    for (isize i = 0; i < size0; i++) {
        const double *nodes = binned + i * size1 * width;
        for (isize c = 0; c < width; c++)
            for (isize j = 0; j < size1; j++)
                row[c * padded + w1 + j] = nodes[j * width + c];
        for (isize t = 0; t < triples; t++) {
            const double *x = row + column[t] * padded + w1, *table = along1 + t * taps1;
            double *into = staged + group[t] * plane + i * size1;
            isize j = 0;
            for (; j + LANES <= size1; j += LANES) { /* the taps summed in registers */
                vector sum = {0.0};
                for (isize v = -w1; v <= w1; v++)
                    sum += table[v + w1] * load(x + j - v);
                sum += load(into + j);
                memcpy(into + j, &sum, sizeof sum);
            }
            for (; j < size1; j++)
                for (isize v = -w1; v <= w1; v++)
                    into[j] += table[v + w1] * x[j - v];
        }
    }
    memset(out, 0, (size_t)(outputs * plane) * sizeof(double));
    for (isize g = 0; g < groups; g++) {
        const double *table = along0 + g * taps0, *from = staged + g * plane;
        for (isize i = 0; i < size0; i++) {
            double *into = out + output[g] * plane + i * size1;
            isize low = i - w0 > 0 ? i - w0 : 0, high = i + w0 < size0 - 1 ? i + w0 : size0 - 1;
            isize j = 0;
            for (; j + LANES <= size1; j += LANES) { /* rows k = i - u, in registers */
                vector sum = {0.0};
                for (isize k = low; k <= high; k++)
                    sum += table[i - k + w0] * load(from + k * size1 + j);
                sum += load(into + j);
                memcpy(into + j, &sum, sizeof sum);
            }
            for (; j < size1; j++)
                for (isize k = low; k <= high; k++)
                    into[j] += table[i - k + w0] * from[k * size1 + j];
        }
    }
    free(staged);
    free(row);
    return 0;
}

/* The Gaussian's reach of k rows (scaled, two columns) on a grid (start, spacing, size)
   whose blocks of `factor` nodes a side (shape[0] x shape[1]) each name a near occupied
   block (source, flat; -1 where none is): a row's nearest key is at most `within`
   beyond the centre of the block its nearest node's block names, so its sum is at least
   e^(-r^2/2), and at least least[r] where that is positive (least may be NULL); keys
   beyond reach[r], R^2 = min(r^2, -2 ln least) + spread, weigh at most the tolerance
   `spread` stands for (spread = 2 ln(m / tolerance)). The blocks holding a node within
   reach of a row, with a node of slack (a key is within a spacing of its node), are
   marked in covered (shape[0] x shape[1], zeroed by the caller). Returns 0, or -1
   without memory. */
EXPORT int gaussian_reach(const double *rows, isize k, const long long *source, const long long *shape,
                   isize factor, const double *start, const double *spacing,
                   const long long *size, const double *least, double spread, double within,
                   double *reach, unsigned char *covered)
{
    isize wide = shape[1] + 1;
    int *marks = calloc((size_t)((shape[0] + 1) * wide), sizeof(int));
    if (!marks)
        return -1;
    for (isize r = 0; r < k; r++) {
        const double *q = rows + 2 * r;
        isize block[2], box[2][2];
        for (int j = 0; j < 2; j++) {
            double node = floor((q[j] - start[j]) / spacing[j] + 0.5);
            node = node < 0.0 ? 0.0 : node > (double)(size[j] - 1) ? (double)(size[j] - 1) : node;
            block[j] = (isize)node / factor;
        }
        long long found = source[block[0] * shape[1] + block[1]];
        double nearest2 = INFINITY;
        if (found >= 0) {
            double gap = 0.0, centre[2] = {(double)(found / shape[1]), (double)(found % shape[1])};
            for (int j = 0; j < 2; j++) {
                double at = (centre[j] * (double)factor + 0.5 * (double)(factor - 1)) * spacing[j];
                gap += (at + start[j] - q[j]) * (at + start[j] - q[j]);
            }
            nearest2 = (sqrt(gap) + within) * (sqrt(gap) + within);
        }
        if (least && least[r] > 0.0 && -2.0 * log(least[r]) < nearest2)
            nearest2 = -2.0 * log(least[r]);
        double radius = sqrt(nearest2 + spread);
        reach[r] = radius;
        for (int j = 0; j < 2; j++) { /* nodes floor(..) - 1 to ceil(..) + 1, then blocks */
            double low = floor((q[j] - radius - start[j]) / spacing[j]) - 1.0;
            double high = ceil((q[j] + radius - start[j]) / spacing[j]) + 1.0;
            low = low < 0.0 ? 0.0 : low > (double)size[j] ? (double)size[j] : low;
            high = high < 0.0 ? 0.0 : high > (double)size[j] ? (double)size[j] : high;
            box[j][0] = (isize)low / factor;
            box[j][1] = ((isize)high + factor - 1) / factor;
        }
        if (box[0][0] >= box[0][1] || box[1][0] >= box[1][1])
            continue;
        marks[box[0][0] * wide + box[1][0]] += 1;
        marks[box[0][0] * wide + box[1][1]] -= 1;
        marks[box[0][1] * wide + box[1][0]] -= 1;
        marks[box[0][1] * wide + box[1][1]] += 1;
    }
    for (isize i = 0; i <= shape[0]; i++) /* the marks summed along both axes */
        for (isize j = 0; j <= shape[1]; j++) {
            int above = i ? marks[(i - 1) * wide + j] : 0, left = j ? marks[i * wide + j - 1] : 0;
            int corner = i && j ? marks[(i - 1) * wide + j - 1] : 0;
            marks[i * wide + j] += above + left - corner;
        }
    for (isize i = 0; i < shape[0]; i++)
        for (isize j = 0; j < shape[1]; j++)
            covered[i * shape[1] + j] = marks[i * wide + j] > 0;
    free(marks);
    return 0;
}

/* loess (smoothers/neighbour_sums.py): each query's keys within its radius, in d >= 2
   columns: the radius itself (the distance to the count-th nearest key), and the sums of a
   local polynomial fit over those keys.

   The keys come by column, each column `stride` numbers long (column t: keys[t * stride
   + j]), and lie in strips: sorted by their first coordinate, cut into runs of
   consecutive keys (strip s: rows start[s] .. start[s+1] - 1, first coordinates within
   [low[s], high[s]]), each run sorted by its second coordinate. A query's keys within r
   are among those of the strips that meet [q0 - r, q0 + r] whose second coordinate lies
   within the ball's chord at the strip's nearest first coordinate: a few ranges of
   consecutive rows, processed NEIGHBOUR_BATCH keys at a time as vectors. Every array
   indexed by key (columns, weights, values) holds NEIGHBOUR_BATCH finite numbers past
   its last key, so that a batch always reads whole vectors; keys past a range weigh 0. */

#define NEIGHBOUR_BATCH 64
#define BATCH_VECTORS (NEIGHBOUR_BATCH / LANES)
/* a key is inside a radius where |u| < 1 - 1e-12 (smoothers/local_polynomial.INSIDE):
   the farthest neighbour, on the radius, weighs nothing whatever the rounding */
#define INSIDE2 ((1.0 - 1e-12) * (1.0 - 1e-12))

struct strips {
    const double *keys;
    isize stride, d, count;
    const isize *start;
    const double *low, *high;
};

/* first row of [lo, hi) whose second coordinate is >= v (above: > v) */
static isize second_at_least(const double *second, isize lo, isize hi, double v, int above)
{
    while (lo < hi) {
        isize mid = lo + (hi - lo) / 2;
        if (above ? second[mid] <= v : second[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* the ranges of rows [lo, hi) that may hold keys within r of q, into ranges; how many */
static isize candidate_ranges(const struct strips *k, const double *q, double r, isize *ranges)
{
    double box = r * (1.0 + 1e-12);
    const double *second = k->keys + k->stride;
    isize got = 0, first = 0, past = k->count;
    while (first < past) { /* the first strip that reaches q0 - r (strips ascend) */
        isize mid = first + (past - first) / 2;
        if (k->high[mid] < q[0] - box)
            first = mid + 1;
        else
            past = mid;
    }
    for (isize s = first; s < k->count && k->low[s] <= q[0] + box; s++) {
        double gap = k->low[s] > q[0]    ? k->low[s] - q[0]
                     : q[0] > k->high[s] ? q[0] - k->high[s]
                                         : 0.0;
        if (gap > box)
            continue;
        double chord = sqrt(box * box - gap * gap) * (1.0 + 1e-12);
        isize lo = second_at_least(second, k->start[s], k->start[s + 1], q[1] - chord, 0);
        isize hi = second_at_least(second, lo, k->start[s + 1], q[1] + chord, 1);
        if (lo < hi)
            ranges[2 * got] = lo, ranges[2 * got + 1] = hi, got++;
    }
    return got;
}

/* the squared distances from q to the keys lo .. lo + NEIGHBOUR_BATCH - 1, into out */
static inline void batch_distances(const struct strips *k, const double *q, isize lo,
                                   double *restrict out)
{
    for (isize j = 0; j < NEIGHBOUR_BATCH; j++)
        out[j] = 0.0;
    for (isize t = 0; t < k->d; t++) {
        const double *restrict column = k->keys + t * k->stride + lo;
        double at = q[t];
        for (isize j = 0; j < NEIGHBOUR_BATCH; j++) {
            double e = column[j] - at;
            out[j] += e * e;
        }
    }
}

/* the k-th smallest (k from 0) of a[0 .. n-1], the array reordered (Hoare's selection) */
static double select_smallest(double *a, isize n, isize k)
{
    isize lo = 0, hi = n - 1;
    while (lo < hi) {
        double pivot = a[lo + (hi - lo) / 2];
        isize i = lo, j = hi;
        while (i <= j) {
            while (a[i] < pivot)
                i++;
            while (a[j] > pivot)
                j--;
            if (i <= j) {
                double t = a[i];
                a[i++] = a[j];
                a[j--] = t;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return a[k];
    }
    return a[k];
}

/* radius[i]: the distance from queries[i] (row-major, m x d) to its count-th nearest key.
   Around a trial radius (first `guess`, then the last query's) a band [inner, outer] of
   distances is counted: with fewer than count keys within outer the band moves out, with
   count or more within inner it moves in (after five moves, down to 0: coincident keys
   end there); otherwise the radius is the (count - within inner)-th smallest distance in
   the band, selected among the band's few keys. Returns -1 where no memory. */
EXPORT int neighbour_radii(const double *keys, isize stride, isize d, const isize *start,
                    const double *low, const double *high, isize strips,
                    const double *queries, isize m, isize count, double guess, double *radius)
{
    struct strips k = {keys, stride, d, strips, start, low, high};
    double *band = malloc((size_t)stride * sizeof(double));
    double *distance = aligned_allocate(VECTOR_BYTES, NEIGHBOUR_BATCH * sizeof(double));
    isize *ranges = malloc((size_t)(2 * strips) * sizeof(isize));
    if (!band || !distance || !ranges) {
        free(band), aligned_free(distance), free(ranges);
        return -1;
    }
    double r = guess, spread = 0.02;
    for (isize i = 0; i < m; i++) {
        const double *q = queries + i * d;
        double inner = r * (1.0 - spread), outer = r * (1.0 + spread);
        for (;;) {
            double inner2 = inner * inner, outer2 = outer * outer;
            isize below = 0, within = 0, kept = 0;
            isize parts = candidate_ranges(&k, q, outer, ranges);
            for (isize g = 0; g < parts; g++)
                for (isize lo = ranges[2 * g]; lo < ranges[2 * g + 1]; lo += NEIGHBOUR_BATCH) {
                    isize size = ranges[2 * g + 1] - lo;
                    size = size < NEIGHBOUR_BATCH ? size : NEIGHBOUR_BATCH;
                    double *restrict out = distance;
                    batch_distances(&k, q, lo, out);
                    isize here = 0, inside = 0; /* counted as vectors; the band's few kept */
                    for (isize j = 0; j < NEIGHBOUR_BATCH; j++) {
                        here += (j < size) & (out[j] <= inner2);
                        inside += (j < size) & (out[j] <= outer2);
                    }
                    below += here, within += inside;
                    if (inside > here)
                        for (isize j = 0; j < size; j++) {
                            band[kept] = out[j];
                            kept += (out[j] > inner2) & (out[j] <= outer2);
                        }
                }
            if (within < count) { /* too few: move out, by the ratio of counts at most */
                double grow = within ? pow((double)count / (double)within, 1.0 / (double)d) : 2.0;
                inner = outer;
                outer *= grow > 1.0 + spread ? grow * (1.0 + spread) : 1.0 + 2.0 * spread;
                spread *= 2.0;
                continue;
            }
            if (below >= count && inner > 0.0) { /* too many: move in, at last to 0 */
                outer = inner, inner = spread < 0.5 ? inner * (1.0 - spread) : 0.0;
                spread = spread * 2.0 < 0.5 ? spread * 2.0 : 0.5;
                continue;
            }
            radius[i] = below >= count ? 0.0 : sqrt(select_smallest(band, kept, count - below - 1));
            break;
        }
        if (radius[i] > 0.0)
            r = radius[i];
        spread = 0.02;
    }
    free(band), aligned_free(distance), free(ranges);
    return 0;
}

/* For each query (row-major, m x d) and its band (inner[i], outer[i]] of squared
   distances: below[i], the keys at squared distance <= inner[i], and the squared
   distances inside the band, into band[i * width ...] (the first `width` of them) with
   their number in kept[i] (more than width: the row overflowed). The distances are
   those of neighbour_radii, squared: its radius is a band's member. Returns -1 where
   no memory. */
EXPORT int neighbour_band(const double *keys, isize stride, isize d, const isize *start,
                    const double *low, const double *high, isize strips, const double *queries,
                    isize m, const double *inner, const double *outer, isize width,
                    long long *below, double *band, long long *kept)
{
    struct strips k = {keys, stride, d, strips, start, low, high};
    isize *ranges = malloc((size_t)(2 * strips) * sizeof(isize));
    double distance[NEIGHBOUR_BATCH];
    if (!ranges)
        return -1;
    for (isize i = 0; i < m; i++) {
        const double *q = queries + i * d;
        double inner2 = inner[i], outer2 = outer[i];
        isize under = 0, got = 0;
        isize parts = outer2 >= 0.0 ? candidate_ranges(&k, q, sqrt(outer2), ranges) : 0;
        for (isize g = 0; g < parts; g++)
            for (isize lo = ranges[2 * g]; lo < ranges[2 * g + 1]; lo += NEIGHBOUR_BATCH) {
                isize size = ranges[2 * g + 1] - lo;
                size = size < NEIGHBOUR_BATCH ? size : NEIGHBOUR_BATCH;
                batch_distances(&k, q, lo, distance);
                for (isize j = 0; j < size; j++) {
                    double e2 = distance[j];
                    under += e2 <= inner2;
                    if (e2 > inner2 && e2 <= outer2) {
                        if (got < width)
                            band[i * width + got] = e2;
                        got++;
                    }
                }
            }
        below[i] = under;
        kept[i] = got;
    }
    free(ranges);
    return 0;
}

/* The batch of keys lo .. lo + NEIGHBOUR_BATCH - 1 as rows of NEIGHBOUR_BATCH numbers:
   the monomials b of u = (x - q) / r (row 0 the ones, then u, then the products: `basis`)
   and the kernel's weight times the prior (`weight`: 0 for keys at or beyond INSIDE of
   r, and from `size` on). */
static void fill_batch(const struct strips *k, double *restrict basis, double *restrict weight,
                       const double *restrict weights, const double *q, double inverse,
                       isize degree, isize power, isize exponent, isize lo, isize size)
{
    isize d = k->d;
    double u2[NEIGHBOUR_BATCH] __attribute__((aligned(64))) = {0};
    for (isize a = 0; a < d; a++) {
        const double *restrict column = k->keys + a * k->stride + lo;
        double *restrict u = basis + (1 + a) * NEIGHBOUR_BATCH, at = q[a];
        for (isize j = 0; j < NEIGHBOUR_BATCH; j++) {
            u[j] = (column[j] - at) * inverse;
            u2[j] += u[j] * u[j];
        }
    }
    double one[NEIGHBOUR_BATCH] __attribute__((aligned(64)));
    if (power == 2)
        for (isize j = 0; j < NEIGHBOUR_BATCH; j++)
            one[j] = 1.0 - u2[j];
    else if (power == 3)
        for (isize j = 0; j < NEIGHBOUR_BATCH; j++)
            one[j] = 1.0 - u2[j] * sqrt(u2[j]);
    else
        for (isize j = 0; j < NEIGHBOUR_BATCH; j++)
            one[j] = 1.0 - sqrt(u2[j]);
    if (exponent == 0)
        for (isize j = 0; j < NEIGHBOUR_BATCH; j++)
            one[j] = 1.0;
    else if (exponent == 2)
        for (isize j = 0; j < NEIGHBOUR_BATCH; j++)
            one[j] *= one[j];
    else if (exponent == 3)
        for (isize j = 0; j < NEIGHBOUR_BATCH; j++)
            one[j] *= one[j] * one[j];
    const double *restrict prior = weights + lo;
    for (isize j = 0; j < NEIGHBOUR_BATCH; j++)
        weight[j] = ((j < size) & (u2[j] < INSIDE2)) ? one[j] * prior[j] : 0.0;
    isize row = 1 + d;
    for (isize a = 0; degree >= 2 && a < d; a++)
        for (isize a2 = a; a2 < d; a2++, row++) {
            const double *restrict x = basis + (1 + a) * NEIGHBOUR_BATCH;
            const double *restrict y = basis + (1 + a2) * NEIGHBOUR_BATCH;
            double *restrict out = basis + row * NEIGHBOUR_BATCH;
            for (isize j = 0; j < NEIGHBOUR_BATCH; j++)
                out[j] = x[j] * y[j];
        }
}

/* acc[r] += sum over the batch of left * right[r], r < count, right's rows read as they
   lie (not aligned): four sums at a time, so that their additions do not wait on each
   other */
static inline void accumulate(vector *acc, const double *left, const double *const *right,
                              isize count)
{
    isize r = 0;
    for (; r + 4 <= count; r += 4) {
        vector s0 = acc[r], s1 = acc[r + 1], s2 = acc[r + 2], s3 = acc[r + 3];
        const double *a = right[r], *b = right[r + 1], *c = right[r + 2], *e = right[r + 3];
        for (int v = 0; v < NEIGHBOUR_BATCH; v += LANES) {
            vector x = load(left + v);
            s0 += x * load(a + v);
            s1 += x * load(b + v);
            s2 += x * load(c + v);
            s3 += x * load(e + v);
        }
        acc[r] = s0, acc[r + 1] = s1, acc[r + 2] = s2, acc[r + 3] = s3;
    }
    for (; r < count; r++) { /* NEIGHBOUR_BATCH is a multiple of 4 LANES */
        vector s0 = acc[r], s1 = {0}, s2 = {0}, s3 = {0};
        const double *a = right[r];
        for (int v = 0; v < NEIGHBOUR_BATCH; v += 4 * LANES) {
            s0 += load(left + v) * load(a + v);
            s1 += load(left + v + LANES) * load(a + v + LANES);
            s2 += load(left + v + 2 * LANES) * load(a + v + 2 * LANES);
            s3 += load(left + v + 3 * LANES) * load(a + v + 3 * LANES);
        }
        acc[r] = (s0 + s1) + (s2 + s3);
    }
}

typedef float sign_lanes __attribute__((vector_size(LANES * sizeof(float))));

/* sum over the batch of row * signs, by lanes (signs read as they lie) */
static inline vector signed_sum(const double *row, const float *signs)
{
    vector s0 = {0}, s1 = {0};
    for (int v = 0; v < NEIGHBOUR_BATCH; v += 2 * LANES) {
        sign_lanes a, b;
        memcpy(&a, signs + v, sizeof a);
        memcpy(&b, signs + v + LANES, sizeof b);
        s0 += load(row + v) * __builtin_convertvector(a, vector);
        s1 += load(row + v + LANES) * __builtin_convertvector(b, vector);
    }
    return s0 + s1;
}

/* For each query q (radius r, row-major m x d) and its keys x strictly within r, with b
   the monomials of u = (x - q) / r up to `degree` in loess's order (1; u_j; u_j u_k for
   j <= k) and w = weights[x] (1 - |u|^power)^exponent (power 1, 2 or 3) the kernel's
   weight (exponent 0 to 3), either the moments (coefficients NULL)

       first[q]  = sum w b b^T              (p x p)
       second[q] = sum w b values[x]^T      (p x columns)

   or, given each query's coefficients a (m x p), the operator's row l = w a.b:

       first[q]  = sum l^2 square_weights[x]      (1)
       second[q] = sum l signs[x]                 (columns)

   values and signs (+1 or -1, one byte each: smoothed in bulk, they are read from memory
   an eighth as long) come by column (columns x stride, in the keys' order). d <= 8.
   Returns -1 where no memory. */
EXPORT int neighbour_moments(const double *keys, isize stride, isize d, const isize *start,
                      const double *low, const double *high, isize strips,
                      const double *weights, const double *values, const float *signs,
                      isize columns, const double *square_weights, const double *coefficients,
                      isize degree, isize power, isize exponent, const double *queries,
                      const double *radius, isize m, double *first, double *second)
{
    struct strips k = {keys, stride, d, strips, start, low, high};
    isize p = 1 + (degree >= 1 ? d : 0) + (degree >= 2 ? d * (d + 1) / 2 : 0);
    int moments = coefficients == 0;
    isize lines = p > 1 + d ? p : 1 + d; /* the monomials, or u alone (degree 0) */
    isize rows = 2 * lines + 3, sums = moments ? p * p + p * columns : 1 + columns;
    size_t row_bytes = NEIGHBOUR_BATCH * sizeof(double);
    double *space = aligned_allocate(VECTOR_BYTES, (size_t)rows * row_bytes);
    vector *acc = aligned_allocate(VECTOR_BYTES, (size_t)sums * sizeof(vector));
    isize pointers = lines > columns ? lines : columns;
    const double **right = malloc((size_t)pointers * sizeof(double *));
    isize *ranges = malloc((size_t)(2 * strips) * sizeof(isize));
    if (!space || !acc || !right || !ranges) {
        aligned_free(space), aligned_free(acc), free(right), free(ranges);
        return -1;
    }
    memset(space, 0, (size_t)rows * row_bytes);
    /* rows: the monomials (lines), the weight, w b (lines), the operator's row, l s */
    double *basis = space, *weight = basis + lines * NEIGHBOUR_BATCH;
    double *products = weight + NEIGHBOUR_BATCH, *row = products + lines * NEIGHBOUR_BATCH;
    double *scaled = row + NEIGHBOUR_BATCH;
    for (isize j = 0; j < NEIGHBOUR_BATCH; j++)
        basis[j] = 1.0;
    for (isize i = 0; i < m; i++) {
        const double *q = queries + i * d;
        double r = radius[i];
        memset(acc, 0, (size_t)sums * sizeof(vector));
        isize parts = candidate_ranges(&k, q, r, ranges);
        for (isize g = 0; g < parts; g++)
            for (isize lo = ranges[2 * g]; lo < ranges[2 * g + 1]; lo += NEIGHBOUR_BATCH) {
                isize size = ranges[2 * g + 1] - lo;
                size = size < NEIGHBOUR_BATCH ? size : NEIGHBOUR_BATCH;
                fill_batch(&k, basis, weight, weights, q, 1.0 / r, degree, power, exponent, lo,
                           size);
                if (moments) {
                    for (isize c = 0; c < columns; c++)
                        right[c] = values + c * stride + lo;
                    for (isize a = 0; a < p; a++) {
                        double *restrict out = products + a * NEIGHBOUR_BATCH;
                        const double *restrict b = basis + a * NEIGHBOUR_BATCH;
                        for (isize j = 0; j < NEIGHBOUR_BATCH; j++)
                            out[j] = weight[j] * b[j];
                    }
                    for (isize a = 0; a < p; a++)
                        accumulate(acc + p * p + a * columns, products + a * NEIGHBOUR_BATCH,
                                   right, columns);
                    for (isize a = 0; a < p; a++) {
                        const double *products_a = products + a * NEIGHBOUR_BATCH;
                        for (isize a2 = a; a2 < p; a2++)
                            right[a2 - a] = basis + a2 * NEIGHBOUR_BATCH;
                        accumulate(acc + a * p + a, products_a, right, p - a);
                    }
                    continue;
                }
                const double *a = coefficients + i * p;
                double *restrict line = row;
                for (isize j = 0; j < NEIGHBOUR_BATCH; j++)
                    line[j] = a[0];
                for (isize b = 1; b < p; b++) {
                    const double *restrict monomial = basis + b * NEIGHBOUR_BATCH;
                    for (isize j = 0; j < NEIGHBOUR_BATCH; j++)
                        line[j] += a[b] * monomial[j];
                }
                const double *restrict squares = square_weights + lo;
                for (isize j = 0; j < NEIGHBOUR_BATCH; j++) {
                    line[j] *= weight[j];
                    scaled[j] = line[j] * squares[j];
                }
                for (isize c = 0; c < columns; c++)
                    acc[1 + c] += signed_sum(row, signs + c * stride + lo);
                right[0] = row;
                accumulate(acc, scaled, right, 1);
            }
        if (moments) {
            double *g = first + i * p * p;
            for (isize a = 0; a < p; a++)
                for (isize a2 = a; a2 < p; a2++)
                    g[a * p + a2] = g[a2 * p + a] = lane_sum(acc[a * p + a2]);
            for (isize c = 0; c < p * columns; c++)
                second[i * p * columns + c] = lane_sum(acc[p * p + c]);
        } else {
            first[i] = lane_sum(acc[0]);
            for (isize c = 0; c < columns; c++)
                second[i * columns + c] = lane_sum(acc[1 + c]);
        }
    }
    aligned_free(space), aligned_free(acc), free(right), free(ranges);
    return 0;
}
