"""The retention classes a tool result can belong to."""

from __future__ import annotations

from enum import StrEnum


class RetentionClass(StrEnum):
    """What a tool result is, decided by the tool's registration and the call, never by its text."""

    SKILL = "skill"
    WRITE_RECEIPT = "write_receipt"
    ERROR_PARTIAL = "error_partial"
    DYNAMIC_STATE = "dynamic_state"
    STATIC = "static"
    UNKNOWN = "unknown"
