"""Running suites under strategies: endpoints, the episode runner, storage and statistics."""
