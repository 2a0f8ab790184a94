"""``ReasoningGymEnv``: procedural puzzles from the ``reasoning-gym`` package, single turn.

Rows come from ``reasoning_gym.create_dataset`` (one named dataset, or a ``composite`` of several
with weights), seeded, so a dataset is reproducible. A row's ``answer`` is its index in the
generated dataset; the reward is reasoning-gym's own ``score_answer`` for that entry, applied to
the parsed answer (``<answer>...</answer>`` by default).
"""

from __future__ import annotations

from typing import Any

from verifiers.envs.singleturn_env import SingleTurnEnv
from verifiers.errors import ConfigError
from verifiers.parsers.parser import Parser
from verifiers.parsers.xml_parser import XMLParser
from verifiers.rubrics.rubric import Rubric
from verifiers.types import Messages

__all__ = ["ReasoningGymEnv"]


def _reasoning_gym() -> Any:
    try:
        import reasoning_gym
    except ImportError:
        raise ConfigError(
            "ReasoningGymEnv needs the reasoning-gym package: pip install 'verifiers[rg]' "
            "(or pip install reasoning-gym)"
        ) from None
    return reasoning_gym


class ReasoningGymEnv(SingleTurnEnv):
    """Puzzles of one or several reasoning-gym datasets.

    Args:
        gym: a dataset name (``"knights_knaves"``), or a list of names and/or dicts
            ``{"name", "weight", "config"}`` mixed into a composite dataset.
        num_train_examples, num_eval_examples: rows per split (generated together, train first).
        system_prompt: default reasoning-gym's own default prompt.
        parser: default ``XMLParser(["answer"])``.
        seed: the generator seed.
    """

    def __init__(
        self,
        gym: str | list[str | dict[str, Any]],
        num_train_examples: int = 1000,
        num_eval_examples: int = 100,
        system_prompt: str | None = None,
        parser: Parser | None = None,
        seed: int = 0,
        **kwargs: Any,
    ) -> None:
        _reasoning_gym()  # a clear error before any work when the package is missing
        self.gym = gym
        self.num_train_examples = num_train_examples
        self.num_eval_examples = num_eval_examples
        self.seed = seed
        self.rg_dataset = self.build_rg_dataset(gym, num_train_examples + num_eval_examples, seed)
        train, evaluation = self.rg_to_rows(self.rg_dataset)
        if system_prompt is None:
            from reasoning_gym.utils import SYSTEM_PROMPTS

            system_prompt = SYSTEM_PROMPTS["default"]
        parser = parser or XMLParser(fields=["answer"])
        rubric = Rubric(parser=parser)
        rubric.add_reward_func(self.check_answer_reward_func)
        rubric.add_reward_func(parser.get_format_reward_func(), weight=0.0)
        super().__init__(
            dataset=train or None,
            eval_dataset=evaluation or None,
            system_prompt=system_prompt,
            parser=parser,
            rubric=rubric,
            **kwargs,
        )

    def build_rg_dataset(
        self, gym: str | list[str | dict[str, Any]], total_examples: int = 1000, seed: int = 0
    ) -> Any:
        rg = _reasoning_gym()
        if isinstance(gym, str):
            return rg.create_dataset(gym, size=total_examples, seed=seed)
        from reasoning_gym.composite import DatasetSpec

        specs = []
        for spec in gym:
            if isinstance(spec, str):
                specs.append(DatasetSpec(name=spec, weight=1.0, config={}))
            elif isinstance(spec, dict):
                specs.append(DatasetSpec(**spec))
            else:
                raise ConfigError(
                    f"gym entries must be dataset names or {{'name', 'weight', 'config'}} dicts, "
                    f"not {type(spec).__name__}"
                )
        return rg.create_dataset("composite", datasets=specs, size=total_examples, seed=seed)

    def rg_to_rows(self, rg_dataset: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        rows = [
            {
                "question": entry["question"],
                "answer": str(i),
                "info": {"source_dataset": entry["metadata"].get("source_dataset", "")},
            }
            for i, entry in enumerate(rg_dataset)
        ]
        return rows[: self.num_train_examples], rows[self.num_train_examples :]

    async def check_answer_reward_func(self, completion: Messages, answer: str) -> float:
        """reasoning-gym's score for the parsed answer to entry ``int(answer)``."""
        entry = self.rg_dataset[int(answer)]
        response = str(self.parser.parse_answer(completion) or "").strip()
        return float(self.rg_dataset.score_answer(answer=response, entry=entry))


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
