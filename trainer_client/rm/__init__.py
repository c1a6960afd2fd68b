"""Bradley–Terry reward-model training: data, input encoding, loss, trainer.

Modules (imported directly; this package imports nothing heavy):
- ``rm_inputs``       — ``encode_pair``: the (prompt, completion) encoding shared with serving.
- ``bt_loss``         — pure loss / accuracy / reward statistics.
- ``preference_data`` — preference JSONL I/O and the synthetic preference-set generator.
- ``rm_train``        — ``RewardTrainConfig`` and ``train_reward_model``.
"""
