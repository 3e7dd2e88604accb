"""What every layer stands on, none of it public: input checks and type hints, units
and shapes, the array policy (NumPy in, NumPy out), the platform and program cache,
files, frames, progress, optional dependencies and scikit-learn's estimator protocol."""
