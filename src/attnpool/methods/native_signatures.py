"""The argument types of the methods' C functions (``native.c``, ``expansions.c``), as
``ctypes`` declares them: a pointer to an array's first number, a size or index
(``ptrdiff_t``), or a double, in the order of each function's parameters."""

from __future__ import annotations

import ctypes
from typing import Any

_POINTER, _SIZE, _DOUBLE = ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_double
SIGNATURES: dict[str, list[Any]] = {
    "gaussian_state": [_POINTER, _SIZE, _POINTER, _POINTER, _SIZE, _SIZE] + [_POINTER] * 6,
    "gaussian_moments": [_POINTER, _SIZE, _POINTER, _POINTER, _SIZE, _SIZE] + [_POINTER] * 6,
    "gaussian_polynomial": [_POINTER, _SIZE, _POINTER, _POINTER, _SIZE, _SIZE]
    + [_POINTER] * 9
    + [_SIZE] * 2
    + [_POINTER, _SIZE],
    "fgt_coefficients": [_POINTER] * 3 + [_SIZE] * 2 + [_DOUBLE] * 2 + [_SIZE] * 3 + [_POINTER],
    "fgt_leave_one_out": [_POINTER, _SIZE]
    + [_DOUBLE] * 2
    + [_SIZE] * 2
    + [_DOUBLE] * 2
    + [_POINTER],
    "linear_bin": [_POINTER, _SIZE, _SIZE] + [_POINTER] * 5 + [_SIZE, _POINTER, _POINTER, _SIZE],
    "locality_order": [_POINTER, _SIZE, _SIZE, _SIZE, _POINTER],
    "box_gaussian_log_sums": [_POINTER, _SIZE] + [_POINTER] * 8,
    "gaussian_reach": [_POINTER, _SIZE, _POINTER, _POINTER, _SIZE]
    + [_POINTER] * 4
    + [_DOUBLE] * 2
    + [_POINTER] * 2,
    "separable_direct": [_POINTER]
    + [_SIZE] * 4
    + [_POINTER] * 3
    + [_SIZE] * 2
    + [_POINTER] * 2
    + [_SIZE] * 2
    + [_POINTER],
    "taylor_bin": [_POINTER, _SIZE, _SIZE] + [_POINTER] * 5 + [_SIZE, _SIZE] + [_POINTER] * 5,
    "neighbour_radii": [_POINTER, _SIZE, _SIZE]
    + [_POINTER] * 3
    + [_SIZE, _POINTER, _SIZE, _SIZE, _DOUBLE, _POINTER],
    "neighbour_band": [_POINTER, _SIZE, _SIZE]
    + [_POINTER] * 3
    + [_SIZE, _POINTER, _SIZE, _POINTER, _POINTER, _SIZE, _POINTER, _POINTER, _POINTER],
    "neighbour_moments": [_POINTER, _SIZE, _SIZE]
    + [_POINTER] * 3
    + [_SIZE, _POINTER, _POINTER, _POINTER, _SIZE, _POINTER, _POINTER, _SIZE, _SIZE, _SIZE]
    + [_POINTER, _POINTER, _SIZE, _POINTER, _POINTER],
    "fgt_evaluate": [
        *[_POINTER] * 2,
        _SIZE,
        _POINTER,
        *[_SIZE] * 2,
        _DOUBLE,
        *[_SIZE] * 2,
        _POINTER,
    ],
}

#: The functions that return an ``int`` status (0, or −1 where memory could not be had,
#: and the expansions' own codes); the others return nothing.
RETURNS_STATUS = frozenset(
    {
        "fgt_coefficients",
        "fgt_leave_one_out",
        "fgt_evaluate",
        "separable_direct",
        "gaussian_reach",
        "neighbour_radii",
        "neighbour_band",
        "neighbour_moments",
        "gaussian_polynomial",
    }
)
