"""Use a learned guideline in a live agent: OpenAI chat messages in, the messages to send out.

```python
from optimizer.runtime import ContextRuntime
runtime = ContextRuntime("guidelines/learned/quickstart.md", retention={"search_docs": "static"})
request = runtime.compact(messages)            # the whole conversation, as the Chat API takes it
tools = runtime.tools(my_tools)                # plus `recall` once a result was cleared behind a handle
```
"""

from __future__ import annotations

from optimizer.runtime.conversation import AddedResult, ContextRuntime, Prepared, cache_break_of
from optimizer.runtime.retention_map import RetentionMap, ToolRetention
from optimizer.runtime.state import RuntimeStats

__all__ = [
    "AddedResult",
    "ContextRuntime",
    "Prepared",
    "RetentionMap",
    "RuntimeStats",
    "ToolRetention",
    "cache_break_of",
]
