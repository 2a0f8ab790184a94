"""A classic-API multi-turn environment for the env-server tests; it loads under verifiers
0.3.1 too (the cross-version tests serve it from both).

The model repeats three numbers, one per turn (``responders.solve`` answers it). Options:
``fail`` raises while loading; ``delay`` makes each environment turn of the examples listed
in ``slow_examples`` (all when ``None``) take that long; ``track_dir`` holds one file per live
rollout, created in ``setup_state`` and removed by a cleanup handler (so a test sees what was
left behind). ``state["server_pid"]`` names the process that ran the rollout. ``poison``: a
rollout whose first number is this one kills its process (leaving a file in ``poison_dir``
each time it is run).
"""

import asyncio
import os
import uuid

from datasets import Dataset

import verifiers as vf


class ProbeEnv(vf.MultiTurnEnv):
    def __init__(
        self, delay=0.0, slow_examples=None, track_dir=None, poison=None, poison_dir=None, **kwargs
    ):
        super().__init__(**kwargs)
        self.poison = poison
        self.poison_dir = poison_dir
        self.delay = delay
        self.slow_examples = slow_examples
        self.track_dir = track_dir

    async def setup_state(self, state, **kwargs):
        state["server_pid"] = os.getpid()
        if self.poison is not None and state["info"]["numbers"][0] == self.poison:
            open(os.path.join(self.poison_dir, uuid.uuid4().hex), "w").close()
            os._exit(17)
        if self.track_dir:
            state["track_file"] = os.path.join(self.track_dir, uuid.uuid4().hex)
            open(state["track_file"], "w").close()
        return state

    @vf.cleanup
    async def remove_track_file(self, state, **kwargs):
        path = state.get("track_file")
        if path and os.path.exists(path):
            os.unlink(path)

    async def env_response(self, messages, state, **kwargs):
        first = state["info"]["numbers"][0]
        if self.delay and (self.slow_examples is None or first in self.slow_examples):
            await asyncio.sleep(self.delay)
        said = sum(1 for m in messages if m["role"] == "assistant")
        numbers = state["info"]["numbers"]
        return [{"role": "user", "content": f"Say: {numbers[said]}"}]


def load_environment(
    num_examples=8,
    fail=False,
    delay=0.0,
    slow_examples=None,
    track_dir=None,
    poison=None,
    poison_dir=None,
    **kwargs,
):
    if fail:
        raise RuntimeError("serve_probe was asked to fail while loading")
    rows = []
    for i in range(num_examples):
        numbers = [i, i + 10, i + 20]
        rows.append(
            {
                "prompt": [{"role": "user", "content": f"Say: {numbers[0]}"}],
                "answer": "",
                "info": {"numbers": numbers},
            }
        )

    def all_repeated(completion, info, **kwargs):
        said = [m["content"].strip() for m in completion if m["role"] == "assistant"]
        return sum(s == str(n) for s, n in zip(said, info["numbers"], strict=False)) / 3

    return ProbeEnv(
        dataset=Dataset.from_list(rows),
        max_turns=3,
        delay=delay,
        slow_examples=slow_examples,
        track_dir=track_dir,
        poison=poison,
        poison_dir=poison_dir,
        rubric=vf.Rubric(funcs=[all_repeated]),
        **kwargs,
    )
