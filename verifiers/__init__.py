"""verifiers: environments for LLM reinforcement learning and evaluation.

``import verifiers as vf`` exposes the public API flat. Names load lazily on first use, so
``import verifiers`` stays fast and pulls in no heavy dependency (no datasets, torch, fastapi,
sqlalchemy or typer).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.9.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # environments
    "Environment": "verifiers.envs.environment",
    "MultiTurnEnv": "verifiers.envs.multiturn_env",
    "SingleTurnEnv": "verifiers.envs.singleturn_env",
    "ToolEnv": "verifiers.envs.tool_env",
    "StatefulToolEnv": "verifiers.envs.stateful_tool_env",
    "EnvGroup": "verifiers.envs.env_group",
    "SandboxEnv": "verifiers.envs.sandbox_env",
    "PythonEnv": "verifiers.envs.python_env",
    "CodeTestEnv": "verifiers.envs.code_test_env",
    # decorators
    "stop": "verifiers.decorators",
    "cleanup": "verifiers.decorators",
    "teardown": "verifiers.decorators",
    "group_reward": "verifiers.decorators",
    # rubrics
    "Rubric": "verifiers.rubrics.rubric",
    "RubricGroup": "verifiers.rubrics.rubric_group",
    "JudgeRubric": "verifiers.rubrics.judge_rubric",
    "PairwiseJudgeRubric": "verifiers.rubrics.judge_rubric",
    "MathRubric": "verifiers.rubrics.math_rubric",
    # parsers
    "Parser": "verifiers.parsers.parser",
    "XMLParser": "verifiers.parsers.xml_parser",
    "ThinkParser": "verifiers.parsers.think_parser",
    "MaybeThinkParser": "verifiers.parsers.maybe_think_parser",
    "extract_boxed_answer": "verifiers.parsers.extract",
    "extract_hash_answer": "verifiers.parsers.extract",
    # clients
    "Client": "verifiers.clients.base",
    "OpenAIClient": "verifiers.clients.openai_client",
    "NativeClient": "verifiers.clients.native",
    "OracleClient": "verifiers.clients.oracle",
    "RetryPolicy": "verifiers.clients.retry",
    "EndpointConfig": "verifiers.clients.endpoints",
    "load_endpoints": "verifiers.clients.endpoints",
    "as_client": "verifiers.clients.base",
    # evaluation and loading
    "evaluate": "verifiers.evaluation",
    "evaluate_async": "verifiers.evaluation",
    "EvalResult": "verifiers.evaluation",
    "load_environment": "verifiers.loading",
    "list_environments": "verifiers.loading",
    # sandboxes
    "Sandbox": "verifiers.sandbox",
    "ExecResult": "verifiers.sandbox",
    "SandboxLimits": "verifiers.sandbox",
    "SandboxPool": "verifiers.sandbox",
    "create_sandbox": "verifiers.sandbox",
    # types
    "State": "verifiers.types",
    "Messages": "verifiers.types",
    "Message": "verifiers.types",
    "Info": "verifiers.types",
    "SamplingArgs": "verifiers.types",
    "ModelResponse": "verifiers.types",
    "TrajectoryStep": "verifiers.types",
    "Usage": "verifiers.types",
    # errors
    "VerifiersError": "verifiers.errors",
    "ConfigError": "verifiers.errors",
    "EnvironmentNotFoundError": "verifiers.errors",
    "ModelError": "verifiers.errors",
    "EmptyModelResponseError": "verifiers.errors",
    "InvalidModelResponseError": "verifiers.errors",
    "OverlongPromptError": "verifiers.errors",
    "ToolError": "verifiers.errors",
    "ToolParseError": "verifiers.errors",
    "ToolCallError": "verifiers.errors",
    "RewardError": "verifiers.errors",
    "InfraError": "verifiers.errors",
    "EndpointError": "verifiers.errors",
    "SandboxError": "verifiers.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'verifiers' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # cache: later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from verifiers.clients.base import Client, as_client
    from verifiers.clients.endpoints import EndpointConfig, load_endpoints
    from verifiers.clients.native import NativeClient
    from verifiers.clients.openai_client import OpenAIClient
    from verifiers.clients.oracle import OracleClient
    from verifiers.clients.retry import RetryPolicy
    from verifiers.decorators import cleanup, group_reward, stop, teardown
    from verifiers.envs.code_test_env import CodeTestEnv
    from verifiers.envs.env_group import EnvGroup
    from verifiers.envs.environment import Environment
    from verifiers.envs.multiturn_env import MultiTurnEnv
    from verifiers.envs.python_env import PythonEnv
    from verifiers.envs.sandbox_env import SandboxEnv
    from verifiers.envs.singleturn_env import SingleTurnEnv
    from verifiers.envs.stateful_tool_env import StatefulToolEnv
    from verifiers.envs.tool_env import ToolEnv
    from verifiers.errors import (
        ConfigError,
        EmptyModelResponseError,
        EndpointError,
        EnvironmentNotFoundError,
        InfraError,
        InvalidModelResponseError,
        ModelError,
        OverlongPromptError,
        RewardError,
        SandboxError,
        ToolCallError,
        ToolError,
        ToolParseError,
        VerifiersError,
    )
    from verifiers.evaluation import EvalResult, evaluate, evaluate_async
    from verifiers.loading import list_environments, load_environment
    from verifiers.parsers.extract import extract_boxed_answer, extract_hash_answer
    from verifiers.parsers.maybe_think_parser import MaybeThinkParser
    from verifiers.parsers.parser import Parser
    from verifiers.parsers.think_parser import ThinkParser
    from verifiers.parsers.xml_parser import XMLParser
    from verifiers.rubrics.judge_rubric import JudgeRubric, PairwiseJudgeRubric
    from verifiers.rubrics.math_rubric import MathRubric
    from verifiers.rubrics.rubric import Rubric
    from verifiers.rubrics.rubric_group import RubricGroup
    from verifiers.sandbox import ExecResult, Sandbox, SandboxLimits, SandboxPool, create_sandbox
    from verifiers.types import (
        Info,
        Message,
        Messages,
        ModelResponse,
        SamplingArgs,
        State,
        TrajectoryStep,
        Usage,
    )
