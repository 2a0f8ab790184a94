"""Classic (0.3.x) behaviours that environments written for it rely on, exactly as 0.3.1 has them.

Each test here exercises one behaviour with an environment of our own (upstream's own tests run
in ``test_upstream_031.py``).
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from datasets import Dataset

import verifiers as vf
from verifiers.testing import ScriptedClient


def rows(n: int = 2) -> Dataset:
    return Dataset.from_list([{"question": f"q{i}", "answer": f"a{i}"} for i in range(n)])


async def run(env: vf.Environment, client: vf.Client, **kw: Any) -> vf.EvalResult:
    kw.setdefault("num_examples", -1)
    kw.setdefault("rollouts_per_example", 1)
    return await vf.evaluate_async(env, client, "m", keep_states=True, **kw)


# ---------------------------------------------------------------- constructor keywords


def test_unknown_constructor_keywords_become_attributes(caplog: pytest.LogCaptureFixture) -> None:
    class Game(vf.MultiTurnEnv):
        def __init__(self, board_size: int = 3, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.board_size = board_size

        async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> Any:
            return []

    with caplog.at_level(logging.DEBUG, logger="verifiers.envs"):
        env = Game(dataset=rows(), board_size=4, difficulty="hard", max_workers=8)
    assert env.board_size == 4
    assert env.difficulty == "hard"  # type: ignore[attr-defined]
    assert env.max_workers == 8  # type: ignore[attr-defined]
    logged = " ".join(r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG)
    assert "difficulty" in logged and "max_workers" in logged


def test_environment_has_a_logger_tool_defs_and_requires_group_rollouts() -> None:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @vf.group_reward
    def spread(completions: list[Any]) -> list[float]:
        return [0.0] * len(completions)

    env = vf.ToolEnv(dataset=rows(), tools=[add])
    assert isinstance(env.logger, logging.Logger)
    assert env.tool_defs is not None and env.tool_defs[0].name == "add"
    assert env.tool_defs[0].parameters["required"] == ["a", "b"]
    assert not env.requires_group_rollouts
    grouped = vf.SingleTurnEnv(dataset=rows(), rubric=vf.Rubric(funcs=[spread]))
    assert grouped.requires_group_rollouts
    # classic vf.Tool records and {name, description, parameters} mappings are accepted
    tool = vf.Tool(name="echo", description="Echo.", parameters={"type": "object"})
    env2 = vf.SingleTurnEnv(dataset=rows(), tool_defs=[tool, {"name": "ping", "parameters": {}}])
    assert [t.name for t in env2.tool_defs or []] == ["echo", "ping"]
    assert env2.oai_tools[0]["function"]["name"] == "echo"


# ---------------------------------------------------------------- stop conditions


class ScoresInStop(vf.MultiTurnEnv):
    """Scores the model's move inside its own stop condition (a common classic idiom)."""

    @vf.stop
    async def game_over(self, state: vf.State) -> bool:
        last = state["trajectory"][-1]["completion"] if state["trajectory"] else None
        if last is not None:
            text = last[-1]["content"] if isinstance(last, list) else str(last)
            state["score"] = 1.0 if text == state["answer"] else 0.0
        return state.get("score") == 1.0

    async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> Any:
        return [{"role": "user", "content": "again"}]


async def test_own_stop_condition_sees_the_last_turn_before_max_turns() -> None:
    def from_state(state: vf.State, **_: Any) -> float:
        return float(state.get("score", 0.0))

    env = ScoresInStop(dataset=rows(1), max_turns=1, rubric=vf.Rubric(funcs=[from_state]))
    result = await run(env, ScriptedClient(replies=["a0"]))
    state = result.states[0]
    assert state["stop_condition"] == "game_over"
    assert state["reward"] == 1.0


def test_built_in_stop_conditions_run_at_the_default_priority_by_name() -> None:
    env = ScoresInStop(dataset=rows(1), max_turns=3)
    names = [c.__name__ for c in env._stop_conditions]
    assert names[0] == "has_error"
    rest = names[1:]
    assert rest == sorted(rest)
    assert rest.index("game_over") < rest.index("max_turns_reached")


# ---------------------------------------------------------------- clients written for 0.3.x


