"""The session manager's configuration: :class:`EnvironmentsConfig`, defined beside the router's config.

It is the ``environments`` section of the server's config (``reward_service.router.config``), so it
lives in ``reward_service.router.environments_config``; this module names it for the environments
package and its callers.
"""

from __future__ import annotations

from reward_service.router.environments_config import EnvironmentsConfig

__all__ = ["EnvironmentsConfig"]
