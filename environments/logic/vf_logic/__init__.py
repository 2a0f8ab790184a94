"""logic: procedural puzzles from reasoning-gym, scored by reasoning-gym's verifiers.

Every puzzle comes from a reasoning-gym generator (``reasoning_gym.create_dataset``) with a
seed, so a dataset is reproducible. ``difficulty`` is a curriculum level: each generator
attribute (number of people, board size, ...) is set to that level of its reasoning-gym
curriculum, clamped to the attribute's hardest level.

The model answers inside ``<answer>...</answer>``; the reward is reasoning-gym's own
``score_answer`` for that puzzle (1.0 exact, partial credit where the generator gives it).
"""

from __future__ import annotations

from dataclasses import asdict, is_dataclass
from typing import Any

import verifiers as vf

__all__ = ["DEFAULT_TASKS", "load_environment"]

DEFAULT_TASKS = (
    "knights_knaves",
    "zebra_puzzles",
    "syllogism",
    "mini_sudoku",
    "family_relationships",
    "self_reference",
    "circuit_logic",
    "maze",
    "tower_of_hanoi",
    "cryptarithm",
    "n_queens",
    "course_schedule",
    "shortest_path",
)

_DRAWS_PER_PUZZLE = 4
"""How many generator draws per requested puzzle may go to skipping repeats."""

SYSTEM_PROMPT = (
    "Solve the puzzle. Think it through, then write only your final answer, in exactly the "
    "format the puzzle asks for, inside <answer>...</answer>."
)


def _config(
    task: str, difficulty: int, seed: int, size: int, overrides: dict[str, Any]
) -> dict[str, Any]:
    from reasoning_gym.factory import create_curriculum, has_curriculum

    if has_curriculum(task):
        curriculum = create_curriculum(task)
        for name, attr in curriculum.attributes.items():
            curriculum.set_attr_level(name, min(difficulty, len(attr.levels) - 1))
        config = curriculum.generate_configuration({"seed": seed, "size": size})
        values = asdict(config) if is_dataclass(config) else dict(vars(config))
    else:
        values = {"seed": seed, "size": size}
    values.update(overrides)
    values["seed"], values["size"] = seed, size
    return values


def load_environment(
    tasks: list[str] | tuple[str, ...] | str = DEFAULT_TASKS,
    num_examples: int = 130,
    difficulty: int = 0,
    seed: int = 0,
    task_configs: dict[str, dict[str, Any]] | None = None,
    system_prompt: str = SYSTEM_PROMPT,
    **kwargs: Any,
) -> vf.Environment:
    """Build the logic environment.

    Args:
        tasks: reasoning-gym dataset names (a list, or one comma-separated string).
        num_examples: total number of puzzles, spread evenly over ``tasks``.
        difficulty: curriculum level (0 = easiest); clamped per attribute.
        seed: base seed; task *i* uses ``seed + i``.
        task_configs: per-task overrides of generator settings, e.g.
            ``{"knights_knaves": {"n_people": 3}}``.
        system_prompt: instructions to the model.
        **kwargs: passed on to :class:`verifiers.SingleTurnEnv`.
    """
    from datasets import Dataset
    from reasoning_gym.factory import DATASETS, create_dataset

    names = [t.strip() for t in tasks.split(",")] if isinstance(tasks, str) else list(tasks)
    unknown = [t for t in names if t not in DATASETS]
    if not names or unknown:
        raise vf.ConfigError(
            f"logic: unknown reasoning-gym task(s) {unknown or names!r}; "
            f"known tasks include {', '.join(DEFAULT_TASKS)} (see reasoning_gym.factory.DATASETS)"
        )
    if num_examples < 1:
        raise vf.ConfigError(f"logic: num_examples must be >= 1, not {num_examples}")
    if difficulty < 0:
        raise vf.ConfigError(f"logic: difficulty must be >= 0, not {difficulty}")
    overrides = task_configs or {}
    stray = sorted(set(overrides) - set(names))
    if stray:
        raise vf.ConfigError(f"logic: task_configs names tasks not in tasks: {', '.join(stray)}")

    per_task = [
        num_examples // len(names) + (1 if i < num_examples % len(names) else 0)
        for i in range(len(names))
    ]
    entries: dict[tuple[str, int], tuple[Any, dict[str, Any]]] = {}
    per_task_rows: list[list[dict[str, Any]]] = []
    for i, (task, size) in enumerate(zip(names, per_task, strict=True)):
        rows: list[dict[str, Any]] = []
        if size:
            # easy levels of some generators repeat puzzles: draw past repeats, and use them only
            # when the level has fewer distinct puzzles than asked for
            pool = size * _DRAWS_PER_PUZZLE
            dataset = create_dataset(
                task, **_config(task, difficulty, seed + i, pool, overrides.get(task, {}))
            )
            seen: set[str] = set()
            chosen: list[tuple[int, dict[str, Any]]] = []
            repeats: list[tuple[int, dict[str, Any]]] = []
            for idx in range(pool):
                if len(chosen) == size:
                    break
                entry = dataset[idx]
                (repeats if entry["question"] in seen else chosen).append((idx, entry))
                seen.add(entry["question"])
            for idx, entry in sorted(chosen + repeats[: size - len(chosen)], key=lambda p: p[0]):
                entries[(task, idx)] = (dataset, entry)
                rows.append(
                    {
                        "question": entry["question"],
                        "answer": "" if entry["answer"] is None else str(entry["answer"]),
                        "task": task,
                        "info": {"rg_task": task, "rg_index": idx, "difficulty": difficulty},
                    }
                )
        per_task_rows.append(rows)
    # interleave so that the first N examples cover every task
    ordered = _round_robin(per_task_rows)

    parser = vf.XMLParser(["think", "answer"], answer_field="answer")

    def reasoning_gym_score(completion: vf.Messages, info: dict[str, Any]) -> float:
        """reasoning-gym's verifier for this puzzle (partial credit where it gives it)."""
        dataset, entry = entries[(info["rg_task"], int(info["rg_index"]))]
        parsed = parser.parse_answer(completion)
        if not parsed or not parsed.strip():
            return 0.0
        return float(dataset.score_answer(parsed.strip(), entry))

    rubric = vf.Rubric(funcs=[reasoning_gym_score], weights=[1.0], parser=parser)
    dataset = Dataset.from_list(ordered)
    return vf.SingleTurnEnv(
        dataset=dataset,
        eval_dataset=dataset,
        system_prompt=system_prompt,
        parser=parser,
        rubric=rubric,
        **kwargs,
    )


def _round_robin(groups: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One row of each group in turn, so that the first N rows cover every task."""
    longest = max((len(g) for g in groups), default=0)
    return [g[k] for k in range(longest) for g in groups if k < len(g)]