class ClassicClient(vf.Client):
    """A client of the classic shape: returns ``vf.Response`` records, without usage, and
    answers without ever suspending."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.calls = 0

    async def get_response(  # type: ignore[override]
        self, prompt: Any, model: str, sampling_args: Any, tools: Any = None, **kwargs: Any
    ) -> Any:
        self.calls += 1
        return vf.Response(
            id="r",
            created=0,
            model=model,
            usage=None,
            message=vf.ResponseMessage(content=self.text, finish_reason="stop"),
        )


async def test_a_client_returning_classic_responses_without_usage_is_scored() -> None:
    def exact(completion: Any, answer: str, **_: Any) -> float:
        return 1.0 if completion[-1]["content"] == answer else 0.0

    env = vf.SingleTurnEnv(dataset=rows(1), rubric=vf.Rubric(funcs=[exact]))
    result = await run(env, ClassicClient("a0"))
    assert result.states[0]["reward"] == 1.0
    assert result.states[0]["error"] is None


async def test_timeout_fires_with_a_client_that_never_suspends() -> None:
    class Endless(vf.MultiTurnEnv):
        async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> Any:
            return [{"role": "user", "content": "go on"}]

    env = Endless(dataset=rows(1), timeout_seconds=0.2)
    state = await env.rollout(env.get_rows()[0], ClassicClient("more"), "m")
    assert state["stop_condition"] == "timeout_reached"
    assert state["is_truncated"]


# ---------------------------------------------------------------- State, parsers, rubrics


async def test_state_built_from_an_input_row_scores_with_math_rubric() -> None:
    row = {"prompt": "solve", "answer": "1/2", "info": {}, "example_id": 3}
    state = vf.State(input=row)
    assert state["answer"] == "1/2" and state.get("example_id") == 3 and state.prompt == "solve"
    assert state.get("task", "none") == "none"
    state["completion"] = "so \\boxed{0.5}"
    rubric = vf.MathRubric(max_workers=1)
    await rubric.score_rollout(state)
    assert state["metrics"]["correct_answer"] == 1.0 and state["reward"] == 1.0


async def test_parse_answer_returns_what_parse_returns() -> None:
    class FieldsParser(vf.Parser):
        def parse(self, text: str) -> Any:
            key, _, value = text.partition("=")
            return {key.strip(): value.strip()}

    parser = FieldsParser()
    completion = [{"role": "assistant", "content": "move = e4"}]
    assert parser.parse_answer(completion) == {"move": "e4"}

    def valid(completion: Any, answer: str, parser: vf.Parser) -> float:
        parsed = parser.parse_answer(completion)
        return 1.0 if isinstance(parsed, dict) and parsed.get("move") == answer else 0.0

    state = vf.State(input={"prompt": [], "answer": "e4"}, completion=completion)
    await vf.Rubric(funcs=[valid], parser=parser).score_rollout(state)
    assert state["reward"] == 1.0
    assert isinstance(parser.logger, logging.Logger)


def test_rubric_private_helpers_of_the_classic_api() -> None:
    def a(completion: Any) -> float:
        return 1.0

    def spread(completions: list[Any]) -> list[float]:
        return [0.0] * len(completions)

    rubric = vf.Rubric(funcs=[a, spread], weights=[1.0, 0.5])
    assert rubric._get_reward_funcs() == [a, spread]
    assert rubric._get_reward_func_names() == ["a", "spread"]
    assert rubric._get_reward_weights() == [1.0, 0.5]
    assert not rubric._is_group_func(a) and rubric._is_group_func(spread)
    group = vf.RubricGroup(rubrics=[rubric, vf.Rubric(funcs=[a])])
    assert group._get_reward_func_names() == ["a", "spread", "a"]
    assert isinstance(rubric.logger, logging.Logger)


def test_math_verify_errors_score_zero_but_interrupts_propagate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from verifiers.rubrics import math_rubric

    # a generous timeout: the first call imports math-verify, slow on a busy machine
    assert math_rubric.verify_response("\\boxed{2}", "2", 1000, timeout_seconds=120)[0] == 1.0

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("cannot parse")

    monkeypatch.setattr(math_rubric, "parse", broken)
    assert math_rubric.verify_response("\\boxed{2}", "2", 1000)[0] == 0.0

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(math_rubric, "parse", interrupted)
    with pytest.raises(KeyboardInterrupt):
        math_rubric.verify_response("\\boxed{2}", "2", 1000)


# ---------------------------------------------------------------- judges and text rollouts


async def test_judge_prompt_with_placeholders_the_environment_fills() -> None:
    template = "Q: {question}\nA: {answer}\nR: {response}\nOptions: {choices}"
    rubric = vf.JudgeRubric(judge_client=ScriptedClient(replies=["yes"]), judge_prompt=template)
    state = vf.State(input={"prompt": [{"role": "user", "content": "pick"}], "answer": "b"})
    with pytest.raises(vf.ConfigError, match="judge_prompt cannot be filled"):
        await rubric.judge(state["prompt"], [{"role": "assistant", "content": "b"}], "b")
    # the environment fills its own placeholder, then judges
    rubric.judge_prompt = template.replace("{choices}", "a, b")
    verdict = await rubric.judge(state["prompt"], [{"role": "assistant", "content": "b"}], "b")
    assert verdict == "yes"


async def test_text_prompt_rollouts_are_scored_as_messages() -> None:
    def last_content(completion: Any, answer: str) -> float:
        # a reward written for 0.3.x: completions are messages, also for text prompts
        return 1.0 if completion[-1].get("content") == answer else 0.0

    ds = Dataset.from_dict({"prompt": ["2+2=", "3+3="], "answer": ["4", "6"]})
    env = vf.SingleTurnEnv(
        dataset=ds, message_type="completion", rubric=vf.Rubric(funcs=[last_content])
    )
    result = await run(env, ScriptedClient(responder=lambda p: "4"))
    assert [s["reward"] for s in result.states] == [1.0, 0.0]
    state = result.states[0]
    assert state["prompt"] == [{"role": "text", "content": "2+2="}]
    assert state["completion_text"] == "4" and state["prompt_text"] == "2+2="


# ---------------------------------------------------------------- EnvGroup


async def test_env_group_routes_by_info_env_id_with_default_and_repeated_names() -> None:
    def is_a0(completion: Any) -> float:
        return 1.0 if completion[-1]["content"] == "a0" else 0.0

    def always(completion: Any) -> float:
        return 0.5

    first = vf.SingleTurnEnv(dataset=rows(1), rubric=vf.Rubric(funcs=[is_a0]))
    second = vf.SingleTurnEnv(dataset=rows(1), rubric=vf.Rubric(funcs=[always]))
    group = vf.EnvGroup([first, second])  # two environments of one class: no name clash
    assert group.env_names == ["env_0", "env_1"]
    data = group.get_dataset()
    assert [i["env_id"] for i in data["info"]] == ["env_0", "env_1"]
    result = await run(group, ScriptedClient(responder=lambda p: "a0"))
    by_id = {s["example_id"]: s for s in result.states}
    assert by_id[0]["reward"] == 1.0 and by_id[1]["reward"] == 0.5
    # a repeated name is accepted; the last environment of that name gets its rows
    same = vf.EnvGroup([first, second], env_names=["x", "x"])
    assert same.get_env_for_name("x") is second
    with pytest.raises(ValueError, match="No environment found"):
        same.get_env_for_name("y")


async def test_env_group_rubric_lines_up_metrics_of_all_members() -> None:
    def f1(completion: Any) -> float:
        return 0.8

    def f2(completion: Any) -> float:
        return 0.6

    a = vf.SingleTurnEnv(dataset=rows(1), rubric=vf.Rubric(funcs=[f1]))
    b = vf.SingleTurnEnv(dataset=rows(1), rubric=vf.Rubric(funcs=[f2]))
    from verifiers.envs.env_group import EnvGroupRubric

    rubric = EnvGroupRubric({"a": a, "b": b})
    assert rubric.all_reward_names == ["f1", "f2", "num_turns"]
    state = vf.State(
        input={"prompt": [], "answer": "", "info": {"env_id": "a"}},
        completion=[{"role": "assistant", "content": "x"}],
    )
    await rubric.score_rollout(state)
    assert state["reward"] == 0.8 and state["metrics"]["f2"] == 0.0


def test_env_group_keeps_info_as_json_when_members_clash() -> None:
    a = vf.SingleTurnEnv(dataset=[{"question": "q", "info": {"level": 1}}])
    b = vf.SingleTurnEnv(dataset=[{"question": "q", "info": {"level": "hard"}}])
    group = vf.EnvGroup([a, b], env_names=["a", "b"])
    rows_ = group.get_rows("train")
    assert [r["info"] for r in rows_] == [
        {"level": 1, "env_id": "a"},
        {"level": "hard", "env_id": "b"},
    ]


async def test_hand_built_states_and_abstract_multi_turn_env() -> None:
    with pytest.raises(TypeError, match="env_response"):
        vf.MultiTurnEnv(dataset=rows())  # type: ignore[abstract]
    env = vf.SingleTurnEnv(dataset=rows())
    # a state built by hand (no turn counter): the trajectory counts the turns
    assert not await env.is_completed({"trajectory": [], "prompt": []})  # type: ignore[arg-type]
    done = {"trajectory": [{"completion": [{"role": "assistant", "content": "x"}]}]}
    assert await env.is_completed(done)  # type: ignore[arg-type]
    with pytest.raises(NotImplementedError):
        await env.env_response([], vf.State())


async def test_cleanup_handlers_naming_env_get_their_arguments_by_name() -> None:
    seen: dict[str, Any] = {}

    class Named(vf.SingleTurnEnv):
        @vf.cleanup
        async def with_env(self, env: Any, state: vf.State) -> None:
            seen["env"], seen["state"] = env, state

        @vf.cleanup
        async def plain(self, s: vf.State) -> None:
            seen["plain"] = s

    env = Named(dataset=rows(1))
    state = await env.rollout(env.get_rows()[0], ScriptedClient(replies=["x"]), "m")
    assert seen["env"] is env and seen["state"] is state and seen["plain"] is state


# ---------------------------------------------------------------- tools


async def test_tool_results_unparsable_arguments_and_tool_metric_names() -> None:
    import json as _json

    def lookup(city: str) -> Any:
        """Facts.

        Args:
            city: the city.
        """
        return {"city": city, "parts": [{"text": "no type"}]}

    def square(x: int) -> int:
        """Square.

        Args:
            x: a number.
        """
        return x * x

    env = vf.ToolEnv(dataset=rows(1), tools=[lookup])
    message = await env.call_tool("lookup", {"city": "Oslo"}, "c1")
    assert message["content"] == str({"city": "Oslo", "parts": [{"text": "no type"}]})
    assert env.tool_monitor_rubric.tool_names == ["lookup"]
    env.add_tool(square)
    assert env.tool_monitor_rubric.tool_names == ["lookup", "square"]
    env.remove_tool(square)
    assert env.tool_monitor_rubric.tool_names == ["lookup"]

    strict = vf.ToolEnv(dataset=rows(1), tools=[square], stop_errors=[_json.JSONDecodeError])
    client = ScriptedClient(
        replies=[{"tool_calls": [{"name": "square", "arguments": "{x: 2"}]}, "done"]
    )
    state = await strict.rollout(strict.get_rows()[0], client, "m")
    assert state["error"] is not None and state["error"]["type"] == "ToolParseError"


async def test_add_model_response_hook_runs_after_each_recorded_call() -> None:
    seen: list[int] = []

    class Hooked(vf.MultiTurnEnv):
        async def add_model_response(self, state: Any, prompt_messages: Any, response: Any) -> None:
            await super().add_model_response(state, prompt_messages, response)
            seen.append(len(state["trajectory"]))
            state["trajectory"][-1]["extras"]["seen"] = True

        async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> Any:
            return [{"role": "user", "content": "again"}]

    env = Hooked(dataset=rows(1), max_turns=2)
    state = await env.rollout(env.get_rows()[0], ScriptedClient(responder=lambda p: "x"), "m")
    assert seen == [1, 2]
    assert all(step["extras"]["seen"] for step in state["trajectory"])


def test_n_rows_of_an_env_group_are_0_3s_rows() -> None:
    # -n N takes the first N rows of the eval rows; in an EnvGroup only members that have eval
    # rows contribute them (0.3.1 does not fall back to a member's training rows), in order
    from verifiers.eval_plan import select_rows

    with_eval = vf.SingleTurnEnv(
        dataset=[{"question": "t1"}, {"question": "t2"}],
        eval_dataset=[{"question": "e1"}, {"question": "e2"}],
    )
    train_only = vf.SingleTurnEnv(dataset=[{"question": "u1"}, {"question": "u2"}])
    group = vf.EnvGroup([train_only, with_eval], env_names=["b", "a"])
    picked = select_rows(group, 3)
    assert [r["prompt"][-1]["content"] for r in picked] == ["e1", "e2"]
    assert [r["prompt"][-1]["content"] for r in group.get_rows("train")] == ["u1", "u2", "t1", "t2"]


async def test_evaluate_retries_rollouts_that_hit_infrastructure_errors() -> None:
    calls: dict[str, int] = {"n": 0}

    class Flaky(vf.SingleTurnEnv):
        async def setup_state(self, state: vf.State) -> vf.State:
            calls["n"] += 1
            if calls["n"] <= 2:
                raise vf.SandboxError(f"sandbox gone ({calls['n']})")
            return state

    env = Flaky(dataset=rows(1))
    result = await run(env, ScriptedClient(responder=lambda p: "a0"), max_retries=3)
    assert calls["n"] == 3 and result.states[0]["error"] is None

    class Broken(vf.SingleTurnEnv):
        async def setup_state(self, state: vf.State) -> vf.State:
            calls["n"] += 1
            raise vf.ToolError("not retried")

    calls["n"] = 0
    result = await run(Broken(dataset=rows(1)), ScriptedClient(replies=["x"]), max_retries=3)
    assert calls["n"] == 1 and result.states[0]["error"]["type"] == "ToolError"


async def test_a_subclass_rollout_replaces_the_loop_and_is_scored() -> None:
    class Custom(vf.SingleTurnEnv):
        async def rollout(
            self, input: Any, client: Any, model: str, sampling_args: Any = None
        ) -> Any:
            state = await self.init_state(input, client, model, sampling_args)
            state["completion"] = [{"role": "assistant", "content": "custom " + state["answer"]}]
            state["is_completed"] = True
            return state

    def says_custom(completion: Any) -> float:
        return 1.0 if completion[-1]["content"].startswith("custom") else 0.0

    env = Custom(dataset=rows(2), rubric=vf.Rubric(funcs=[says_custom]))
    result = await run(env, ScriptedClient(responder=lambda p: "never asked"))
    assert [s["reward"] for s in result.states] == [1.0, 1.0]
    assert [s["completion"][-1]["content"] for s in result.states] == ["custom a0", "custom a1"]


async def test_classic_environment_accessors(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="verifiers.envs"):
        env = vf.SingleTurnEnv(dataset=rows(1), rubric=vf.Rubric(parser=vf.XMLParser(["a"])))
    assert "parser and rubric parser are different" in caplog.text
    assert env.provides_advantages is False
    state = await env.rollout(env.get_rows()[0], ScriptedClient(replies=["x"]), "m")
    usage = env.get_state_usage(state)
    assert usage is not None and set(usage) == {"input_tokens", "output_tokens"}
    with pytest.raises(vf.ConfigError, match="Either dataset or eval_dataset must be provided"):
        vf.SingleTurnEnv()


def test_eval_inputs_shuffle_before_taking_n() -> None:
    env = vf.SingleTurnEnv(dataset=rows(6))
    picked = env._get_eval_inputs(num_examples=3, rollouts_per_example=2, shuffle=True)
    order = env.get_eval_dataset().shuffle(seed=0)["example_id"][:3]
    assert [r["example_id"] for r in picked] == order * 2
    assert [r["example_id"] for r in env._get_eval_inputs(num_examples=2)] == [0, 1]


async def test_render_stop_marks_the_state_and_logs_the_error_chain(
    caplog: pytest.LogCaptureFixture,
) -> None:
    env = vf.SingleTurnEnv(dataset=rows(1))
    state = await env.init_state(env.get_rows()[0], ScriptedClient(replies=["x"]), "m")
    state["trajectory"] = [{"is_truncated": True}]

    async def never(state: Any) -> bool:
        return False

    assert await env._render_stop(state, never) is False
    assert not state.get("is_completed")
    cause = ValueError("disk gone")
    error = vf.ToolCallError("bad call")
    error.__cause__ = cause
    state["error"] = error
    with caplog.at_level(logging.ERROR):
        assert await env._render_stop(state, env.has_error) is True
    assert state["stop_condition"] == "has_error"
    assert state["is_completed"] is True and state["is_truncated"] is True
    logged = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(logged) == 1 and "ToolCallError" in logged[0] and "disk gone" in logged[0]


def test_sanitize_tool_calls_dumps_model_objects() -> None:
    from verifiers.utils.message_utils import sanitize_tool_calls

    class Call:
        def model_dump(self, exclude_none: bool = False) -> dict[str, Any]:
            dumped = {"id": "c1", "type": "function", "extra": None,
                      "function": {"name": "echo", "arguments": "{}"}}  # fmt: skip
            return {k: v for k, v in dumped.items() if v is not None or not exclude_none}

    out = sanitize_tool_calls([{"role": "assistant", "content": None, "tool_calls": [Call()]}])
    assert out[0]["tool_calls"] == [
        '{"id": "c1", "type": "function", "function": {"name": "echo", "arguments": "{}"}}'
    ]


def test_oai_tools_keyword_is_refused_with_the_replacement() -> None:
    schema = {"type": "function", "function": {"name": "echo", "parameters": {}}}
    with pytest.raises(vf.ConfigError, match=r"`oai_tools` is no longer supported.*tool_defs="):
        vf.SingleTurnEnv(dataset=rows(1), oai_tools=[schema])
    assert isinstance(vf.ConfigError("x"), ValueError)


async def test_init_state_reads_task_payloads_and_row_tools() -> None:
    import json

    env = vf.SingleTurnEnv(dataset=rows(1))
    row = env.get_rows()[0]
    client = ScriptedClient(replies=["x"])
    payload = {"prompt": [{"role": "user", "content": "Hi"}], "answer": "a9", "custom": 1}
    state = await env.init_state({**row, "task": json.dumps(payload)}, client, "m")
    assert state["task"] == payload and state["answer"] == "a9"
    assert state["input"]["custom"] == 1 and state["prompt"][0]["content"] == "Hi"
    plain = await env.init_state(row, client, "m")
    assert plain["task"] == row["task"] and "tool_defs" not in plain
    # the row itself, as 0.3.x keeps it (a copy: a reward writing to it changes no other rollout)
    assert plain["input"] == row and plain["input"] is not row
    with pytest.raises(vf.ConfigError, match="not valid JSON"):
        await env.init_state({**row, "task": "{oops"}, client, "m")
    with pytest.raises(vf.ConfigError, match=r"info\['oai_tools'\] is no longer supported"):
        await env.init_state({**row, "info": {"oai_tools": []}}, client, "m")
    tools = [{"name": "echo", "description": "Echo", "parameters": {"type": "object"}}]
    state = await env.init_state({**row, "info": {"tool_defs": tools}}, client, "m")
    assert [(t.name, t.description) for t in state["tool_defs"]] == [("echo", "Echo")]
    assert env._rollout_tools(state) == [
        {"type": "function",
         "function": {"name": "echo", "description": "Echo", "parameters": {"type": "object"}}}
    ]  # fmt: skip


async def test_saved_error_records_name_the_type_under_error_as_0_3_does() -> None:
    class Broken(vf.SingleTurnEnv):
        async def setup_state(self, state: Any) -> Any:
            raise vf.ToolError("no tool")

    result = await run(Broken(dataset=rows(1)), ScriptedClient(replies=["x"]))
    record = result["outputs"][0]["error"]
    assert record["error"] == record["type"] == "ToolError" and "no tool" in record["message"]


async def test_maybe_retry_retries_serialised_and_raw_infra_errors() -> None:
    from verifiers.utils.async_utils import maybe_retry
    from verifiers.utils.error_utils import error_data

    tries: list[Any] = []

    async def attempt(error: Any) -> dict[str, Any]:
        tries.append(error)
        return {"error": error}

    for error in (error_data(vf.SandboxError("upload failed")), vf.SandboxError("raw")):
        await maybe_retry(attempt, max_retries=2, initial=0.0, max_wait=0.0)(error)
    assert len(tries) == 6
    calls = {"n": 0}

    async def tool_failure() -> dict[str, Any]:
        calls["n"] += 1
        return {"error": error_data(vf.ToolError("bad"))}

    await maybe_retry(tool_failure, max_retries=2, initial=0.0, max_wait=0.0)()
    assert calls["n"] == 1


async def test_env_server_run_group_refuses_a_client_that_is_no_client_config() -> None:
    env = vf.SingleTurnEnv(dataset=rows(1))

    class NeverCalled:
        async def run_group(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("the env server must not be asked")

    env.env_client = NeverCalled()
    with pytest.raises(ValueError, match=r"client must be have type ClientConfig.*not list"):
        await env.run_group(env.get_rows()[:1], [], "m", {})
