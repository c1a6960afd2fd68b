"""Built-in tasks; each is registered through the ``reward_service.tasks`` entry-point group."""
