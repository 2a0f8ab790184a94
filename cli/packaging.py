"""Environment packages on the author's side: scaffold one (``vf env init``) and build its wheel
(``vf env build``, ``vf env push``). Talking to the hub (push, install) is
:class:`verifiers.hub.HubClient`'s job."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cli._common import CLIError

_NAME_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")


def read_pyproject(path: Path) -> dict[str, object]:
    pp = path / "pyproject.toml"
    if not pp.is_file():
        raise CLIError(
            f"no pyproject.toml in {path}",
            "pass an environment package directory, or create one with `vf env init NAME`",
        )
    try:
        return tomllib.loads(pp.read_text())
    except tomllib.TOMLDecodeError as e:
        raise CLIError(f"{pp} is not valid TOML: {e}") from None


# ---------------------------------------------------------------------------- init

_PYPROJECT = """\
[build-system]
requires = ["hatchling>=1.21"]
build-backend = "hatchling.build"

[project]
name = "{name}"
version = "0.1.0"
description = "{name}: a verifiers environment."
readme = "README.md"
requires-python = ">=3.11"
keywords = ["single-turn"]
dependencies = ["verifiers>=0.9.0"]

[project.entry-points."verifiers.environments"]
"{name}" = "{module}:load_environment"

[tool.hatch.build.targets.wheel]
only-include = ["{module}.py"]

# ship pyproject.toml in the wheel's .dist-info so [tool.verifiers.eval] travels with it
[tool.hatch.build.targets.wheel.extra-metadata]
"pyproject.toml" = "pyproject.toml"

[tool.verifiers.eval]
num_examples = 5
rollouts_per_example = 1
"""

_MODULE = '''\
"""{name}: a single-turn environment. Edit the dataset and the reward to make it yours."""

from __future__ import annotations

from typing import Any

import verifiers as vf

EXAMPLES = [
    {{"question": "What is 2 + 3?", "answer": "5"}},
    {{"question": "What is 7 * 6?", "answer": "42"}},
    {{"question": "What is 10 - 4?", "answer": "6"}},
    {{"question": "What is 9 + 10?", "answer": "19"}},
    {{"question": "What is 12 / 4?", "answer": "3"}},
]

SYSTEM_PROMPT = "Think step by step, then give the final answer inside \\\\boxed{{}}."


def correct_answer(completion: Any, answer: str, parser: vf.Parser, **kwargs: Any) -> float:
    """1.0 when the parsed answer equals the reference, else 0.0."""
    return 1.0 if (parser.parse_answer(completion) or "").strip() == answer.strip() else 0.0


def load_environment(**kwargs: Any) -> vf.Environment:
    from datasets import Dataset

    parser = vf.Parser(extract_fn=vf.extract_boxed_answer)
    rubric = vf.Rubric(funcs=[correct_answer], weights=[1.0], parser=parser)
    return vf.SingleTurnEnv(
        dataset=Dataset.from_list(EXAMPLES),
        system_prompt=SYSTEM_PROMPT,
        parser=parser,
        rubric=rubric,
        **kwargs,
    )
'''

_README = """\
# {name}

A verifiers environment.

```bash
vf-eval {name} -m oracle -n 5      # smoke test without a model
vf env push environments/{name}     # publish to your hub
```

Arguments to `load_environment`: none yet (extra keyword arguments go to `vf.SingleTurnEnv`).
"""


_PYPROJECT_V1 = """\
[build-system]
requires = ["hatchling>=1.21"]
build-backend = "hatchling.build"

[project]
name = "{name}"
version = "0.1.0"
description = "{name}: a verifiers v1 taskset."
readme = "README.md"
requires-python = ">=3.11"
keywords = ["single-turn", "v1"]
dependencies = ["verifiers>=0.9.0"]

# the hub lists and installs it by this name; verifiers.v1 resolves it by module name, as
# upstream verifiers 0.4 does (`vf-eval {name}` or `--env.taskset.id {name}`)
[project.entry-points."verifiers.environments"]
"{name}" = "{module}"

[tool.hatch.build.targets.wheel]
only-include = ["{module}.py"]

[tool.hatch.build.targets.wheel.extra-metadata]
"pyproject.toml" = "pyproject.toml"

