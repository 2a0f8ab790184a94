"""Resolving v1 plugins by id: tasksets, harnesses, envs and judges.

An id (an ``owner/`` prefix and ``@version`` suffix dropped, ``-`` read as ``_``) names a
module exporting exactly one subclass of the plugin's base class in ``__all__``: first a
built-in one (``verifiers.v1.harnesses.<id>``, ``verifiers.v1.envs.<id>``, registered
with :func:`register_harness` / :func:`register_env`; ``verifiers.v1.judges.<id>``), else an
installed module of that name. A plugin's config type is its class's generic argument
(``Harness[MyHarnessConfig]``, ``Taskset[MyTask, MyTasksetConfig]``, ``Env[MyEnvConfig]``,
``Judge[Parsed, MyJudgeConfig]``)."""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ValidationError

from verifiers.errors import ConfigError

if TYPE_CHECKING:
    from verifiers.v1.configs import (
        DecoratedFunctionConfig,
        EnvConfig,
        HarnessConfig,
        TasksetConfig,
    )
    from verifiers.v1.configs.judge import JudgeConfig
    from verifiers.v1.env import Env
    from verifiers.v1.harness import Harness
    from verifiers.v1.judge import Judge
    from verifiers.v1.task import Task
    from verifiers.v1.taskset import Taskset

__all__ = [
    "builtin_harness_ids",
    "default_harness_config",
    "default_harness_id",
    "env_config_type",
    "environment_class",
    "file_module",
    "harness_class",
    "harness_config_type",
    "import_environment",
    "import_harness",
    "import_judge",
    "import_taskset",
    "judge_class",
    "judge_config_type",
    "load_environment",
    "load_harness",
    "load_judge",
    "load_plugged_fn",
    "load_taskset",
    "narrow_plugin_field",
    "plugged_fn",
    "register_env",
    "register_harness",
    "resolve_env_config",
    "task_type",
    "taskset_class",
    "taskset_config_type",
]

Kind = Literal["taskset", "harness", "environment", "judge"]
_GROUPS: dict[str, str] = {
    "taskset": "verifiers.v1.tasksets",
    "harness": "verifiers.v1.harnesses",
    "environment": "verifiers.v1.envs",
    "judge": "verifiers.v1.judges",
}
_HARNESSES: dict[str, type[Harness[Any]]] = {}
_ENVS: dict[str, type[Env[Any]]] = {}


def register_harness(harness_id: str, cls: type[Harness[Any]]) -> None:
    """Make ``cls`` the harness ``harness_id`` names (built-ins register at import; an
    installed package exporting a Harness subclass in ``__all__`` needs no registration)."""
    _HARNESSES[_normalise(harness_id)] = cls


def register_env(env_id: str, cls: type[Env[Any]]) -> None:
    """Make ``cls`` the env ``env_id`` names (``--env.id``)."""
    _ENVS[_normalise(env_id)] = cls


def _normalise(plugin_id: str) -> str:
    return plugin_id.rsplit("/", 1)[-1].split("@", 1)[0].replace("-", "_").lower()


def _builtins() -> None:
    importlib.import_module("verifiers.v1.harness")  # registers the in-process ``null`` harness
    importlib.import_module("verifiers.v1.harnesses")  # registers ``bash``, ``mini_swe_agent``


def builtin_harness_ids() -> list[str]:
    """The ids of the registered (built-in) harnesses."""
    _builtins()
    return sorted(_HARNESSES)


def builtin_judge_ids() -> list[str]:
    """The judges shipped in ``verifiers.v1.judges`` (``reference``, ``rubric``, ...)."""
    import pkgutil

    package = importlib.import_module(_GROUPS["judge"])
    return sorted(m.name for m in pkgutil.iter_modules(package.__path__))


