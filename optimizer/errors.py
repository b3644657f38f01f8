"""Error types. Anything the user can fix is an `AconError`: printed as one line, non-zero exit."""

from __future__ import annotations


class AconError(Exception):
    """A failure the user can act on. The message is one line that says what and where."""

    exit_code = 1


class ConfigError(AconError):
    """Malformed or inconsistent configuration; nothing has been written when it is raised."""

    exit_code = 2


class EndpointError(AconError):
    """An LLM endpoint that cannot serve requests at all (unreachable, unknown model, bad key)."""

    exit_code = 3


class InfrastructureError(Exception):
    """A model call that failed after its retries. Episodes that hit it are excluded, never scored."""

    def __init__(self, message: str, *, kind: str, attempts: int) -> None:
        super().__init__(message)
        self.kind = kind
        self.attempts = attempts
