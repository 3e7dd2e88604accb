"""The support's edge of a compact kernel, decided alike in every path.

A compact kernel's edge decides whether a key counts at all, so every path forms
``u_j = (q_j − k_j) / h_j`` from the unscaled inputs (one rounding of the difference and
one of the quotient) and decides ``Σ_j u_j² < support²`` by exact products and
error-free sums (:func:`inside_exactly`), in NumPy or JAX — no JAX is imported for NumPy.
Only pairs near the edge need that (:func:`inside_decided`): elsewhere the plain sum
decides the same way. XLA divides by a broadcast bandwidth as a product by its
reciprocal, so a compiled block near the edge divides again behind an optimization
barrier (:func:`rounded_quotient`) before it decides; a Pallas tile decides every pair
exactly on its own quotients.
"""

from __future__ import annotations

import contextlib
import functools
import sys

import numpy as np

from . import Kernel

__all__ = [
    "edge_log_profile",
    "has_edge",
    "inside_decided",
    "inside_exactly",
    "pair_log_weights",
    "rounded_quotient",
    "support_edge",
]


def has_edge(kernel: Kernel) -> bool:
    """A compact distance kernel: blocks take unscaled rows (:func:`block_coordinates`)."""
    return kernel.compact and kernel.similarity == "distance"


@functools.cache
def support_edge(kernel: Kernel) -> tuple[float, bool]:
    """``(support², closed)`` of a compact kernel: ``closed`` when the kernel is positive
    on its support's edge."""
    radius2 = float(kernel.support) ** 2
    # a kernel of the user's may be written in JAX: evaluated now, even inside a trace
    now = contextlib.nullcontext()
    if "jax" in sys.modules:
        import jax

        now = jax.ensure_compile_time_eval()
    with now:
        closed = bool(kernel.log_profile(np.float32(radius2)) > -np.inf)
    return radius2, closed


