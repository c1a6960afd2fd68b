"""Evaluation of a policy on held-out prompts, scored by the reward service (``trainer-client eval``).

``metrics`` holds the pure estimators (pass@k, maj@k, accuracy); ``evaluate`` generates and
scores; ``eval_cli`` is the subcommand. The trainers' ``run.eval_every`` calls the same
``evaluate``, so a number in a training log and one from ``trainer-client eval`` mean the same.
"""
