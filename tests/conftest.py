"""Fixtures shared by every test folder (each imports its own stack only when a test uses it)."""

from tests.judge_fixtures import fault_proxy, judge_endpoint, judge_model_dir, judge_server  # noqa: F401