def _two_sum(a, b):
    """``(s, e)`` with ``s + e = a + b`` exactly (additions only: nothing to contract)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _halves(u, xp):
    """``(high, low)`` with ``u = high + low`` exactly: ``high`` is ``u`` rounded to its
    leading ``p − ⌈p/2⌉`` significant bits (``p`` the precision's: 26 of float64's 53, 12
    of float32's 24) by integer operations on its bits, ``low`` the rest, of at most as
    many, so every product of two halves is exact. Shifts, not masks: a 64-bit mask is a
    constant above int64's range, which Triton's lowering cannot build."""
    dtype = u.dtype
    unsigned = {4: xp.uint32, 8: xp.uint64}[dtype.itemsize]
    cleared = -(-(np.finfo(dtype).nmant + 1) // 2)
    half, shift = unsigned(1 << (cleared - 1)), unsigned(cleared)
    if xp is np:
        with np.errstate(over="ignore"):
            bits = ((u.view(unsigned) + half) >> shift) << shift
        high = bits.view(dtype)
    else:
        import jax

        bits = jax.lax.bitcast_convert_type(u, unsigned) + half
        bits = jax.lax.shift_left(jax.lax.shift_right_logical(bits, shift), shift)
        high = jax.lax.bitcast_convert_type(bits, dtype)
    return high, u - high


def inside_exactly(us, radius2, *, closed: bool, xp=np):
    """Whether ``Σ_j u_j² < radius2`` (``≤`` if ``closed``) for the rounded ``u_j``, decided
    as the same exact-product, compensated sum in every path (``xp``: ``jnp`` or ``np``).

    Each ``u`` is split into two halves of at most half the mantissa (:func:`_halves`),
    so every product of two halves is exact, and the products are summed by
    error-free additions into ``total + error``; ``total − radius2`` is then exact where
    it decides (Sterbenz: ``total`` within a factor two of ``radius2``), and adding the
    small ``error`` keeps the sign of the exact excess. Neither a fused multiply-add
    (which XLA:CPU makes of ``r² + u·u`` in some fusions and not in others) nor the
    order of a vectorised loop changes the decision; no error-free addition takes the
    constant ``radius2`` (with the sum started at ``−radius2``, XLA lost the first
    addition's error: a float32 pair 1.4e-8 outside the edge was decided inside).
    """
    dtype = us[0].dtype
    terms = []
    for u in us:
        high, low = _halves(u, xp)
        terms += [high * high, 2 * high * low, low * low]
    total, error = _exact_sum(terms, xp)
    excess = (total - xp.asarray(radius2, dtype)) + error
    return excess <= 0 if closed else excess < 0


def _exact_sum(terms, xp):
    """``(total, error)`` of ``terms`` by error-free additions from the first (no constant
    enters one: see :func:`inside_exactly`)."""
    total, error = terms[0], xp.zeros_like(terms[0])
    for term in terms[1:]:
        total, e = _two_sum(total, term)
        error = error + e
    return total, error


def rounded_quotient(d, h, xp=np):
    """``|d / h|`` rounded as NumPy divides, in ``xp``. XLA's simplifier makes of a
    division by a broadcast ``h`` a product by ``1 / h``, up to two units in the last
    place off the quotient (a quarter of the pairs of random data); behind an
    optimization barrier the divisor is no broadcast, and the division is the
    compiler's own, correctly rounded (tested against NumPy's)."""
    if xp is np:
        return np.abs(d) / h
    import jax

    return xp.abs(d) / jax.lax.optimization_barrier(xp.broadcast_to(h, xp.shape(d)))


def inside_decided(
    us, r2, radius2: float, *, closed: bool, xp=np, branch: bool = False, quotients=None
):
    """:func:`inside_exactly`'s decision, paid only near the edge: ``r2``, the plain sum
    ``Σ_j u_j²``, is off the exact one by at most ``γ_d Σ_j u_j²`` (``d`` squares and
    ``d − 1`` additions, contracted into fused multiply-adds or not; ``γ_d < d·eps``), and
    a compiled ``u_j`` off the rounded quotient by two units in the last place, so a pair
    whose ``r2`` is further than ``4(d + 2)·eps·radius2`` from the edge is on the side
    ``r2`` says. The others are decided exactly: in NumPy those pairs alone; in JAX
    (``branch``) the block, where it holds one (one ``lax.cond``: a scanned block near no
    edge pays one comparison a pair), from the quotients rounded as NumPy rounds them
    (``quotients``: the differences and the bandwidths ``([d_j], [h_j])`` that ``us``
    divide, :func:`rounded_quotient`); else always (a Pallas kernel's tile)."""
    if not branch and xp is not np:
        return inside_exactly(us, radius2, closed=closed, xp=xp)
    plain = r2 <= radius2 if closed else r2 < radius2
    margin = 4 * (len(us) + 2) * float(np.finfo(r2.dtype).eps) * radius2
    near = xp.abs(r2 - radius2) <= margin
    if xp is np:
        if np.any(near):
            us = np.broadcast_arrays(*us, near)[:-1]
            plain = np.array(plain)
            plain[near] = inside_exactly([u[near] for u in us], radius2, closed=closed)
        return plain
    import jax

    us, quotients = jax.lax.stop_gradient((us, quotients))  # (a decision: no gradient)

    def exact():
        rounded = us
        if quotients is not None:  # the columns stacked: one program of the quotients
            differences, divisors = quotients
            stacked = xp.stack(xp.broadcast_arrays(*differences))
            by_column = xp.reshape(xp.stack(divisors), (-1,) + (1,) * (stacked.ndim - 1))
            rounded = list(rounded_quotient(stacked, by_column, xp))
        return inside_exactly(rounded, radius2, closed=closed, xp=xp)

    return jax.lax.cond(xp.any(near), exact, lambda: plain)


def edge_log_profile(us, kernel: Kernel, xp=np, *, branch: bool = False, quotients=None):
    """Log weights of a compact kernel from the scaled differences ``us`` (one array per
    coordinate): ``r²`` summed plainly for the value, the edge as :func:`inside_exactly`
    decides it (by :func:`inside_decided`; ``branch`` and ``quotients`` as there); a
    product kernel sums each coordinate's log weight, its edge decided per coordinate."""
    if kernel.product and len(us) > 1:
        parts = [None] * len(us)
        if quotients is not None:
            parts = [([d], [h]) for d, h in zip(*quotients, strict=True)]
        return sum(edge_log_profile([u], kernel, xp, branch=branch, quotients=part)
                   for u, part in zip(us, parts, strict=True))  # fmt: skip
    from .norms import squared_norm

    radius2, closed = support_edge(kernel)
    r2 = squared_norm(us, kernel, xp)
    if kernel.norm == 2.0:
        inside = inside_decided(us, r2, radius2, closed=closed, xp=xp, branch=branch,
                                quotients=quotients)  # fmt: skip
    else:  # the same number decides on every path
        inside = r2 <= radius2 if closed else r2 < radius2
    largest = xp.asarray(radius2, r2.dtype)
    largest = largest if closed else xp.nextafter(largest, xp.zeros_like(largest))
    return kernel.log_profile(xp.where(inside, xp.minimum(r2, largest), xp.inf))


def pair_log_weights(us, kernel: Kernel, xp=np):
    """``log K(u)`` of the scaled differences ``us`` (one array per coordinate), in the
    kernel's norm, a compact kernel's edge decided exactly: the textbook's weight of
    each pair, on every path that sums pairs on the host."""
    if has_edge(kernel):
        return edge_log_profile(us, kernel, xp)
    if kernel.product:
        return sum(kernel.log_profile(u * u) for u in us)
    from .norms import squared_norm

    return kernel.log_profile(squared_norm(us, kernel, xp))
