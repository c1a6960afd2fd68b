"""A generic supervised worker pool: forked processes, a hard per-item time limit, fair admission.

Imports nothing else of ours, so any service can run CPU-bound work on it.
"""
