"""A worked example of a custom task: reward completions whose word count is within a budget.

The task lives in the installable plugin, ``examples/word_count_plugin/word_count_plugin.py``;
this module re-exports it so it can also be named by import path from a checkout, in a rewards
config (``reward-service serve --config my.yaml``)::

    tasks:
      word_budget:
        task: examples.word_count_task:WordCountTask
        options: {default_max_words: 50}

or installed as a package (``pip install ./examples/word_count_plugin``), found through the
entry-point group ``reward_service.tasks`` by every server in that environment.
"""

from examples.word_count_plugin.word_count_plugin import WordCountTask

__all__ = ["WordCountTask"]
