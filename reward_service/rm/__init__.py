"""The Bradley–Terry reward-model server (``reward.v1.RewardModelService``).

Modules (imported directly; this package imports nothing heavy):
- ``checkpoint``      — load a trainer-written checkpoint directory (model, tokenizer, metadata).
- ``dynamic_batcher`` — merge concurrent requests into token-budgeted forward passes.
- ``model_holder``    — the model being served; hot reload (load beside, warm up, swap).
- ``rm_servicer``     — the gRPC servicer: validation, Score / Reload / Info.
- ``rm_server``       — ``RewardModelServerConfig``, ``create_rm_server``, ``serve_rm``.
"""
