"""verifiers: environments for LLM reinforcement learning and evaluation.

``import verifiers as vf`` exposes the public API flat. Names load lazily on first use, so
``import verifiers`` stays fast and pulls in no heavy dependency (no datasets, torch, fastapi,
sqlalchemy or typer).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verifiers._lazy import lazy_exports
from verifiers._version import __version__ as __version__
from verifiers.classic.install import install as _install_classic

# the classic room's additions to the core: 0.3.x module paths (verifiers.legacy.*,
# verifiers.envs.experimental.*), the names 0.3.x's modules imported, Environment's classic methods
_install_classic()

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
    "GymEnv": "verifiers.envs.gym_env",
    "MCPEnv": "verifiers.envs.mcp_env",
    "ReasoningGymEnv": "verifiers.envs.reasoning_gym_env",
    "TextArenaEnv": "verifiers.envs.vendor_envs",
    "BrowserEnv": "verifiers.envs.vendor_envs",
    "CliAgentEnv": "verifiers.agents.cli_agent_env",
    "HarborEnv": "verifiers.envs.vendor_envs",
    "OpenEnvEnv": "verifiers.envs.vendor_envs",
    # decorators
    "stop": "verifiers.decorators",
    "cleanup": "verifiers.decorators",
    "teardown": "verifiers.decorators",
    "group_reward": "verifiers.decorators",
    "reward": "verifiers.decorators",
    "metric": "verifiers.decorators",
    "setup": "verifiers.decorators",
    "update": "verifiers.decorators",
    "advantage": "verifiers.decorators",
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
    # tools
    "tool_call": "verifiers.utils.tool_calls",
    "tool_call_message": "verifiers.utils.tool_calls",
    "OpenAIChatCompletionsClient": "verifiers.classic.clients",
    "OpenAICompletionsClient": "verifiers.classic.clients",
    "OpenAIResponsesClient": "verifiers.classic.clients",
    "AnthropicMessagesClient": "verifiers.classic.clients",
    "RendererClient": "verifiers.classic.clients",
    # evaluation and loading
    "evaluate": "verifiers.evaluation",
    "evaluate_async": "verifiers.evaluation",
    "rescore_run": "verifiers.rescore",
    "rescore_run_async": "verifiers.rescore",
    "EvalResult": "verifiers.evaluation",
    "load_environment": "verifiers.loading",
    "list_environments": "verifiers.loading",
    "load_example_dataset": "verifiers.utils.data_utils",
    "setup_logging": "verifiers.utils.logging_utils",
    "print_prompt_completions_sample": "verifiers.utils.logging_utils",
    "log_level": "verifiers.utils.logging_utils",
    "quiet_verifiers": "verifiers.utils.logging_utils",
    "ensure_keys": "verifiers.utils.config_utils",
    "MissingKeyError": "verifiers.utils.config_utils",
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
    "DatasetBuilder": "verifiers.types",
    "Endpoints": "verifiers.types",
    "TaskSplit": "verifiers.types",
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

# names the classic (0.3.x) top level forwards from its types and errors modules: they resolve
# (``vf.UserMessage``) but stay out of ``__all__``, as they are out of 0.3.x's
_CLASSIC_FORWARDS: dict[str, str] = {
    **dict.fromkeys(["Error", "TunnelError", "BrowserSandboxError"], "verifiers.errors"),
    **dict.fromkeys(
        """AssistantMessage BaseRolloutInput ClientConfig ClientType ContentPart CustomBaseModel
        EndpointApi EndpointClient EndpointClientConfig ErrorData EvalConfig EvalCost
        EvalRunConfig FinishReason GenerateMetadata GenerateOutputs GenericContentPart
        GroupRewardFunc ImageUrlContentPart ImageUrlSource IndividualRewardFunc
        InputAudioContentPart InputAudioSource JsonPrimitive LogCallback MessageContent
        MessageType ModelPricing ProgressCallback Response ResponseMessage ResponseTokens
        RewardFunc RolloutInput RolloutOutput RolloutScore RolloutScores RolloutTiming
        RoutedExpertsPayload StartCallback StateForTaskDescriptor SystemMessage
        TASK_INPUT_FIELDS TextContentPart TextMessage ThinkingBlock TimeSpan TimeSpans
        TokenUsage Tool ToolCall ToolLike ToolMessage TrajectoryStepTokens UserMessage
        VersionInfo assert_json_serializable flatten_task_input normalize_task_payload
        task_payload_from_info""".split(),
        "verifiers.types",
    ),
}


# subpackages reachable as attributes (``vf.train``, ``vf.testing``) without importing them first
_SUBMODULES = ("train", "testing", "sandbox", "hub", "legacy")

__getattr__, __dir__ = lazy_exports(
    __name__, _EXPORTS, submodules=_SUBMODULES, unlisted=_CLASSIC_FORWARDS
)

# then the names 0.3.x's top level imports (typing helpers, vendor classes), on first use
from verifiers.classic.forward import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__, __getattr__)

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from verifiers import hub as hub
    from verifiers import legacy as legacy
    from verifiers import sandbox as sandbox
    from verifiers import testing as testing
    from verifiers import train as train
    from verifiers.agents.cli_agent_env import CliAgentEnv as CliAgentEnv
    from verifiers.classic.clients import (
        AnthropicMessagesClient as AnthropicMessagesClient,
    )
    from verifiers.classic.clients import (
        OpenAIChatCompletionsClient as OpenAIChatCompletionsClient,
    )
    from verifiers.classic.clients import (
        OpenAICompletionsClient as OpenAICompletionsClient,
    )
    from verifiers.classic.clients import (
        OpenAIResponsesClient as OpenAIResponsesClient,
    )
    from verifiers.classic.clients import RendererClient as RendererClient
    from verifiers.clients.base import Client as Client
    from verifiers.clients.base import as_client as as_client
    from verifiers.clients.endpoints import EndpointConfig as EndpointConfig
    from verifiers.clients.endpoints import load_endpoints as load_endpoints
    from verifiers.clients.native import NativeClient as NativeClient
    from verifiers.clients.openai_client import OpenAIClient as OpenAIClient
    from verifiers.clients.oracle import OracleClient as OracleClient
    from verifiers.clients.retry import RetryPolicy as RetryPolicy
    from verifiers.decorators import advantage as advantage
    from verifiers.decorators import cleanup as cleanup
    from verifiers.decorators import group_reward as group_reward
    from verifiers.decorators import metric as metric
    from verifiers.decorators import reward as reward
    from verifiers.decorators import setup as setup
    from verifiers.decorators import stop as stop
    from verifiers.decorators import teardown as teardown
    from verifiers.decorators import update as update
    from verifiers.envs.code_test_env import CodeTestEnv as CodeTestEnv
    from verifiers.envs.env_group import EnvGroup as EnvGroup
    from verifiers.envs.environment import Environment as Environment
    from verifiers.envs.gym_env import GymEnv as GymEnv
    from verifiers.envs.mcp_env import MCPEnv as MCPEnv
    from verifiers.envs.multiturn_env import MultiTurnEnv as MultiTurnEnv
    from verifiers.envs.python_env import PythonEnv as PythonEnv
    from verifiers.envs.reasoning_gym_env import ReasoningGymEnv as ReasoningGymEnv
    from verifiers.envs.sandbox_env import SandboxEnv as SandboxEnv
    from verifiers.envs.singleturn_env import SingleTurnEnv as SingleTurnEnv
    from verifiers.envs.stateful_tool_env import StatefulToolEnv as StatefulToolEnv
    from verifiers.envs.tool_env import ToolEnv as ToolEnv
    from verifiers.envs.vendor_envs import BrowserEnv as BrowserEnv
    from verifiers.envs.vendor_envs import HarborEnv as HarborEnv
    from verifiers.envs.vendor_envs import OpenEnvEnv as OpenEnvEnv
    from verifiers.envs.vendor_envs import TextArenaEnv as TextArenaEnv
    from verifiers.errors import ConfigError as ConfigError
    from verifiers.errors import EmptyModelResponseError as EmptyModelResponseError
    from verifiers.errors import EndpointError as EndpointError
    from verifiers.errors import EnvironmentNotFoundError as EnvironmentNotFoundError
    from verifiers.errors import InfraError as InfraError
    from verifiers.errors import InvalidModelResponseError as InvalidModelResponseError
    from verifiers.errors import ModelError as ModelError
    from verifiers.errors import OverlongPromptError as OverlongPromptError
    from verifiers.errors import RewardError as RewardError
    from verifiers.errors import SandboxError as SandboxError
    from verifiers.errors import ToolCallError as ToolCallError
    from verifiers.errors import ToolError as ToolError
    from verifiers.errors import ToolParseError as ToolParseError
    from verifiers.errors import VerifiersError as VerifiersError
    from verifiers.evaluation import EvalResult as EvalResult
    from verifiers.evaluation import evaluate as evaluate
    from verifiers.evaluation import evaluate_async as evaluate_async
    from verifiers.loading import list_environments as list_environments
    from verifiers.loading import load_environment as load_environment
    from verifiers.parsers.extract import extract_boxed_answer as extract_boxed_answer
    from verifiers.parsers.extract import extract_hash_answer as extract_hash_answer
    from verifiers.parsers.maybe_think_parser import MaybeThinkParser as MaybeThinkParser
    from verifiers.parsers.parser import Parser as Parser
    from verifiers.parsers.think_parser import ThinkParser as ThinkParser
    from verifiers.parsers.xml_parser import XMLParser as XMLParser
    from verifiers.rescore import rescore_run as rescore_run
    from verifiers.rescore import rescore_run_async as rescore_run_async
    from verifiers.rubrics.judge_rubric import JudgeRubric as JudgeRubric
    from verifiers.rubrics.judge_rubric import PairwiseJudgeRubric as PairwiseJudgeRubric
    from verifiers.rubrics.math_rubric import MathRubric as MathRubric
    from verifiers.rubrics.rubric import Rubric as Rubric
    from verifiers.rubrics.rubric_group import RubricGroup as RubricGroup
    from verifiers.sandbox import ExecResult as ExecResult
    from verifiers.sandbox import Sandbox as Sandbox
    from verifiers.sandbox import SandboxLimits as SandboxLimits
    from verifiers.sandbox import SandboxPool as SandboxPool
    from verifiers.sandbox import create_sandbox as create_sandbox
    from verifiers.types import AssistantMessage as AssistantMessage
    from verifiers.types import DatasetBuilder as DatasetBuilder
    from verifiers.types import Endpoints as Endpoints
    from verifiers.types import Info as Info
    from verifiers.types import Message as Message
    from verifiers.types import Messages as Messages
    from verifiers.types import ModelResponse as ModelResponse
    from verifiers.types import SamplingArgs as SamplingArgs
    from verifiers.types import State as State
    from verifiers.types import SystemMessage as SystemMessage
    from verifiers.types import TaskSplit as TaskSplit
    from verifiers.types import ToolCall as ToolCall
    from verifiers.types import ToolMessage as ToolMessage
    from verifiers.types import TrajectoryStep as TrajectoryStep
    from verifiers.types import Usage as Usage
    from verifiers.types import UserMessage as UserMessage
    from verifiers.utils.config_utils import MissingKeyError as MissingKeyError
    from verifiers.utils.config_utils import ensure_keys as ensure_keys
    from verifiers.utils.data_utils import load_example_dataset as load_example_dataset
    from verifiers.utils.logging_utils import log_level as log_level
    from verifiers.utils.logging_utils import (
        print_prompt_completions_sample as print_prompt_completions_sample,
    )
    from verifiers.utils.logging_utils import quiet_verifiers as quiet_verifiers
    from verifiers.utils.logging_utils import setup_logging as setup_logging
    from verifiers.utils.tool_calls import tool_call as tool_call
    from verifiers.utils.tool_calls import tool_call_message as tool_call_message