[tool.verifiers.eval]
num_examples = 5
rollouts_per_example = 1
"""

_MODULE_V1 = '''\
"""{name}: a single-turn v1 taskset (``import verifiers.v1 as vf``). Edit the tasks and the
reward to make it yours."""

from __future__ import annotations

from pydantic import Field

import verifiers.v1 as vf

SYSTEM_PROMPT = "Think step by step, then give the final answer inside \\\\boxed{{}}."


class MathData(vf.TaskData):
    answer: str
    """The reference answer."""


class MathTask(vf.Task[MathData]):
    @vf.stop
    async def answered(self, trace: vf.Trace) -> bool:
        return trace.num_turns >= 1

    @vf.reward(weight=1.0)
    async def correct(self, trace: vf.Trace) -> float:
        got = vf.extract_boxed_answer(trace.last_reply) or ""
        return float(got.strip() == self.data.answer)


class MathConfig(vf.TasksetConfig):
    questions: dict[str, str] = Field(
        default_factory=lambda: {{
            "What is 2 + 3?": "5",
            "What is 7 * 6?": "42",
            "What is 10 - 4?": "6",
            "What is 9 + 10?": "19",
            "What is 12 / 4?": "3",
        }}
    )
    """Question -> answer."""


class MathTaskset(vf.Taskset[MathTask, MathConfig]):
    def load(self) -> list[MathTask]:
        return [
            MathTask(
                MathData(prompt=question, system_prompt=SYSTEM_PROMPT, answer=answer),
                self.config.task,
            )
            for question, answer in self.config.questions.items()
        ]


__all__ = ["MathTaskset"]
'''

_README_V1 = """\
# {name}

A verifiers v1 taskset (`import verifiers.v1 as vf`): tasks with `@vf.reward` methods, played
by an agent's harness (the built-in `null` chat loop by default).

```bash
vf-eval {name} -m MODEL -b URL -n 5      # evaluate (results in outputs/evals)
vf env push environments/{name}           # publish to your hub
```

Taskset config (`-a '{{"questions": {{...}}}}'`): `questions`, a question -> answer mapping.
"""


def init_environment(name: str, parent: Path, force: bool = False, v1: bool = False) -> Path:
    if not _NAME_RE.match(name):
        raise CLIError(
            f"invalid environment name {name!r}",
            "use letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
        )
    module = re.sub(r"[-.]+", "_", name).lower()
    dest = parent / name
    if dest.exists() and any(dest.iterdir()) and not force:
        raise CLIError(f"{dest} already exists and is not empty", "pass --force to overwrite it")
    dest.mkdir(parents=True, exist_ok=True)
    if v1:
        (dest / "pyproject.toml").write_text(_PYPROJECT_V1.format(name=name, module=module))
        (dest / f"{module}.py").write_text(_MODULE_V1.format(name=name))
        (dest / "README.md").write_text(_README_V1.format(name=name))
        return dest
    (dest / "pyproject.toml").write_text(_PYPROJECT.format(name=name, module=module))
    (dest / f"{module}.py").write_text(_MODULE.format(name=name))
    (dest / "README.md").write_text(_README.format(name=name))
    return dest


# ---------------------------------------------------------------------------- build


def build_wheel(src: Path, outdir: Path | None = None) -> Path:
    """Build the package's wheel through its own build backend (PEP 517)."""
    src = src.resolve()
    meta = read_pyproject(src)
    _check_entry_point_keys(meta, src / "pyproject.toml")
    outdir = (outdir or src / "dist").resolve()
    try:
        from build import BuildBackendException, BuildException, ProjectBuilder
        from build.env import DefaultIsolatedEnv
    except ImportError:
        return _pip_wheel(src, outdir)
    captured: list[str] = []
    runner = _capturing_runner(captured)
    try:
        builder = ProjectBuilder(src, python_executable=sys.executable, runner=runner)
        if not builder.check_dependencies("wheel"):
            return Path(builder.build("wheel", outdir))
        # the backend is not installed here: build in an isolated environment
        with DefaultIsolatedEnv() as env:
            builder = ProjectBuilder.from_isolated_env(env, src, runner=runner)
            env.install(builder.build_system_requires)
            env.install(builder.get_requires_for_build("wheel"))
            return Path(builder.build("wheel", outdir))
    except (BuildException, BuildBackendException) as e:
        cause = _backend_error("".join(captured)) or str(e)
        raise CLIError(
            f"building {src.name} failed: {cause}", "fix the package and build again"
        ) from None


def _check_entry_point_keys(meta: dict[str, object], pyproject: Path) -> None:
    """A dotted bare entry-point name (``my-env.v2 = ...``, a TOML table) named before the
    backend fails on it."""
    from verifiers.errors import ConfigError
    from verifiers.loading import ENTRY_POINT_GROUP, declared_entry_point

    project = meta.get("project")
    eps = project.get("entry-points", {}) if isinstance(project, dict) else {}
    group = eps.get(ENTRY_POINT_GROUP, {}) if isinstance(eps, dict) else {}
    if isinstance(group, dict) and any(isinstance(v, dict) for v in group.values()):
        try:
            declared_entry_point(meta, pyproject)
        except ConfigError as e:
            raise CLIError(str(e)) from None


