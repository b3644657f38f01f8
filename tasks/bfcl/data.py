"""Reading the pinned bfcl-eval package: tasks, ground truth, tool docs and simulator signatures.

Only the multi-turn executor and checker, the simulators, two constant modules and the data files
are imported, and only when a suite is loaded: `bfcl_eval.utils`, `model_handler` and
`eval_runner` pull torch and vendor SDKs, so their small helpers are reimplemented here.
"""

from __future__ import annotations

import copy
import functools
import importlib
import json
from collections.abc import Mapping
from importlib.resources.abc import Traversable
from typing import Any

import tasks.bfcl.install as install
from optimizer.errors import ConfigError
from optimizer.world.tool import ToolSpec
from tasks.bfcl.calls import parameter_names
from tasks.bfcl.retention import retention_of

MAX_STEPS_PER_TURN = 20  # BFCL's `constants.default_prompts.MAXIMUM_STEP_LIMIT`


def require() -> None:
    """Raise a one-line `ConfigError` unless the pinned bfcl-eval and mpmath are importable."""
    version = install.installed_version()
    if version is None:
        raise ConfigError("the BFCL suites need bfcl-eval, which is not installed; run `acon setup`")
    if version != install.BFCL_EVAL_VERSION:
        raise ConfigError(
            f"bfcl-eval {version} is installed but the BFCL suites are pinned to "
            f"{install.BFCL_EVAL_VERSION}; run `acon setup`"
        )
    try:
        importlib.import_module("mpmath")
    except ImportError:
        raise ConfigError("the BFCL suites need mpmath, which is not installed; run `acon setup`") from None


@functools.cache
def data_dir() -> Traversable:
    from importlib.resources import files

    return files("bfcl_eval") / "data"


def read_jsonl(*parts: str) -> list[dict[str, Any]]:
    node = data_dir()
    for part in parts:
        node = node / part
    return [json.loads(line) for line in node.read_text(encoding="utf-8").splitlines() if line.strip()]


def additional_function_prompt() -> str:
    """The user message BFCL injects in miss_func's empty turn, where held-out functions appear."""
    from bfcl_eval.constants.default_prompts import DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC

    return DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC


@functools.cache
def func_docs(class_name: str) -> tuple[dict[str, Any], ...]:
    from bfcl_eval.constants.executable_backend_config import MULTI_TURN_FUNC_DOC_FILE_MAPPING

    return tuple(read_jsonl("multi_turn_func_doc", MULTI_TURN_FUNC_DOC_FILE_MAPPING[class_name]))


@functools.cache
def tool_spec(class_name: str, name: str) -> ToolSpec:
    """The registered tool: BFCL's doc with its schema in JSON-schema types, plus retention metadata."""
    doc = next(d for d in func_docs(class_name) if d["name"] == name)
    retention, side_effect = retention_of(name)
    return ToolSpec(
        name=name,
        description=doc["description"],
        parameters=json_schema(doc["parameters"]),
        retention_class=retention,
        side_effect=side_effect,
    )


def json_schema(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """Gorilla types to JSON-schema types, as BFCL's `convert_to_tool` does for OpenAI-style tools."""
    from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI

    schema = copy.deepcopy(dict(parameters))
    schema["type"] = "object"

    def convert(node: dict[str, Any], *, describe_float: bool) -> None:
        gorilla = node.get("type", "string")
        if gorilla == "float" and describe_float:
            node["format"] = "float"
            node["description"] = node.get("description", "") + " This is a float type value."
        node["type"] = GORILLA_TO_OPENAPI.get(gorilla, "string")
        for child in node.get("properties", {}).values():
            convert(child, describe_float=True)
        if isinstance(node.get("items"), dict):
            convert(node["items"], describe_float=False)

    for prop in schema.get("properties", {}).values():
        convert(prop, describe_float=True)
    return schema


@functools.cache
def simulator_class(class_name: str) -> type:
    from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING

    return getattr(importlib.import_module(CLASS_FILE_PATH_MAPPING[class_name]), class_name)


@functools.cache
def method_parameters(class_name: str, method: str) -> tuple[str, ...]:
    return tuple(parameter_names(getattr(simulator_class(class_name), method)))