def _import_plugin(plugin_id: str, kind: Kind) -> ModuleType:
    name = _normalise(plugin_id)
    if not name.isidentifier():
        raise ConfigError(f"{kind} id {plugin_id!r} does not name a Python module (got {name!r})")
    group = _GROUPS[kind]
    namespaced = f"{group}.{name}"
    try:
        found = importlib.util.find_spec(namespaced) is not None
    except ModuleNotFoundError:
        found = False
    target = namespaced if found else name
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as exc:
        if exc.name not in (target, name):
            raise
        hint = ""
        if kind == "harness":
            hint = f" Built-in harnesses: {', '.join(builtin_harness_ids())}."
        elif kind == "judge":
            hint = f" The built-in judges are {', '.join(builtin_judge_ids())}."
        raise ConfigError(
            f"{kind} {plugin_id!r} not found: no installed module {target!r}. A {kind} is an "
            f"installed package exporting its class in __all__ (install it with `vf env install "
            f"{plugin_id}`, or put its module on PYTHONPATH).{hint}"
        ) from exc


def _plugin_class(module: ModuleType, base: type, kind: str, *, missing_ok: bool = False) -> Any:
    names = getattr(module, "__all__", None)
    if names is None:
        if missing_ok:
            return None
        raise ConfigError(
            f"{kind} module {module.__name__!r} has no __all__; export its {base.__name__} "
            f"subclass, e.g. __all__ = ['My{base.__name__}']"
        )
    found = [
        obj
        for n in names
        if isinstance(obj := getattr(module, n, None), type)
        and issubclass(obj, base)
        and obj is not base
        and not inspect.isabstract(obj)
    ]
    if len(found) > 1:
        raise ConfigError(
            f"{kind} module {module.__name__!r} exports {len(found)} {base.__name__} subclasses "
            f"in __all__ ({[c.__name__ for c in found]}); export exactly one {base.__name__} subclass"
        )
    if not found:
        if missing_ok:
            return None
        raise ConfigError(
            f"{kind} module {module.__name__!r} exports no {base.__name__} subclass in __all__ "
            f"(it exports {list(names)}); export exactly one {base.__name__} subclass"
        )
    return found[0]


def import_taskset(taskset_id: str) -> ModuleType:
    return _import_plugin(taskset_id, "taskset")


def import_harness(harness_id: str) -> ModuleType:
    """The module a harness id names (``verifiers.v1.harnesses.<id>`` first)."""
    return _import_plugin(harness_id, "harness")


def import_environment(env_id: str) -> ModuleType:
    """The module an environment id names."""
    return _import_plugin(env_id, "environment")


def taskset_class(taskset_id: str) -> type[Taskset[Any, Any]]:
    """The one Taskset subclass the module named by ``taskset_id`` exports in ``__all__``."""
    from verifiers.v1.taskset import Taskset

    return _plugin_class(import_taskset(taskset_id), Taskset, "taskset")  # type: ignore[no-any-return]


def harness_class(harness_id: str) -> type[Harness[Any]]:
    """The harness ``harness_id`` names: a registered built-in, else the Harness subclass a
    module of that name exports."""
    from verifiers.v1.harness import Harness

    _builtins()
    cls = _HARNESSES.get(_normalise(harness_id))
    if cls is not None:
        return cls
    return _plugin_class(_import_plugin(harness_id, "harness"), Harness, "harness")  # type: ignore[no-any-return]


def import_judge(judge_id: str) -> ModuleType:
    return _import_plugin(judge_id, "judge")


def judge_class(judge_id: str) -> type[Judge[Any, Any]]:
    """The judge ``judge_id`` names: a built-in (``reference``, ``rubric``, ``decision``), else
    the one Judge subclass an installed module of that name exports in ``__all__``."""
    from verifiers.v1.judge import Judge

    return _plugin_class(import_judge(judge_id), Judge, "judge")  # type: ignore[no-any-return]


def judge_config_type(judge_id: str) -> type[JudgeConfig]:
    """The config type of the judge ``judge_id`` names (its ``Judge[P, Config]`` argument)."""
    from verifiers.v1.judge import judge_config_cls

    return judge_config_cls(judge_class(judge_id))


