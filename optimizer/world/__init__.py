"""What an agent acts on: tools with retention metadata, environments, tasks, suites."""

from optimizer.world.retention import RetentionClass
from optimizer.world.suite import SUITES, Suite, SuiteSource, available_suites, load_suite
from optimizer.world.task import CheckResult, Environment, Need, NeedKind, ReferenceStep, Task, UserTurn
from optimizer.world.tool import ToolCall, ToolOutput, ToolSpec, classify_result, object_schema

__all__ = [
    "SUITES",
    "CheckResult",
    "Environment",
    "Need",
    "NeedKind",
    "ReferenceStep",
    "RetentionClass",
    "Suite",
    "SuiteSource",
    "Task",
    "ToolCall",
    "ToolOutput",
    "ToolSpec",
    "UserTurn",
    "available_suites",
    "classify_result",
    "load_suite",
    "object_schema",
]
