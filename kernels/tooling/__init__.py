"""Build-time tools for the kernels, kept apart from the kernels and their per-call host code (kernels/cute):
sass.py reads the SASS of compiled kernels (no GPU needed)."""
