"""Direct preference optimization on offline pairs (``trainer-client dpo``).

Modules (imported directly; this package imports nothing heavy):
- ``dpo_loss``  — pure losses (sigmoid, ipo, hinge, robust), the SFT term, the reward metrics.
- ``dpo_train`` — ``DPOConfig`` and ``train_dpo`` (frozen or precomputed reference).
"""
