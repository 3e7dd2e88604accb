"""The support's edge of a compact kernel, decided alike in every path.

A compact kernel's edge decides whether a key counts at all, so every path forms
``u_j = (q_j − k_j) / h_j`` from the unscaled inputs (one rounding of the difference and
one of the quotient) and decides ``Σ_j u_j² < support²`` by exact products and
error-free sums (:func:`inside_exactly`), in NumPy or JAX — no JAX is imported for NumPy.
"""

from __future__ import annotations

import contextlib
import functools
import sys

import numpy as np

from . import Kernel

__all__ = ["edge_log_profile", "has_edge", "inside_exactly", "pair_log_weights", "support_edge"]


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


def _leading(u, bits: int, xp):
    """``u`` with all but its ``bits`` leading significant bits cleared (bit masks only)."""
    dtype = u.dtype
    width = dtype.itemsize * 8
    unsigned = {32: xp.uint32, 64: xp.uint64}[width]
    cleared = np.finfo(dtype).nmant + 1 - bits
    mask = unsigned(((1 << width) - 1) ^ ((1 << cleared) - 1))
    if xp is np:
        return (u.view(unsigned) & mask).view(dtype)
    import jax

    # shifts, not the mask: a 64-bit mask is a constant above int64's range, which
    # Triton's lowering cannot build
    shift = unsigned(cleared)
    kept = jax.lax.shift_right_logical(jax.lax.bitcast_convert_type(u, unsigned), shift)
    return jax.lax.bitcast_convert_type(jax.lax.shift_left(kept, shift), dtype)


def inside_exactly(us, radius2, *, closed: bool, xp=np):
    """Whether ``Σ_j u_j² < radius2`` (``≤`` if ``closed``) for the rounded ``u_j``, decided
    as the same exact-product, compensated sum in every path (``xp``: ``jnp`` or ``np``).

    Each ``u`` is split by bit masks into three parts of at most a third of the
    mantissa, so every product of two parts is exact, and the products are summed with
    ``radius2`` subtracted by error-free additions. Neither a fused multiply-add (which
    XLA:CPU makes of ``r² + u·u`` in some fusions and not in others) nor the order of a
    vectorised loop changes the decision.
    """
    dtype = us[0].dtype
    bits = -(-(np.finfo(dtype).nmant + 1) // 3)
    total = xp.full(us[0].shape, -radius2, dtype)
    error = xp.zeros(us[0].shape, dtype)
    for u in us:
        a = _leading(u, bits, xp)
        rest = u - a
        b = _leading(rest, bits, xp)
        c = rest - b
        for term in (a * a, 2 * a * b, b * b, 2 * a * c, 2 * b * c, c * c):
            total, e = _two_sum(total, term)
            error = error + e
    excess = total + error
    return excess <= 0 if closed else excess < 0


def edge_log_profile(us, kernel: Kernel, xp=np):
    """Log weights of a compact kernel from the scaled differences ``us`` (one array per
    coordinate): ``r²`` summed plainly for the value, the edge by :func:`inside_exactly`;
    a product kernel sums each coordinate's log weight, its edge decided per coordinate."""
    if kernel.product and len(us) > 1:
        return sum(edge_log_profile([u], kernel, xp) for u in us)
    from .norms import squared_norm

    radius2, closed = support_edge(kernel)
    r2 = squared_norm(us, kernel, xp)
    if kernel.norm == 2.0:
        inside = inside_exactly(us, radius2, closed=closed, xp=xp)
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
