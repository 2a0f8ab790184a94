"""``import verifiers.legacy as vf`` and the ``verifiers.legacy.*`` module paths."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import verifiers
import verifiers.legacy as legacy


def test_legacy_answers_the_top_level_names() -> None:
    assert legacy.SingleTurnEnv is verifiers.SingleTurnEnv
    assert legacy.UserMessage is verifiers.UserMessage
    assert legacy.__all__ == verifiers.__all__


def test_legacy_module_paths_are_the_same_modules() -> None:
    import verifiers.legacy.envs.tool_env
    import verifiers.legacy.types

    import verifiers.envs.tool_env
    import verifiers.types

    assert verifiers.legacy.types is verifiers.types
    assert verifiers.legacy.envs.tool_env is verifiers.envs.tool_env
    from verifiers.legacy.utils.data_utils import extract_boxed_answer

    assert extract_boxed_answer("\\boxed{7}") == "7"


def test_moved_0_3_paths_resolve() -> None:
    from verifiers.legacy.envs.experimental.gym_env import GymEnv
    from verifiers.legacy.envs.experimental.mcp_env import MCPEnv
    from verifiers.legacy.envs.integrations.reasoninggym_env import ReasoningGymEnv
    from verifiers.legacy.envs.integrations.textarena_env import TextArenaEnv

    assert GymEnv is verifiers.GymEnv and MCPEnv is verifiers.MCPEnv
    assert ReasoningGymEnv is verifiers.ReasoningGymEnv
    assert TextArenaEnv is verifiers.TextArenaEnv


def test_a_classic_module_written_against_verifiers_legacy_runs() -> None:
    code = textwrap.dedent(
        """
        import verifiers.legacy as vf
        from verifiers.legacy.rubrics.rubric import Rubric
        from verifiers.testing import ScriptedClient

        def correct(completion, answer) -> float:
            return 1.0 if completion[-1].content == answer else 0.0

        env = vf.SingleTurnEnv(dataset=[{"question": "2+2?", "answer": "4"}],
                               rubric=Rubric(funcs=[correct]))
        result = env.evaluate_sync(client=ScriptedClient(["4"]), model="m", num_examples=1)
        print(result.records[0]["reward"])
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1.0"


def test_unknown_legacy_module_is_a_module_not_found_error() -> None:
    code = "import verifiers.legacy.nothing_here"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "ModuleNotFoundError" in out.stderr and "nothing_here" in out.stderr
