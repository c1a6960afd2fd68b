"""Environments: multi-turn, tool-using episodes on our sandbox and verifiers (issue 24).

An environment is a plugin (``env_api.Environment``): the tools it offers, the prompt for a task
row, the registered task that verifies the submitted answer, and its rows per split.
``sessions.SessionManager`` runs episodes of them in process and implements
``reward_core.episode_contract.EpisodeHost``; ``sessions.create_session_manager`` builds one;
``hosting`` serves them on the reward server's port (``reward-service serve --serve-environments``).
Importing this package starts and loads nothing. Guide: docs/environments.md.
"""
