"""The rollout inspector: ``reward-service inspect RUN_DIR`` serves a run's rollouts as a local web page.

``lines`` reads what a line counts as, ``index`` keeps a file's compact columns and answers queries
(``filters``), ``app`` serves the page (``static/``) and its JSON routes, ``server`` runs it on
127.0.0.1. See docs/operations.md, "Inspect rollouts".
"""
