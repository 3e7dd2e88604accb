import os

# scikit-learn's estimator checks exercise NumPy input through the array-API code
# path only when this is set (otherwise they report themselves as skipped).
os.environ.setdefault("SCIPY_ARRAY_API", "1")
