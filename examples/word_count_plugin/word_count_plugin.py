"""The plugin package's module: it re-exports the example task under its entry point."""

from examples.word_count_task import WordCountTask

__all__ = ["WordCountTask"]
