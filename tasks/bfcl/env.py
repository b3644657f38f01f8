"""One BFCL task's episode: its own simulator instances, safe execution, the official checker.

Isolation. BFCL caches simulator instances in `multi_turn_utils` module globals keyed by
`{model_name}_{test_entry_id}_{Class}_instance` and never frees them. Every episode uses a fresh
uuid tag as `model_name`, every check another one, and both are deleted afterwards (`close()`, or
when the environment is garbage-collected), so state never leaks between episodes and memory stays
flat over any number of them.

Execution. The call string is built from the structured call and validated (`calls.validate_call`)
before anything runs; the validated keyword arguments are then applied to the bound simulator method
that BFCL's executor would resolve the name to (the last involved class with a public method of
that name). That is what BFCL's `eval` of the string does, minus `eval`, and it lets failures be
recognised structurally: an exception raised by the simulator, or a returned `{"error": ...}`.
Results are rendered as BFCL renders them (strings as is, dicts JSON-dumped, the rest `str()`).
"""

from __future__ import annotations

import inspect
import json
import uuid
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from optimizer.world.task import CheckResult, Environment
from optimizer.world.tool import ToolCall, ToolOutput, ToolSpec
from tasks.bfcl.calls import UnsafeCall, call_string, validate_call


@dataclass(frozen=True)
class BfclCase:
    """What an episode needs from one BFCL entry (read-only; shared by all its episodes)."""

    id: str
    category: str
    # The question entry as BFCL ships it; the executor and checker read `initial_config`,
    # `involved_classes` and `id` from it.
    entry: Mapping[str, Any]
    ground_truth: tuple[tuple[str, ...], ...]
    # Tools visible in each turn: miss_func's held-out functions appear from their turn on.
    turn_tools: tuple[tuple[ToolSpec, ...], ...]

    @property
    def long_context(self) -> bool:
        return "long_context" in self.id or "composite" in self.id

    def tools(self, turn: int) -> tuple[ToolSpec, ...]:
        return self.turn_tools[min(max(turn, 0), len(self.turn_tools) - 1)]


def new_tag() -> str:
    return f"acon_{uuid.uuid4().hex}"


def forget(tag: str) -> None:
    """Delete every simulator instance BFCL cached under `tag` (including `_eval` variants)."""
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

    space = vars(multi_turn_utils)
    # list() copies the keys in one step, so episodes on other threads may add theirs meanwhile.
    for key in [key for key in list(space) if key.startswith(tag + "_")]:
        space.pop(key, None)


class BfclEnvironment(Environment):
    """A BFCL multi-turn task for one episode; `check` runs BFCL's official `multi_turn_checker`."""

    def __init__(self, case: BfclCase) -> None:
        self.case = case
        self.tag = new_tag()
        self._release = weakref.finalize(self, forget, self.tag)
        self._release.atexit = False
        self._methods: dict[str, Any] | None = None
        self._decoded: list[list[list[str]]] = [[] for _ in case.ground_truth]

    @property
    def decoded(self) -> list[list[list[str]]]:
        """The executed call strings per turn, one step per call, as the checker takes them."""
        return [[list(step) for step in turn] for turn in self._decoded]

    def tools(self, turn: int) -> Sequence[ToolSpec]:
        return self.case.tools(turn)

    def call(self, call: ToolCall, turn: int) -> ToolOutput:
        if not 0 <= turn < len(self._decoded):
            return _error(f"Error: turn {turn} is outside this task's {len(self._decoded)} turns")
        text = call_string(call.name, call.arguments)
        try:
            name, arguments = validate_call(text, {tool.name for tool in self.tools(turn)})
        except UnsafeCall as exc:
            return _error(f"Error: call refused: {exc}")
        method = self._bound_methods().get(name)
        if method is None:
            return _error(f"Error: {name!r} is documented but not implemented by the simulator")
        self._decoded[turn].append([text])
        try:
            result = method(**arguments)
        except Exception as exc:  # the simulator's failure is the agent's observation, as in BFCL
            return _error(f"Error during execution: {exc}")
        return _render(result)

    def check(self, answers: Sequence[str | None]) -> CheckResult:
        """BFCL's verdict, plus its harness rule that every turn must have been finished.

        A turn counts as finished when it has an answer (possibly empty); `None` means the turn was
        cut off (BFCL force-quits a task after 20 steps in one turn, and fails it).
        """
        from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

        expected = len(self.case.ground_truth)
        finished = sum(answer is not None for answer in answers)
        if len(answers) != expected or finished != expected:
            return CheckResult(
                passed=False,
                reasons=(f"multi_turn:force_terminated: {finished} of {expected} turns finished",),
            )
        tag = new_tag()
        try:
            verdict = multi_turn_checker(
                self.decoded,
                [list(turn) for turn in self.case.ground_truth],
                dict(self.case.entry),
                self.case.category,
                tag,
            )
        except Exception as exc:  # the checker asserts on malformed input; that is a failed episode
            verdict = {
                "valid": False,
                "error_type": "multi_turn:checker_error",
                "error_message": f"{type(exc).__name__}: {exc}",
            }
        finally:
            forget(tag)
        if verdict.get("valid"):
            return CheckResult(passed=True)
        return CheckResult(passed=False, reasons=_reasons(verdict))

    def close(self) -> None:
        self._methods = None
        self._release()

    def _bound_methods(self) -> dict[str, Any]:
        if self._methods is None:
            from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import execute_multi_turn_func_call

            _, instances = execute_multi_turn_func_call(
                [],
                dict(self.case.entry["initial_config"]),
                list(self.case.entry["involved_classes"]),
                self.tag,
                self.case.id,
                long_context=self.case.long_context,
                is_evaL_run=False,
            )
            methods: dict[str, Any] = {}
            for class_name in self.case.entry["involved_classes"]:
                for name, method in inspect.getmembers(instances[class_name], predicate=inspect.ismethod):
                    if not name.startswith("_"):
                        methods[name] = method
            self._methods = methods
        return self._methods


def _error(line: str) -> ToolOutput:
    return ToolOutput(content=line, is_error=True, must_keep=(line,))


def _render(result: Any) -> ToolOutput:
    if isinstance(result, str):
        content = result
    elif isinstance(result, dict):
        try:
            content = json.dumps(result)
        except (TypeError, ValueError):
            content = str(result)
    else:
        content = str(result)
    error = _error_value(result)
    if error is None:
        return ToolOutput(content=content)
    fragment = f'"error": {json.dumps(error)}'
    return ToolOutput(content=content, is_error=True, must_keep=(fragment if fragment in content else content,))


def _error_value(result: Any) -> Any:
    """The `error` field of a simulator's error result (`{"error": ...}`, or a list of just that)."""
    if isinstance(result, list) and len(result) == 1:
        result = result[0]
    if isinstance(result, dict) and "error" in result:
        return result["error"]
    return None


def _reasons(verdict: Mapping[str, Any]) -> tuple[str, ...]:
    reasons = [f"{verdict.get('error_type', 'multi_turn:failed')}: {verdict.get('error_message', '')}"]
    details = verdict.get("details") or {}
    if details.get("differences"):
        reasons.append("state differs in: " + ", ".join(sorted(map(str, details["differences"]))))
    for item in (details.get("missing_items") or [])[:3]:
        text = str(item)
        reasons.append("missing result: " + (text if len(text) <= 200 else text[:200] + "…"))
    return tuple(reasons)
