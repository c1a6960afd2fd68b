"""Supervised fine-tuning of a causal LM (``trainer-client sft``).

Modules (imported directly; this package imports nothing heavy):
- ``chat_data``     — JSONL rows (prompt/completion or messages), chat-template rendering, loss masks, packing.
- ``token_batches`` — padded and packed batches, per-token log-probs, the completion-only loss.
- ``sft_train``     — ``SFTConfig`` and ``train_sft``.
"""