def load_judge(config: JudgeConfig) -> Judge[Any, Any]:
    """The judge a plugged config names, built with that config."""
    return judge_class(config.id)(config)


def environment_class(taskset_id: str, env_id: str = "") -> type[Env[Any]]:
    """The Env of a run: the one ``env_id`` names (which must resolve), else the Env subclass
    the taskset's module exports, else :class:`SingleAgentEnv`."""
    from verifiers.v1.env import Env, SingleAgentEnv

    if env_id:
        cls = _ENVS.get(_normalise(env_id))
        if cls is not None:
            return cls
        return _plugin_class(_import_plugin(env_id, "environment"), Env, "environment")  # type: ignore[no-any-return]
    if not taskset_id:
        return SingleAgentEnv
    found = _plugin_class(import_taskset(taskset_id), Env, "environment", missing_ok=True)
    return found if found is not None else SingleAgentEnv


def default_harness_id(taskset_id: str) -> str:
    """What an unpinned seat runs: the taskset's bundled harness (its module exports a
    Harness subclass), else ``bash`` as in 0.4.0 (a coding-agent program with bash and edit
    tools, run in a local ``bwrap`` sandbox here where 0.4.0 uses a hosted one). A seat names
    ``harness = "null"`` for the in-process chat loop, which starts no process."""
    from verifiers.v1.harness import Harness

    if taskset_id:
        try:
            module = import_taskset(taskset_id)
        except ConfigError:
            module = None
        if module is not None and _plugin_class(module, Harness, "harness", missing_ok=True):
            return taskset_id
    return "bash"


def default_harness_config(taskset_id: str) -> HarnessConfig:
    ident = default_harness_id(taskset_id)
    return harness_config_type(ident).model_validate({"id": ident})


def taskset_config_type(taskset_id: str) -> type[TasksetConfig]:
    return taskset_class(taskset_id).config_type()


def harness_config_type(harness_id: str) -> type[HarnessConfig]:
    """The config type of the harness ``harness_id`` names (its ``Harness[Config]`` argument)."""
    return harness_class(harness_id).config_type()


def env_config_type(taskset_id: str, env_id: str = "") -> type[EnvConfig]:
    """The config type of the run's Env (``SingleAgentEnvConfig`` for a plain taskset)."""
    return environment_class(taskset_id, env_id).config_type()


def narrow_plugin_field(
    data: dict[str, Any], field: str, kind: Literal["harness", "taskset"]
) -> None:
    """Validate ``data[field]`` (an id, a dict or a config) as the config type of the plugin
    its ``id`` names; left alone when it names none."""
    raw = data.get(field)
    if isinstance(raw, str):
        raw = {"id": raw}
    elif isinstance(raw, BaseModel):
        if type(raw) is not _base_config(kind):
            return  # already a concrete config
        raw = raw.model_dump(exclude_unset=True) | {"id": getattr(raw, "id", "")}
    if not isinstance(raw, dict):
        return
    ident = raw.get("id")
    if not ident:
        return
    if not isinstance(ident, str):
        raise ValueError(f"{field}.id needs an id, got {ident!r}")
    config_type = harness_config_type(ident) if kind == "harness" else taskset_config_type(ident)
    try:
        data[field] = config_type.model_validate(raw)
    except ValidationError as exc:
        raise ValueError(f"{field} ({ident}): {exc}") from exc


def _base_config(kind: str) -> type:
    from verifiers.v1.configs import HarnessConfig, TasksetConfig

    return HarnessConfig if kind == "harness" else TasksetConfig


def resolve_env_config(data: dict[str, Any] | EnvConfig | None) -> EnvConfig:
    """Validate env-config data as the config type of the env it names."""
    from verifiers.v1.configs import EnvConfig

    if isinstance(data, EnvConfig):
        cls = env_config_type(data.taskset.id, data.id)
        if isinstance(data, cls):
            return data
        data = data.model_dump(exclude_unset=True) | {
            "id": data.id,
            "taskset": data.taskset.model_dump(exclude_unset=True) | {"id": data.taskset.id},
        }
    raw = dict(data or {})
    taskset = raw.get("taskset")
    taskset_id = (
        taskset.get("id", "") if isinstance(taskset, dict) else getattr(taskset, "id", "") or ""
    )
    return env_config_type(taskset_id, raw.get("id") or "").model_validate(raw)


