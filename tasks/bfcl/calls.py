"""Call strings: built from structured calls, checked with `ast` before anything evaluates them.

BFCL executes call strings with `eval` (its only guard is a short name blocklist), and its checker
re-executes every string the agent made. So a string is built here from the structured call, the
way BFCL's own function-calling handlers do, and accepted only if it is one call of a visible tool
with literal keyword arguments. Anything else (`__import__('os').system(...)`, attribute access,
nested calls, names, star-arguments) is refused before it reaches a simulator or the checker.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Collection, Mapping, Sequence
from typing import Any


class UnsafeCall(ValueError):
    """A call string that is not a single literal-argument call of a visible tool."""


def call_string(name: str, arguments: Mapping[str, Any]) -> str:
    """The call as BFCL writes it (`model_handler.utils.convert_to_function_call`)."""
    return f"{name}({','.join(f'{k}={v!r}' for k, v in arguments.items())})"


def validate_call(text: str, allowed: Collection[str]) -> tuple[str, dict[str, Any]]:
    """Name and keyword arguments of `text`, or `UnsafeCall` saying why it is refused."""
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError) as exc:
        raise UnsafeCall(f"not a Python call expression ({exc.__class__.__name__})") from None
    node = tree.body
    if not isinstance(node, ast.Call):
        raise UnsafeCall("not a single function call")
    if not isinstance(node.func, ast.Name):
        raise UnsafeCall("the called function must be a plain tool name")
    name = node.func.id
    if name not in allowed:
        raise UnsafeCall(f"{name!r} is not one of the tools available in this turn")
    if not text.startswith(f"{name}("):  # BFCL's executor resolves names only in this form
        raise UnsafeCall(f"the call must be written as {name}(...)")
    if node.args:
        raise UnsafeCall("positional arguments are not accepted")
    arguments: dict[str, Any] = {}
    for keyword in node.keywords:
        if keyword.arg is None:
            raise UnsafeCall("**-arguments are not accepted")
        if keyword.arg in arguments:
            raise UnsafeCall(f"argument {keyword.arg!r} given twice")
        if not _literal(keyword.value):
            raise UnsafeCall(f"argument {keyword.arg!r} is not a literal value")
        arguments[keyword.arg] = ast.literal_eval(keyword.value)
    return name, arguments


def _literal(node: ast.AST) -> bool:
    """Constants (str, int, float, bool, None), lists, tuples, dicts of them, and negated numbers."""
    if isinstance(node, ast.Constant):
        return node.value is None or type(node.value) in (str, int, float, bool)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        return isinstance(node.operand, ast.Constant) and type(node.operand.value) in (int, float)
    if isinstance(node, ast.List | ast.Tuple):
        return all(_literal(item) for item in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _literal(k) for k in node.keys) and all(_literal(v) for v in node.values)
    return False


def parse_reference_call(text: str, parameters: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """A ground-truth string (which may pass arguments by position) as name and keyword arguments.

    `parameters` are the method's parameter names in order, used to name positional arguments.
    """
    node = ast.parse(text, mode="eval").body
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        raise ValueError(f"ground-truth call {text!r} is not a plain call")
    arguments = {parameters[i]: ast.literal_eval(arg) for i, arg in enumerate(node.args)}
    arguments.update({kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg is not None})
    return node.func.id, arguments


def parameter_names(method: Any) -> list[str]:
    return [p for p in inspect.signature(method).parameters if p != "self"]
