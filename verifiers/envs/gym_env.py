"""``GymEnv``: a reset/step environment (Gymnasium, or the old Gym API) as a multi-turn text
environment.

Each dataset row is one episode: its prompt is the observation after ``reset(seed=...)`` and its
``answer`` the seed. Every model message is turned into an action (``action_parser``), passed to
``step``; the next observation is the environment's reply (a user message). The step reward is
recorded on the trajectory step (``step["reward"]``), and the default rubric sums them. The
episode ends when ``step`` reports termination or truncation, or at ``max_episode_steps``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, cast

from verifiers.decorators import cleanup, stop
from verifiers.envs.multiturn_env import MultiTurnEnv
from verifiers.errors import ConfigError
from verifiers.messages import UserMessage
from verifiers.rubrics.rubric import Rubric
from verifiers.types import Messages, State

__all__ = ["EpisodicSumRubric", "GymEnv", "StepResetEnv", "sum_step_rewards"]

# what a Gymnasium-style ``step`` returns: (obs, reward, terminated, truncated, info), or the
# older (obs, reward, done, info)
StepOut = tuple[Any, float, bool, bool, dict[str, Any]] | tuple[Any, float, bool, dict[str, Any]]


class StepResetEnv(Protocol):
    """What :class:`GymEnv` drives: ``reset(seed=...)`` returning ``obs`` or ``(obs, info)``,
    and ``step(action)`` returning ``(obs, reward, terminated, truncated, info)`` or the old
    ``(obs, reward, done, info)``. ``close()`` is called when present."""

    def reset(self, *, seed: int | None = None, **kwargs: Any) -> Any: ...

    def step(self, action: Any) -> Any: ...


def sum_step_rewards(state: State) -> float:
    """The episode's return: the sum of the rewards ``step`` gave."""
    return float(sum(float(s.get("reward") or 0.0) for s in state.get("trajectory") or []))


class EpisodicSumRubric(Rubric):
    """Reward = the episode's return (:func:`sum_step_rewards`) times ``weight``."""

    def __init__(self, weight: float = 1.0, **kwargs: Any) -> None:
        super().__init__(funcs=[sum_step_rewards], weights=[weight], **kwargs)


def _observation(reset_out: Any) -> Any:
    if isinstance(reset_out, tuple) and len(reset_out) == 2 and isinstance(reset_out[1], dict):
        return reset_out[0]
    return reset_out


class GymEnv(MultiTurnEnv):
    """Run a Gym-style environment class as a multi-turn text environment.

    Args:
        env_cls: a class (or factory) whose instances have ``reset`` and ``step``; called with
            ``env_kwargs``. For a registered Gymnasium id use
            ``env_cls=lambda **kw: gymnasium.make("FrozenLake-v1", **kw)``.
        action_parser: model text -> action (default: the text itself). An exception ends the
            episode with a step reward of 0 and the error shown to the model.
        obs_to_text: observation -> text (default ``str``; or override :meth:`obs_to_text`).
        num_train_episodes, num_eval_episodes: dataset sizes; episode *i* uses ``seed + i``.
        max_episode_steps: model turns per episode (default 1000).
        rubric: default :class:`EpisodicSumRubric`.
        **kwargs: see :class:`~verifiers.MultiTurnEnv` (``system_prompt``, ``few_shot``,
            ``parser``, ...).
    """

    def __init__(
        self,
        env_cls: Callable[..., Any],
        env_kwargs: dict[str, Any] | None = None,
        action_parser: Callable[[str], Any] | None = None,
        obs_to_text: Callable[[Any], str] | None = None,
        num_train_episodes: int = 1000,
        num_eval_episodes: int = 20,
        max_episode_steps: int | None = None,
        seed: int = 0,
        rubric: Rubric | None = None,
        **kwargs: Any,
    ) -> None:
        if not callable(env_cls):
            raise ConfigError(f"env_cls must be a class or factory, not {type(env_cls).__name__}")
        self.env_cls = env_cls
        self.env_kwargs = dict(env_kwargs or {})
        self.action_parser: Callable[[str], Any] = action_parser or (lambda text: text)
        self.obs_to_text_fn = obs_to_text
        self.num_train_episodes = num_train_episodes
        self.num_eval_episodes = num_eval_episodes
        self.seed = seed
        train, evaluation = self.gym_to_rows()
        kwargs.setdefault("max_turns", max_episode_steps or 1000)
        super().__init__(
            dataset=train or None,
            eval_dataset=evaluation or None,
            rubric=rubric or EpisodicSumRubric(),
            **kwargs,
        )

    def _make(self) -> Any:
        env = self.env_cls(**self.env_kwargs)
        if not callable(getattr(env, "reset", None)) or not callable(getattr(env, "step", None)):
            raise ConfigError(
                f"{type(env).__name__} has no reset()/step(): GymEnv needs a Gym-style environment"
            )
        return env

    def gym_to_rows(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(training rows, evaluation rows): one reset per episode, in seed order."""
        rows: list[dict[str, Any]] = []
        env = self._make()
        try:
            for i in range(self.num_train_episodes + self.num_eval_episodes):
                obs = _observation(env.reset(seed=self.seed + i))
                rows.append({"question": self.obs_to_text(obs), "answer": str(self.seed + i)})
        finally:
            _close(env)
        return rows[: self.num_train_episodes], rows[self.num_train_episodes :]

    def obs_to_text(self, obs: Any) -> str:
        """An observation as the text the model reads (override for custom formatting)."""
        return self.obs_to_text_fn(obs) if self.obs_to_text_fn is not None else str(obs)

    def wrap_response(self, text: str) -> Messages:
        return [UserMessage(content=text)]

    async def env_response(self, messages: Messages, state: State, **kwargs: Any) -> Messages:
        env = state.get("gym_env")
        if env is None:
            env = self._make()
            env.reset(seed=int(state["answer"]))
            state["gym_env"] = env
            state["gym_done"] = False
        step = cast(dict[str, Any], state["trajectory"][-1])
        text = self.parser.parse_answer(messages)
        if text is None:
            text = str(messages[-1].get("content") or "")
        try:
            action = self.action_parser(text)
        except Exception as e:  # the model's malformed action ends the episode
            state["gym_done"] = True
            step["reward"] = 0.0
            return self.wrap_response(f"Action Parsing Error: {e}")
        out = env.step(action)
        if not isinstance(out, tuple | list) or len(out) not in (4, 5):
            raise ConfigError(
                f"{type(env).__name__}.step() returned {type(out).__name__}"
                f"{f' of length {len(out)}' if isinstance(out, tuple | list) else ''}; expected "
                "(obs, reward, terminated, truncated, info) or (obs, reward, done, info)"
            )
        if len(out) == 5:
            obs, reward, terminated, truncated, info = out
        else:
            (obs, reward, terminated, info), truncated = out, False
        step["reward"] = float(reward)
        step["extras"]["gym_info"] = info
        state["gym_done"] = bool(terminated or truncated)
        text = self.obs_to_text(obs)
        if state["gym_done"]:
            text += "\nEpisode already ended."
        return self.wrap_response(text)

    @stop
    async def is_done(self, state: State) -> bool:
        return bool(state.get("gym_done", False))

    @cleanup
    async def cleanup_env(self, state: State) -> None:
        env = state.pop("gym_env", None)
        if env is not None:
            _close(env)


def _close(env: Any) -> None:
    close = getattr(env, "close", None)
    if callable(close):
        close()


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
