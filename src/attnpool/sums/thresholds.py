"""The planner's thresholds: the sizes and counts at which :mod:`attnpool.sums.plan`'s
tables move from one backend to another, each with the measurement that set it."""

__all__ = [
    "DENSE_MAX_PAIRS",
    "EXPANSION_MIN_PAIRS",
    "FGT_SEARCH_MAX_ROWS",
    "HOST_PAIRS",
    "NATIVE_SEARCH_MAX_WORK",
    "NUMPY_MAX_WORK",
    "NUMPY_SEARCH_MAX_WORK",
    "NUMPY_SEARCH_MAX_WORK_SEVERAL",
    "SPARSE_MAX_DIM",
    "SPARSE_MAX_FRACTION",
    "SPLIT_MIN_PAIRS",
]  # fmt: skip

#: Pairs up to which the exact engines form the ``(n, m)`` block at once.
DENSE_MAX_PAIRS = 2**21
#: Pairs × value columns up to which NumPy pools (no program to build or load).
NUMPY_MAX_WORK = 2**22
#: Pairs up to which a density is summed in NumPy.
HOST_PAIRS = 2**22
#: Pairs from which the Gaussian's compiled loops, where built, sum a density or an
#: exact re-sum rather than NumPy's pairs: the expansions in one column, the loop in
#: 2–16 (leave-one-out sums of 1000 rows: 0.3 and 1.1 ms against NumPy's 16 and 21 ms).
EXPANSION_MIN_PAIRS = 2**14
#: Pairs from which one column of a kernel that splits (boxcar, triangular,
#: epanechnikov, cosine) is summed by ``sparse``'s prefix sums rather than NumPy's pairs
#: (leave-one-out sums of 500 rows: 1.1 ms against 12 ms; of 200, 0.8 against 1.5).
SPLIT_MIN_PAIRS = 2**16
#: Rows² × numbers per pair up to which NumPy runs a CV search in one column (~45
#: evaluations at up to ~50 ms: still cheaper than importing JAX and building
#: programs), and in several (L-BFGS's 25–450 evaluations of ~1–10 ms).
NUMPY_SEARCH_MAX_WORK = 2**21
NUMPY_SEARCH_MAX_WORK_SEVERAL = 2**19
#: Rows² × expected evaluations up to which the compiled loop runs a Gaussian
#: local-constant CV search of one column on the host; beyond, ``fgt``'s O(m)
#: leave-one-out sums win (at any size: 10⁵ rows 0.55 s, 10⁶ 4.3 s). Local linear's
#: Gaussian CV stays on the loop at any size (5000 rows 0.3 s, 20 000 4.3 s).
NATIVE_SEARCH_MAX_WORK = 2**27
#: Rows up to which an unweighted AICc search of a Gaussian column sums its fits by
#: the ``fgt`` expansions (measured for CV's sums: a search of 2000 rows 0.012 s warm,
#: first calls 0.10 s against the compiled search's 2.6 s; 10⁵ rows 0.58 s).
FGT_SEARCH_MAX_ROWS = 2**17
#: Rule 7: the most columns, and the largest sampled share of keys in a neighbourhood.
SPARSE_MAX_DIM = 4
SPARSE_MAX_FRACTION = 0.05
