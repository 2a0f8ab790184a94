"""The import surface of upstream verifiers 0.3.1's classic modules resolves here.

``tests/fixtures/classic_surface.txt`` (written by ``scripts/classic_surface.py`` from the 0.3.1
wheel; nothing from upstream is imported here) lists every module of 0.3.1's classic tree under
both of its paths (``verifiers.legacy.<path>`` and ``verifiers.<path>``) and every name each one
binds, with where the name comes from. Every entry must resolve here: the surface is complete.

A name 0.3.1 imports from a third-party package that is not installed here (``anthropic``,
``prime_sandboxes``, ...) counts as resolved when asking for it raises an ``ImportError`` that
names the package to install (0.3.1 itself fails to import such modules without it).
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

import verifiers as vf

FIXTURES = Path(__file__).parent.parent / "fixtures"
SURFACE = FIXTURES / "classic_surface.txt"


def _entries() -> list[tuple[str, str | None, str]]:
    """(module path, name or None for the module itself, origin)."""
    out: list[tuple[str, str | None, str]] = []
    for line in SURFACE.read_text().splitlines():
        if not line.strip():
            continue
        where, origin = line.split()
        module, _, name = where.partition(":")
        out.append((module, name or None, origin))
    return out


def _module(path: str) -> ModuleType | None:
    try:
        return importlib.import_module(path)
    except ImportError:
        return None


def _resolves(module: ModuleType, name: str, origin: str) -> bool:
    try:
        getattr(module, name)
    except AttributeError:
        return False
    except ImportError as e:  # a third-party package that is not installed here
        package = origin.split(":")[0].split(".")[0]
        return not origin.startswith("verifiers") and f"{package!r} package" in str(e)
    return True


@cache
def _unresolved() -> frozenset[str]:
    import verifiers.legacy  # noqa: F401  (installs the module-path aliases)

    missing = set()
    for path, name, origin in _entries():
        module = _module(path)
        if name is None:
            if module is None:
                missing.add(path)
        elif module is None or not _resolves(module, name, origin):
            missing.add(f"{path}:{name}")
    return frozenset(missing)


def test_the_list_covers_both_paths_of_every_classic_module() -> None:
    modules = {m for m, name, _ in _entries() if name is None}
    for expected in (
        "verifiers",
        "verifiers.legacy",
        "verifiers.types",
        "verifiers.legacy.types",
        "verifiers.clients.client",
        "verifiers.envs.experimental.gym_env",
        "verifiers.legacy.utils.save_utils",
        "verifiers.utils.message_utils",
    ):
        assert expected in modules
    assert len(modules) == 302 and len(_entries()) > 4500


def test_imported_names_table_agrees_with_the_list() -> None:
    from verifiers.classic.imported_names import IMPORTED

    for path, name, origin in _entries():
        if (
            name is not None
            and origin not in ("defined", "module")
            and path.startswith("verifiers.")
            and not path.startswith("verifiers.legacy")
        ):
            assert IMPORTED[path][name] == origin


def test_every_entry_resolves() -> None:
    assert sorted(_unresolved()) == [], "entries of 0.3.1's classic surface that do not resolve"


# Imported names that are not the very object 0.3.1's module imported, and why:
IDENTITY_EXCEPTIONS = {
    # modules here import these from collections.abc, of which typing's are deprecated aliases
    # (same behaviour in annotations, isinstance and subscripting)
    "typing:Callable": "collections.abc.Callable",
    "typing:Awaitable": "collections.abc.Awaitable",
    # the classic Anthropic client here raises openai's error classes
    "anthropic:AuthenticationError": "openai.AuthenticationError",
    "anthropic:BadRequestError": "openai.BadRequestError",
    "anthropic:PermissionDeniedError": "openai.PermissionDeniedError",
}


def test_imported_names_are_the_objects_0_3_1_imported() -> None:
    # a name 0.3.1's module imports is that very object here (the third-party or standard
    # library object, or this package's object at the source path), not a look-alike
    import verifiers.legacy  # noqa: F401

    checked, different = 0, []
    for path, name, origin in _entries():
        if name is None or origin in ("defined", "module"):
            continue
        source, _, attr = origin.partition(":")
        module = _module(path)
        try:
            got = getattr(module, name)
            expected = getattr(importlib.import_module(source), attr)
        except ImportError:  # a package that is not installed here (see the test above)
            continue
        checked += 1
        if got is not expected and origin not in IDENTITY_EXCEPTIONS:
            different.append(f"{path}:{name} ({origin})")
    assert different == [] and checked > 2500


def test_names_issue_28_names_resolve_as_real_objects() -> None:
    from verifiers.envs.tool_env import convert_func_to_tool_def
    from verifiers.utils.message_utils import Messages
    from verifiers.utils.tool_utils import convert_func_to_tool_def as real

    assert convert_func_to_tool_def is real and Messages is vf.types.Messages
    from verifiers.types import Error

    assert Error is vf.errors.Error
    import verifiers.envs.experimental.gym_env as gym_env
    import verifiers.legacy.envs.experimental.gym_env as legacy_gym_env

    assert gym_env is legacy_gym_env and gym_env.GymEnv is vf.GymEnv
    assert gym_env.__spec__ is not None and gym_env.__spec__.name == "verifiers.envs.gym_env"


def test_a_name_from_a_missing_package_says_what_to_install() -> None:
    import importlib.util

    if importlib.util.find_spec("prime_sandboxes") is not None:
        pytest.skip("prime_sandboxes is installed here")
    with pytest.raises(ImportError, match="'prime_sandboxes' package"):
        from verifiers.envs.sandbox_env import CreateSandboxRequest  # noqa: F401


def test_top_level_names_of_0_3_1_all_are_in_all() -> None:
    # the names 0.3.1's ``verifiers.__all__`` lists are in ours (``from verifiers import *``)
    classic_all = """Parser ThinkParser MaybeThinkParser XMLParser Rubric JudgeRubric RubricGroup
    MathRubric TextArenaEnv ReasoningGymEnv GymEnv CliAgentEnv HarborEnv MCPEnv BrowserEnv
    OpenEnvEnv EndpointConfig Endpoints TaskSplit Environment MultiTurnEnv SingleTurnEnv
    PythonEnv SandboxEnv StatefulToolEnv ToolEnv EnvGroup Client extract_boxed_answer
    extract_hash_answer load_example_dataset setup_logging log_level quiet_verifiers
    load_environment print_prompt_completions_sample cleanup metric reward advantage setup stop
    teardown update ensure_keys MissingKeyError DatasetBuilder State""".split()
    assert sorted(set(classic_all) - set(vf.__all__)) == []


@pytest.mark.parametrize("name", ["TextArenaEnv", "BrowserEnv", "HarborEnv", "OpenEnvEnv"])
def test_service_bound_environments_say_what_they_need(name: str) -> None:
    cls = getattr(vf, name)
    assert issubclass(cls, vf.MultiTurnEnv)
    with pytest.raises(vf.ConfigError, match=f"{name} cannot run here: it needs") as info:
        cls(dataset=[{"question": "q", "answer": "a"}])
    assert "vf." in str(info.value)  # and what to use instead


@pytest.mark.parametrize("name", ["OpenAIResponsesClient", "RendererClient"])
def test_vendor_clients_say_what_they_need(name: str) -> None:
    with pytest.raises(vf.ConfigError, match=f"{name} is not available"):
        getattr(vf, name)(object())


def test_classic_paths_keep_import_verifiers_light() -> None:
    code = (
        "import sys, verifiers as vf; vf.UserMessage; vf.ensure_keys; vf.reward; "
        "import verifiers.legacy, verifiers.clients.client, verifiers.utils.save_utils, "
        "verifiers.utils.error_utils, verifiers.utils.usage_utils, verifiers.envs.experimental; "
        "print(sorted(m for m in ('torch','datasets','fastapi','openai','mcp','gymnasium') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_classic_pydantic_models_load_on_first_use() -> None:
    import verifiers.classic.models
    import verifiers.types

    # served by verifiers.types (and listed in its __all__) without its importing them
    assert set(verifiers.classic.models.__all__) <= set(verifiers.types.__all__)
    code = (
        "import sys, verifiers.types as t; before = 'pydantic' in sys.modules; "
        "t.Tool; print(before, 'pydantic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_a_not_available_name_says_what_it_needs_and_what_to_use() -> None:
    from verifiers.envs.experimental.sandbox_mixin import SandboxMixin, SandboxTimeouts
    from verifiers.legacy.envs.experimental import sandbox_mixin as legacy

    assert legacy.SandboxMixin is SandboxMixin  # the same module under both paths
    assert SandboxMixin.__module__ == "verifiers.envs.experimental.sandbox_mixin"

    class MyEnv(SandboxMixin):  # environment code may subclass it; constructing it explains
        pass

    for cls in (SandboxMixin, SandboxTimeouts, MyEnv):
        with pytest.raises(vf.ConfigError, match="hosted sandboxes") as info:
            cls()
        assert "is not available here" in str(info.value) and "vf.SandboxEnv" in str(info.value)
    from verifiers.utils.eval_utils import run_evaluation

    with pytest.raises(vf.ConfigError, match=r"eval_utils\.run_evaluation .*`vf eval`"):
        run_evaluation()
    from verifiers.scripts.eval import main

    with pytest.raises(vf.ConfigError, match=r"command-line programs.*`vf` command"):
        main()
    from verifiers.clients.nemorl_chat_completions_client import NeMoRLChatCompletionsClient

    with pytest.raises(vf.ConfigError, match="vendor service"):
        NeMoRLChatCompletionsClient()


def test_not_available_modules_keep_their_data_real() -> None:
    import enum
    import logging

    from verifiers.clients.anthropic_messages_client import ANTHROPIC_ADAPTIVE_THINKING_MODELS
    from verifiers.envs.experimental.composable.tasksets.swe.swe_rebench_v2 import log_parsers
    from verifiers.envs.experimental.sandbox_mixin import SandboxCreationError

    from verifiers.utils import interception_utils

    assert "claude-opus-4-6" in ANTHROPIC_ADAPTIVE_THINKING_MODELS
    assert issubclass(log_parsers.TestStatus, enum.Enum) and len(log_parsers.TestStatus) > 1
    assert issubclass(SandboxCreationError, Exception)
    with pytest.raises(SandboxCreationError):
        raise SandboxCreationError("boom")
    assert isinstance(interception_utils.logger, logging.Logger)
    with pytest.raises(AttributeError):
        interception_utils.no_such_name  # noqa: B018
    with pytest.raises(ModuleNotFoundError):
        import verifiers.envs.experimental.no_such_module  # noqa: F401


def test_the_environment_server_is_not_stood_in_for() -> None:
    # verifiers.serve and its plumbing are being built for real: no stand-ins for them
    from verifiers.classic.unavailable_names import UNAVAILABLE

    server = ("verifiers.serve", "verifiers.utils.client_utils", "verifiers.utils.serve_utils")
    assert [m for m in UNAVAILABLE if m.startswith(server)] == []
    assert "verifiers.envs.experimental.sandbox_mixin" in UNAVAILABLE


def test_not_available_modules_keep_import_verifiers_light() -> None:
    code = (
        "import sys, verifiers; print('verifiers.classic.unavailable_names' in sys.modules); "
        "import verifiers.envs.experimental.composable.tasksets.harbor.cli_gym as m; m.logger; "
        "print(sorted(x for x in ('torch','datasets','fastapi','openai','mcp','prime_sandboxes',"
        "'aiohttp') if x in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["False", "[]"]
