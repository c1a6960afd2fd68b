"""gRPC reward services: verifiers (math, GSM8K, format, code) and learned reward models.

Run ``python -m reward_service serve`` (or ``reward-service serve``); see README.md.
"""