def load_taskset(config: TasksetConfig | str, **overrides: Any) -> Taskset[Any, Any]:
    """The taskset a config (or an id plus config keys) names, built with its config."""
    if isinstance(config, str):
        cls = taskset_class(config)
        try:
            cfg = cls.config_type().model_validate({**overrides, "id": config})
        except ValidationError as exc:
            raise ConfigError(
                f"taskset {config!r}: bad config for {cls.config_type().__name__}: {exc}"
            ) from exc
        return cls(cfg)
    return taskset_class(config.id)(config)


def load_harness(config: HarnessConfig) -> Harness[Any]:
    return harness_class(config.id)(config)


def load_environment(config: EnvConfig | dict[str, Any]) -> Env[Any]:
    """Build the env a run's ``[env]`` config names (narrowed to its config type first)."""
    try:
        resolved = resolve_env_config(config)
    except ValidationError as exc:
        raise ConfigError(f"bad [env] config: {exc}") from exc
    return environment_class(resolved.taskset.id, resolved.id)(resolved)


def task_type(taskset_id: str) -> type[Task[Any, Any, Any]]:
    return taskset_class(taskset_id).task_type()


@functools.cache
def file_module(path: str) -> ModuleType:
    """The module of a standalone ``.py`` file, imported once per path (later loads of a
    function from the same file share the module)."""
    resolved = Path(path).resolve()
    spec = importlib.util.spec_from_file_location(resolved.stem, resolved)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import a module from {path!r}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def plugged_fn(path: str) -> Callable[..., Any]:
    """The function a config names: ``pkg.module:function``, ``pkg.module.function`` or
    ``path/to/file.py:function``. ValueError for a path of none of these shapes, TypeError
    when the name is not a callable."""
    where, _, name = path.rpartition(":")
    if not where:
        where, _, name = path.rpartition(".")
    if not where or not name:
        raise ValueError(
            f"fn {path!r} must be `pkg.module.function`, `pkg.module:function` or "
            "`path/to/file.py:function`"
        )
    module = file_module(where) if where.endswith(".py") else importlib.import_module(where)
    fn = getattr(module, name, None)
    if not callable(fn):
        raise TypeError(f"fn {path!r} is not a function (found {fn!r})")
    return fn  # type: ignore[no-any-return]


def load_plugged_fn(
    name: str,
    config: DecoratedFunctionConfig,
    attr: str,
    decorated: Callable[..., Any] | None = None,
) -> Callable[..., Any]:
    """A task hook plugged by config under ``name``, tagged as ``@vf.<attr>`` tags one
    (``attr``: ``stop``, ``metric``, ``reward``): ``config.fn`` imported, or without one the
    task's ``decorated`` method it re-tags. Its priority (and a reward's weight) is the
    config's, else the wrapped function's own (0 and 1.0 for an untagged one)."""
    from verifiers.v1.configs import RewardFunctionConfig

    if config.fn:
        fn = plugged_fn(config.fn)
    elif decorated is not None:
        fn = decorated
    else:
        raise ValueError(
            f"{attr} {name!r} plugs no `fn` and the task has no @vf.{attr} method named "
            f"{name!r} to override; give `fn` ('file.py:function') or fix the name"
        )

    @functools.wraps(fn)
    def plugged(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    plugged.__name__ = name
    setattr(plugged, attr, True)
    priority = config.priority
    setattr(
        plugged,
        f"{attr}_priority",
        priority if priority is not None else getattr(fn, f"{attr}_priority", 0),
    )
    if isinstance(config, RewardFunctionConfig):
        weight = config.weight
        plugged.__dict__["_vf_weight"] = (
            weight if weight is not None else getattr(fn, "_vf_weight", 1.0)
        )
    return plugged