def _capturing_runner(captured: list[str]) -> Any:
    """A build-hook runner that keeps the backend's output (a traceback on failure) instead of
    letting it reach the terminal; :func:`_backend_error` picks the message out of it."""

    def run(
        cmd: Sequence[str], cwd: str | None = None, extra_environ: Mapping[str, str] | None = None
    ) -> None:
        import os

        env = {**os.environ, **(extra_environ or {})}
        r = subprocess.run(
            list(cmd), cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        captured.append(r.stdout.decode("utf-8", "replace"))
        if r.returncode:
            raise subprocess.CalledProcessError(r.returncode, list(cmd))

    return run


def _backend_error(output: str) -> str | None:
    """The last ``SomeError: message`` line of a build backend's traceback, if any."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in reversed(lines):
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception): ", line):
            return line.split(": ", 1)[1]
    return lines[-1] if lines else None


def _pip_wheel(src: Path, outdir: Path) -> Path:
    before = set(outdir.glob("*.whl")) if outdir.exists() else set()
    r = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(outdir), str(src)],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        raise CLIError(f"building {src.name} failed:\n{r.stderr.strip()[-2000:]}")
    new = sorted(set(outdir.glob("*.whl")) - before, key=lambda p: p.stat().st_mtime)
    if not new:
        raise CLIError(f"building {src.name} produced no wheel in {outdir}")
    return new[-1]


# ---------------------------------------------------------------------------- fork

_BUILD_CODE = ("setup.py", "hatch_build.py", "build.py", "setup.cfg")


def fork_module_name(new_name: str) -> str:
    """The importable module name of a fork called ``new_name`` (``my-wordle``: ``my_wordle``)."""
    module = re.sub(r"[^A-Za-z0-9_]", "_", new_name).lower()
    return module if module[:1].isalpha() else f"env_{module}"


def rename_project(src: Path, new_name: str, forked_from: str) -> list[str]:
    """Make the source tree in ``src`` a new package ``new_name`` that installs beside the
    original: its distribution name, its ``verifiers.environments`` entry point (named
    ``new_name``) and its top-level module (renamed on disk, its imports of itself and the
    build configuration's mentions of it rewritten), and record ``forked_from`` under
    ``[tool.verifiers.fork]``. Runs none of the package's code and builds nothing. Returns
    the files whose build would run code (``setup.py``, a hatch build hook, ...), for the
    caller to point out before the user builds the fork."""
    from verifiers.loading import ENTRY_POINT_GROUP

    if not _NAME_RE.match(new_name):
        raise CLIError(
            f"invalid environment name {new_name!r}",
            "use letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
        )
    meta = read_pyproject(src)
    project = meta.get("project")
    if not isinstance(project, dict) or not isinstance(project.get("name"), str):
        raise CLIError(f"{src / 'pyproject.toml'} has no [project] name to rename")
    old_name = project["name"]
    tool = meta.get("tool")
    if isinstance(tool, dict) and isinstance(tool.get("verifiers"), dict):
        if "fork" in tool["verifiers"]:
            del_hint = "remove [tool.verifiers.fork] from it, or fork the original"
            raise CLIError(f"{src / 'pyproject.toml'} already records a fork", del_hint)
    eps = (project.get("entry-points") or {}).get(ENTRY_POINT_GROUP) or {}
    if not isinstance(eps, dict) or not eps:
        raise CLIError(
            f'{src / "pyproject.toml"} declares no [project.entry-points."{ENTRY_POINT_GROUP}"]',
            "a fork needs the environment's entry point to rename",
        )
    old_key = old_name if old_name in eps else sorted(eps)[0]
    old_module = str(eps[old_key]).split(":", 1)[0].strip().split(".", 1)[0]
    new_module = fork_module_name(new_name)
    if new_module != old_module:
        _rename_module(src, old_module, new_module)
    text = _renamed_pyproject(src, old_name, old_key, old_module, new_name, new_module)
    text += f"\n[tool.verifiers.fork]\nfrom = {_toml_str(forked_from)}\n"
    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise CLIError(f"could not rename {old_name} in pyproject.toml ({e})") from None
    got = parsed.get("project", {})
    new_eps = got.get("entry-points", {}).get(ENTRY_POINT_GROUP, {})
    if (
        got.get("name") != new_name
        or str(new_eps.get(new_name, "")).split(":", 1)[0].split(".", 1)[0] != new_module
        or (old_key in new_eps and old_key != new_name)
    ):
        raise CLIError(
            f"could not rename {old_name} to {new_name} in {src / 'pyproject.toml'}",
            "edit its [project] name, entry point and module by hand, then run `vf env push`",
        )
    (src / "pyproject.toml").write_text(text, encoding="utf-8")
    found = [f for f in _BUILD_CODE if (src / f).is_file()]
    build = (tool or {}).get("hatch", {}).get("build", {}) if isinstance(tool, dict) else {}
    if isinstance(build, dict) and (
        "hooks" in build
        or any(isinstance(t, dict) and "hooks" in t for t in (build.get("targets") or {}).values())
    ):
        found.append("pyproject.toml ([tool.hatch.build...hooks])")
    return found


_WORD = r"(?<![A-Za-z0-9_]){}(?![A-Za-z0-9_])"


def _rename_module(src: Path, old: str, new: str) -> None:
    """Rename the top-level module ``old`` (a package directory or a ``.py`` file, at the top
    or under ``src/``) to ``new``, and rewrite its Python files' mentions of its own name (in
    imports and in string literals such as ``importlib.resources.files("old")``)."""
    for base in (src, src / "src"):
        pkg, single = base / old, base / f"{old}.py"
        if pkg.is_dir() and not (base / new).exists():
            pkg.rename(base / new)
            files = sorted((base / new).rglob("*.py"))
            break
        if single.is_file() and not (base / f"{new}.py").exists():
            single.rename(base / f"{new}.py")
            files = [base / f"{new}.py"]
            break
    else:
        raise CLIError(
            f"the entry point's module {old} is not in the pulled source (nor {new} free)",
            "rename its module by hand, then run `vf env push`",
        )
    word = _WORD.format(re.escape(old))
    imports = re.compile(rf"^(\s*(?:from|import)\s+){word}", re.M)
    quoted = re.compile(rf"""(["']){word}(?=[."'])""")
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        changed = quoted.sub(lambda m: m.group(1) + new, imports.sub(rf"\g<1>{new}", text))
        if changed != text:
            path.write_text(changed, encoding="utf-8")


def _renamed_pyproject(
    src: Path, old_name: str, old_key: str, old_module: str, new_name: str, new_module: str
) -> str:
    """``pyproject.toml`` edited line by line (comments and layout stay): the project name,
    the entry point (key and module), and the module's name in the build tables."""
    from verifiers.loading import ENTRY_POINT_GROUP

    lines = (src / "pyproject.toml").read_text(encoding="utf-8").splitlines()
    group_header = {
        f'[project.entry-points."{ENTRY_POINT_GROUP}"]',
        f"[project.entry-points.'{ENTRY_POINT_GROUP}']",
        f"[project.entry-points.{ENTRY_POINT_GROUP}]",
    }
    key_re = re.compile(r"""^(\s*)(?:"([^"]*)"|'([^']*)'|([A-Za-z0-9_.-]+))(\s*=.*)$""")
    module_word = re.compile(_WORD.format(re.escape(old_module)))
    table = ""
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith("["):
            table = stripped.split("#", 1)[0].strip()
            continue
        m = key_re.match(line)
        if not m:
            if table.startswith(("[tool.hatch", "[tool.setuptools")):  # an array's lines
                lines[i] = module_word.sub(new_module, line)
            continue
        key = m.group(2) or m.group(3) or m.group(4)
        if table == "[project]" and key == "name":
            lines[i] = f"{m.group(1)}name = {_toml_str(new_name)}"
        elif table in group_header and key == old_key:
            rest = module_word.sub(new_module, m.group(5))
            lines[i] = f"{m.group(1)}{_toml_str(new_name)}{rest}"
        elif table in group_header:  # another environment of the package: renamed alike
            rest = module_word.sub(new_module, m.group(5))
            lines[i] = f"{m.group(1)}{_toml_str(f'{new_name}-{key}')}{rest}"
        elif table.startswith(("[tool.hatch", "[tool.setuptools")):
            lines[i] = module_word.sub(new_module, line)
    return "\n".join(lines) + "\n"


def fork_source(path: Path) -> str | None:
    """The ``OWNER/NAME@VERSION`` a package's ``[tool.verifiers.fork]`` records, if any."""
    try:
        meta = read_pyproject(path)
    except CLIError:
        return None
    tool = meta.get("tool")
    verifiers = tool.get("verifiers") if isinstance(tool, dict) else None
    fork = verifiers.get("fork") if isinstance(verifiers, dict) else None
    got = fork.get("from") if isinstance(fork, dict) else None
    return got if isinstance(got, str) and got else None


def _toml_str(value: str) -> str:
    import json

    return json.dumps(value)  # these values (names, OWNER/NAME@VERSION) are plain ASCII
