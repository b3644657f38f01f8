"""Tool registrations more than one suite declares: reading a skill file, issuing a refund.

One declaration keeps their retention metadata (a skill's class, a refund being a write) the same
wherever a task offers them, so a learned rule keyed on the tool name means one thing.
"""

from __future__ import annotations

from optimizer.world.retention import RetentionClass
from optimizer.world.tool import ToolSpec, object_schema

READ_SKILL = ToolSpec(
    "read_skill", "Read a skill file by name.", object_schema(name="string"), retention_class=RetentionClass.SKILL
)

ISSUE_REFUND = ToolSpec(
    "issue_refund",
    "Refund an amount on an order.",
    object_schema(order_id="string", amount="number"),
    side_effect=True,
)
