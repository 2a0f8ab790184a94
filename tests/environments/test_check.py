"""``check_environment`` catches broken environments, and ``vf env validate`` reports them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

import verifiers as vf
from cli.validate_cmd import validate_command
from verifiers.testing.check import (
    CheckReport,
    EnvironmentCheckError,
    check_environment,
    check_environment_async,
)

ROWS = [{"question": f"What is {i} + {i}?", "answer": str(2 * i)} for i in range(4)]


def _env(*funcs: Any, **kwargs: Any) -> vf.Environment:
    parser = vf.Parser(extract_fn=vf.extract_boxed_answer)
    rubric = vf.Rubric(funcs=list(funcs), parser=parser)
    return vf.SingleTurnEnv(
        dataset=kwargs.pop("dataset", ROWS), parser=parser, rubric=rubric, **kwargs
    )


def exact(completion: vf.Messages, answer: str, parser: vf.Parser) -> float:
    return 1.0 if parser.parse_answer(completion) == answer else 0.0


def statuses(report: CheckReport) -> dict[str, str]:
    return {r.name: r.status for r in report.results}


async def test_a_correct_environment_passes() -> None:
    report = await check_environment_async(_env(exact))
    assert report.ok, str(report)
    assert set(statuses(report).values()) == {"pass", "skip"}
    assert statuses(report)["cleanup"] == "skip"  # no sandboxes to leak
    assert "4 rows" in report["dataset"].message
    assert "rewards: exact" in report["rubric"].message


async def test_reward_that_ignores_the_answer_fails_no_op() -> None:
    def always(completion: vf.Messages) -> float:
        return 1.0

    report = await check_environment_async(_env(always))
    assert statuses(report)["no_op"] == "fail"
    assert "should get at most 0" in report["no_op"].message
    with pytest.raises(EnvironmentCheckError, match="no_op"):
        report.raise_for_failures()


async def test_gold_answers_that_do_not_score_fail_gold() -> None:
    def never(completion: vf.Messages) -> float:
        return 0.0

    report = await check_environment_async(_env(never), num_examples=2)
    assert statuses(report)["gold"] == "fail"
    assert "2/2 gold rollouts below 1" in report["gold"].message


async def test_reward_function_that_raises_is_reported() -> None:
    def broken(completion: vf.Messages, answer: str) -> float:
        raise KeyError("oops")

    report = await check_environment_async(_env(broken))
    assert statuses(report)["gold"] == "fail"
    assert "a reward function raised" in report["gold"].message


async def test_metrics_only_rubric_fails() -> None:
    def metric(completion: vf.Messages) -> float:
        return 0.0

    env = vf.SingleTurnEnv(dataset=ROWS, rubric=vf.Rubric(funcs=[metric], weights=[0.0]))
    report = await check_environment_async(env)
    assert statuses(report)["rubric"] == "fail"
    assert "weight 0" in report["rubric"].message


async def test_environment_without_gold_skips_the_gold_check() -> None:
    rows = [{"question": "Write a haiku."}]
    report = await check_environment_async(_env(exact, dataset=rows))
    assert statuses(report)["gold"] == "skip"


async def test_rollouts_that_error_fail_no_op() -> None:
    class Crashy(vf.MultiTurnEnv):
        async def env_response(
            self, messages: vf.Messages, state: vf.State, **kw: Any
        ) -> vf.Messages:
            raise RuntimeError("env bug")

    env = Crashy(dataset=ROWS, rubric=vf.Rubric(funcs=[exact]), max_turns=3)
    report = await check_environment_async(env, num_examples=1)
    assert statuses(report)["no_op"] == "fail"
    assert "RuntimeError: env bug" in report["no_op"].message
    assert statuses(report)["records"] == "skip"


async def test_slow_rollouts_hit_the_time_limit() -> None:
    import asyncio

    class Slow(vf.MultiTurnEnv):
        async def env_response(
            self, messages: vf.Messages, state: vf.State, **kw: Any
        ) -> vf.Messages:
            await asyncio.Event().wait()  # never answers
            return []

    env = Slow(dataset=ROWS, rubric=vf.Rubric(funcs=[exact]), max_turns=3)
    report = await check_environment_async(env, num_examples=1, timeout_s=0.5)
    assert report["no_op"].status == "fail"
    assert report["no_op"].message == "did not finish within 0.5 s"
    assert report["no_op"].error_type == "TimeoutError"


async def test_unknown_id_fails_load_and_skips_the_rest() -> None:
    report = await check_environment_async("no-such-environment-xyz")
    assert report["load"].status == "fail"
    assert report["load"].error_type == "EnvironmentNotFoundError"
    assert [r.status for r in report.results[1:]] == ["skip"] * 6


def test_sync_facade_and_raise_on_failure() -> None:
    report = check_environment(_env(exact), num_examples=1)
    assert report.ok
    assert json.loads(json.dumps(report.as_dict()))["ok"] is True
    with pytest.raises(EnvironmentCheckError, match="load"):
        check_environment("no-such-environment-xyz", raise_on_failure=True)


async def test_sync_facade_refuses_a_running_loop() -> None:
    with pytest.raises(vf.ConfigError, match="check_environment_async"):
        check_environment(_env(exact))


def _app() -> typer.Typer:
    app = typer.Typer()
    app.command("validate")(validate_command)

    @app.command("other")
    def other() -> None:  # a second command keeps "validate" a named subcommand
        pass

    return app


def test_validate_command_prints_a_table_and_sets_the_exit_code() -> None:
    runner = CliRunner()
    ok = runner.invoke(_app(), ["validate", "wordle", "-a", '{"max_guesses": 3}', "-n", "2"])
    assert ok.exit_code == 0, ok.output
    for name in ("load", "dataset", "rubric", "gold", "no_op", "records", "cleanup"):
        assert name in ok.output
    assert "wordle: ok" in ok.output

    failed = runner.invoke(_app(), ["validate", "wordle", "-n", "1", "--max-no-op-reward", "-1"])
    assert failed.exit_code == 1
    assert "1 check failed: no_op" in failed.output

    as_json = runner.invoke(_app(), ["validate", "wordle", "-n", "1", "--json"])
    assert as_json.exit_code == 0
    assert json.loads(as_json.stdout)["ok"] is True


def test_validate_json_stays_clean_when_the_environment_prints(tmp_path: Path) -> None:
    package = tmp_path / "chatty"
    package.mkdir()
    (package / "pyproject.toml").write_text(
        '[project]\nname = "chatty"\nversion = "0.1.0"\n'
        '[project.entry-points."verifiers.environments"]\nchatty = "chatty_env:load_environment"\n'
    )
    (package / "chatty_env.py").write_text(
        "import verifiers as vf\n"
        "print('importing')\n"
        "def exact(completion, answer) -> float:\n"
        "    print('scoring')\n"
        "    return float(completion[-1]['content'] == answer)\n"
        "def load_environment():\n"
        "    rows = [{'question': 'q', 'answer': 'a'}]\n"
        "    return vf.SingleTurnEnv(dataset=rows, rubric=vf.Rubric(funcs=[exact]))\n"
    )
    result = CliRunner().invoke(_app(), ["validate", str(package), "-n", "1", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["ok"] is True
    assert "scoring" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["validate", "wordel"], "'wordel' is not installed"),
        (["validate", "wordle", "-a", '{"max_guesss": 3}'], "did you mean 'max_guesses'"),
        (["validate", "wordle", "-a", "{bad"], "not valid JSON"),
    ],
)
def test_validate_command_bad_input_exits_2(args: list[str], message: str) -> None:
    result = CliRunner().invoke(_app(), args)
    assert result.exit_code == 2
    assert message in result.output


async def test_leaked_sandboxes_fail_cleanup() -> None:
    from verifiers.sandbox.bwrap import bwrap_available

    if not bwrap_available():
        pytest.skip("needs bubblewrap")

    class Leaky(vf.SandboxEnv):
        async def destroy_sandbox(self, state: vf.State) -> None:  # not a cleanup hook any more
            return None

    env = Leaky(dataset=ROWS, rubric=vf.Rubric(funcs=[exact]), max_turns=2)
    try:
        report = await check_environment_async(env, num_examples=2)
        assert report["cleanup"].status == "fail"
        assert "still live" in report["cleanup"].message
    finally:
        await env.close()
    assert env.active_sandboxes == set()

    healthy = vf.SandboxEnv(dataset=ROWS, rubric=vf.Rubric(funcs=[exact]), max_turns=2)
    report = await check_environment_async(healthy, num_examples=2)
    await healthy.close()
    assert report["cleanup"].status == "pass"


def test_validate_command_checks_a_package_directory_before_install(tmp_path: Path) -> None:
    pkg = tmp_path / "echo-env"
    (pkg / "vf_echo_env_xyz").mkdir(parents=True)
    (pkg / "pyproject.toml").write_text(
        '[project]\nname = "vf-echo-env-xyz"\nversion = "0.0.1"\n'
        '[project.entry-points."verifiers.environments"]\n'
        'echo-env-xyz = "vf_echo_env_xyz:load_environment"\n'
    )
    (pkg / "vf_echo_env_xyz" / "__init__.py").write_text(
        "import verifiers as vf\n\n"
        "def load_environment(n: int = 2):\n"
        "    rows = [{'question': f'Say {i}', 'answer': str(i)} for i in range(n)]\n"
        "    def exact(completion, answer, parser):\n"
        "        return 1.0 if parser.parse_answer(completion) == answer else 0.0\n"
        "    return vf.SingleTurnEnv(dataset=rows, rubric=vf.Rubric(funcs=[exact]))\n"
    )
    runner = CliRunner()
    ok = runner.invoke(_app(), ["validate", str(pkg), "-a", '{"n": 3}'])
    assert ok.exit_code == 0, ok.output
    assert "echo-env-xyz: ok" in ok.output
    assert "3 rows" in ok.output

    typo = runner.invoke(_app(), ["validate", str(pkg), "-a", '{"m": 3}'])
    assert typo.exit_code == 2 and "does not take argument(s) 'm'" in typo.output

    (pkg / "pyproject.toml").write_text('[project]\nname = "x"\n')
    missing = runner.invoke(_app(), ["validate", str(pkg)])
    assert missing.exit_code == 2 and "exactly one entry point" in missing.output
