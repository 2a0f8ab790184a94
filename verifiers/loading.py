"""Find and load installed environments by id.

An environment package declares an entry point in the ``verifiers.environments`` group::

    [project.entry-points."verifiers.environments"]
    wordle = "vf_wordle:load_environment"

``load_environment("wordle")``, ``load_environment("owner/wordle")`` and
``load_environment("owner/wordle@1.2.0")`` find it by entry point first, then by module name
(``wordle`` / ``vf_wordle``) for classic packages without the entry point.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

from verifiers.errors import ConfigError, EnvironmentNotFoundError

if TYPE_CHECKING:
    # what a loaded environment is at run time: Environment with the classic methods
    # (verifiers.extension_points); for annotations only
    from verifiers.classic.env_mixin import ClassicEnvironment
    from verifiers.envs.environment import Environment

__all__ = [
    "EnvSpec",
    "InstalledEnvironment",
    "eval_defaults",
    "list_environments",
    "load_environment",
    "load_environment_from_directory",
    "parse_env_id",
]

ENTRY_POINT_GROUP = "verifiers.environments"
_ID = re.compile(
    r"^(?:(?P<owner>[A-Za-z0-9][A-Za-z0-9._-]*)/)?(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?:@(?P<version>[^@\s]+))?$"
)


@dataclass(frozen=True, slots=True)
class EnvSpec:
    """A parsed environment id: ``[owner/]name[@version]``."""

    name: str
    owner: str | None = None
    version: str | None = None

    def __str__(self) -> str:
        s = f"{self.owner}/{self.name}" if self.owner else self.name
        return f"{s}@{self.version}" if self.version else s


@dataclass(frozen=True, slots=True)
class InstalledEnvironment:
    """An environment found through its entry point."""

    name: str
    entry_point: str
    distribution: str | None
    version: str | None


def env_module_name(env_id: str) -> str:
    """The module name an environment id is imported as (0.3.x's rule): ``owner/my-env`` ->
    ``my_env``."""
    return env_id.replace("-", "_").split("/")[-1]


def import_env_module(env_id: str) -> ModuleType:
    """Import the module of an installed environment by its id (``owner/my-env`` ->
    ``import my_env``)."""
    return importlib.import_module(env_module_name(env_id))


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_env_id(env_id: str) -> EnvSpec:
    m = _ID.match(env_id.strip())
    if not m:
        raise ConfigError(
            f"invalid environment id {env_id!r}: expected NAME, OWNER/NAME or OWNER/NAME@VERSION"
        )
    return EnvSpec(name=m["name"], owner=m["owner"], version=m["version"])


def list_environments() -> dict[str, InstalledEnvironment]:
    """Installed environments by entry-point name."""
    found: dict[str, InstalledEnvironment] = {}
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(ep, "dist", None)
        found[ep.name] = InstalledEnvironment(
            name=ep.name,
            entry_point=ep.value,
            distribution=dist.metadata["Name"] if dist is not None else None,
            version=dist.version if dist is not None else None,
        )
    return found


def _find_loader(spec: EnvSpec) -> tuple[Callable[..., Any], str | None, str | None]:
    """(load_environment function, distribution name, version)."""
    wanted = {_norm(spec.name), _norm(spec.name.removeprefix("vf-").removeprefix("vf_"))}
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(ep, "dist", None)
        dist_name = dist.metadata["Name"] if dist is not None else None
        if _norm(ep.name) in wanted or (dist_name and _norm(dist_name) in wanted):
            loaded = ep.load()
            if isinstance(loaded, ModuleType):  # `name = "module"`: a v1 environment module
                loaded = _v1_module_loader(loaded, ep.value)
            return loaded, dist_name, dist.version if dist is not None else None
    for module_name in _module_candidates(spec.name):
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as e:
            if e.name and module_name.startswith(e.name):
                continue
            raise
        loader = getattr(module, "load_environment", None)
        if callable(loader):
            return loader, None, None
        v1 = v1_loader(module)
        if v1 is not None:
            return v1, None, None
    raise EnvironmentNotFoundError(str(spec), _suggest(spec.name))


def _v1_module_loader(module: ModuleType, declared: str) -> Callable[..., Any]:
    loader = getattr(module, "load_environment", None)
    if callable(loader):
        return loader  # type: ignore[no-any-return]
    v1 = v1_loader(module)
    if v1 is None:
        raise ConfigError(
            f"entry point {declared!r} names module {module.__name__!r}, which has no "
            "load_environment() and exports no verifiers.v1 Taskset subclass in __all__; "
            "point it at 'module:load_environment' or export the taskset"
        )
    return v1


def v1_loader(module: ModuleType) -> Callable[..., Any] | None:
    """For a module written for the v1 API (verifiers 0.4: no ``load_environment``, a Taskset
    subclass in ``__all__``, resolved by module name as upstream does): a loader building its
    env as a classic environment (:class:`verifiers.v1.bridge.V1Environment`)."""
    exported = [getattr(module, n, None) for n in getattr(module, "__all__", ())]
    if "verifiers.v1.taskset" not in sys.modules or not any(isinstance(o, type) for o in exported):
        return None
    from verifiers.v1.bridge import load_v1_environment
    from verifiers.v1.taskset import Taskset

    if not any(isinstance(o, type) and issubclass(o, Taskset) for o in exported):
        return None
    name = module.__name__

    def load_environment(**config: Any) -> Any:
        return load_v1_environment(name, **config)

    load_environment.__doc__ = f"The v1 environment of module {name!r} (verifiers.v1)."
    return load_environment


def _module_candidates(name: str) -> list[str]:
    base = name.replace("-", "_").replace(".", "_")
    out = [base] if base.isidentifier() and base not in sys.stdlib_module_names else []
    if not base.startswith("vf_"):
        out.append(f"vf_{base}")
    return out


def _suggest(name: str) -> list[str]:
    names = list(list_environments())
    return difflib.get_close_matches(name, names, n=3, cutoff=0.5)


def load_environment(env_id: str, **env_args: Any) -> ClassicEnvironment:
    """Load an installed environment and build it with ``env_args``.

    Raises :class:`EnvironmentNotFoundError` (with close matches and the install command) for
    unknown ids and :class:`ConfigError` for arguments its ``load_environment`` does not take
    or an installed version that differs from the one requested.
    """
    spec = parse_env_id(env_id)
    loader, dist_name, version = _find_loader(spec)
    if spec.version and version and spec.version != version:
        raise ConfigError(
            f"{spec.name} {version} is installed, but {env_id} was requested; "
            f"install it with `vf env install {spec}`"
        )
    _check_args(spec.name, loader, env_args)
    env = loader(**env_args)
    from verifiers.envs.environment import Environment

    if not isinstance(env, Environment):
        raise ConfigError(
            f"load_environment() of {spec.name!r} returned {type(env).__name__}, not a "
            "verifiers Environment"
        )
    env.env_id = spec.name
    env.env_args = dict(env_args)
    env.env_version = version
    env.env_distribution = dist_name
    env.env_wheel_sha256 = _wheel_sha256(dist_name)
    env.env_eval_defaults = _read_eval_defaults(loader, dist_name)
    return cast("ClassicEnvironment", env)


def module_provenance(module_name: str) -> tuple[str | None, str | None, str | None]:
    """``(distribution, version, wheel sha256)`` of the installed distribution that provides
    ``module_name`` (its top-level package), or Nones: what a run records of the environment
    it ran, whichever command line loaded it (the wheel's sha256 where the installer recorded
    it)."""
    top = module_name.split(".")[0]
    names = list(metadata.packages_distributions().get(top) or ())
    if not names:  # an editable or .pth install: the entry point names the module
        for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
            dist = getattr(ep, "dist", None)
            if dist is not None and ep.value.split(":")[0].split(".")[0] == top:
                names.append(dist.metadata["Name"])
    for name in names:
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        return name, version, _wheel_sha256(name)
    return None, None, None


def _wheel_sha256(dist_name: str | None) -> str | None:
    """The sha256 of the wheel a distribution was installed from, when the installer recorded
    it (PEP 610 ``direct_url.json``: installs from a file or URL)."""
    if not dist_name:
        return None
    import json

    try:
        text = metadata.distribution(dist_name).read_text("direct_url.json")
        info = json.loads(text or "{}").get("archive_info") or {}
    except (metadata.PackageNotFoundError, ValueError, AttributeError):
        return None
    hashes = info.get("hashes") or {}
    if isinstance(hashes.get("sha256"), str):
        return str(hashes["sha256"])
    legacy = info.get("hash")
    if isinstance(legacy, str) and legacy.startswith("sha256="):
        return legacy.removeprefix("sha256=")
    return None


def _check_args(name: str, loader: Callable[..., Any], env_args: dict[str, Any]) -> None:
    try:
        params = inspect.signature(loader).parameters
    except (TypeError, ValueError):
        return
    open_ended = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    accepted = [
        n
        for n, p in params.items()
        if p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]
    unknown = [k for k in env_args if k not in params]
    if open_ended:  # extra arguments go on to the environment; still catch near-miss typos
        unknown = [k for k in unknown if difflib.get_close_matches(k, accepted, n=1)]
    if unknown:
        hints = []
        for k in unknown:
            close = difflib.get_close_matches(k, accepted, n=1)
            hints.append(f"{k!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise ConfigError(
            f"environment {name!r} does not take argument(s) {', '.join(hints)}; "
            f"it takes: {', '.join(accepted) or 'no arguments'}"
        )


def _v1_directory_env(
    directory: Path, meta: dict[str, Any], root: str, env_args: dict[str, Any]
) -> Environment | None:
    """A package directory written for the v1 API (no entry point; its module, named after the
    project, exports a Taskset subclass), built as a classic environment; ``None`` otherwise."""
    project = str(meta.get("project", {}).get("name") or directory.name)
    module_name = project.replace("-", "_").replace(".", "_").lower()
    if not (directory / module_name).is_dir() and not (directory / f"{module_name}.py").is_file():
        return None
    if root not in sys.path:
        sys.path.insert(0, root)
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ConfigError(f"cannot import {module_name!r} from {directory}: {e}") from None
    loader = v1_loader(module)
    if loader is None:
        return None
    env: Environment = loader(**env_args)
    env.env_args = dict(env_args)
    env.env_version = str(meta.get("project", {}).get("version") or "") or None
    return env


def declared_entry_point(meta: dict[str, Any], pyproject: Path) -> tuple[str, str]:
    """The one ``name = "module:function"`` of ``[project.entry-points."verifiers.environments"]``
    in a parsed ``pyproject.toml``, or a :class:`ConfigError` saying what is wrong with it."""
    entry_points = meta.get("project", {}).get("entry-points", {}).get(ENTRY_POINT_GROUP, {})
    if len(entry_points) != 1:
        raise ConfigError(
            f"{pyproject} must declare exactly one entry point in "
            f'[project.entry-points."{ENTRY_POINT_GROUP}"], found {len(entry_points)} '
            '(e.g. wordle = "vf_wordle:load_environment")'
        )
    ((name, value),) = entry_points.items()
    if isinstance(value, dict):  # `my-env.v2 = ...`: TOML reads a dotted bare key as a table
        dotted = _dotted_key(name, value)
        raise ConfigError(
            f"{pyproject}: the entry point name {dotted} contains '.', which TOML reads as "
            f'nested tables; quote it: "{dotted}" = "{_first_leaf(value)}"'
        )
    if not isinstance(value, str) or not re.fullmatch(r"[\w.]+(:[\w.]+)?", value.strip()):
        raise ConfigError(
            f'{pyproject}: entry point {name!r} must be a string "module:function" (or, for a '
            f'verifiers.v1 environment, "module"), got {value!r} (e.g. wordle = '
            '"vf_wordle:load_environment")'
        )
    return name, value


def _dotted_key(name: str, value: Any) -> str:
    while isinstance(value, dict) and len(value) == 1:
        ((key, value),) = value.items()
        name = f"{name}.{key}"
    return name


def _first_leaf(value: Any) -> str:
    while isinstance(value, dict) and value:
        value = next(iter(value.values()))
    return str(value)


def load_environment_from_directory(path: str | Path, **env_args: Any) -> ClassicEnvironment:
    """Build the environment of a package directory that is not installed, through the entry
    point its ``pyproject.toml`` declares (``vf-eval DIR``, ``vf env validate DIR``)."""
    import tomllib

    from verifiers.envs.environment import Environment

    directory = Path(path)
    pyproject = directory / "pyproject.toml"
    if not pyproject.is_file():
        raise ConfigError(f"{directory} has no pyproject.toml; scaffold one with `vf env init`")
    try:
        meta = tomllib.loads(pyproject.read_text("utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{pyproject} is not valid TOML: {e}") from None
    root = str(directory.resolve())
    declared = meta.get("project", {}).get("entry-points", {}).get(ENTRY_POINT_GROUP)
    if not declared:
        v1 = _v1_directory_env(directory, meta, root, env_args)
        if v1 is not None:
            return cast("ClassicEnvironment", v1)
    name, value = declared_entry_point(meta, pyproject)
    module_name, _, attr = value.partition(":")
    if root not in sys.path:
        sys.path.insert(0, root)
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ConfigError(f"cannot import {module_name!r} from {directory}: {e}") from None
    loader = getattr(module, attr or "load_environment", None)
    if loader is None and not attr:
        loader = _v1_module_loader(module, value)
    if not callable(loader):
        raise ConfigError(f"{module_name} has no callable {attr or 'load_environment'!r}")
    _check_args(name, loader, dict(env_args))
    env = loader(**env_args)
    if not isinstance(env, Environment):
        raise ConfigError(f"{value} returned {type(env).__name__}, not a verifiers Environment")
    env.env_id = name
    env.env_args = dict(env_args)
    env.env_version = str(meta.get("project", {}).get("version") or "") or None
    env.env_eval_defaults = _eval_section(pyproject.read_text("utf-8"))
    return cast("ClassicEnvironment", env)


def eval_defaults(env_id: str) -> dict[str, Any]:
    """``[tool.verifiers.eval]`` defaults of an environment, else ``{}``.

    ``env_id`` may also be a package directory (its ``pyproject.toml`` is read).

    Read from the ``pyproject.toml`` its wheel ships in ``.dist-info/extra_metadata/``
    (``[tool.hatch.build.targets.wheel.extra-metadata]``), or from a ``pyproject.toml`` beside
    the module for checkouts run without installing.
    """
    if Path(env_id).is_dir():
        return _eval_section((Path(env_id) / "pyproject.toml").read_text("utf-8"))
    spec = parse_env_id(env_id)
    try:
        loader, dist_name, _ = _find_loader(spec)
    except EnvironmentNotFoundError:
        return {}
    return _read_eval_defaults(loader, dist_name)


def _read_eval_defaults(loader: Callable[..., Any], dist_name: str | None) -> dict[str, Any]:
    import tomllib

    texts: list[str] = []
    if dist_name:
        try:
            shipped = metadata.distribution(dist_name).read_text("extra_metadata/pyproject.toml")
        except metadata.PackageNotFoundError:
            shipped = None
        if shipped:
            texts.append(shipped)
    module = sys.modules.get(getattr(loader, "__module__", ""), None)
    path = getattr(module, "__file__", None)
    if not texts and path:
        here = Path(path).resolve().parent
        for directory in (here, here.parent):
            candidate = directory / "pyproject.toml"
            if candidate.is_file():
                try:
                    texts.append(candidate.read_text())
                except OSError:
                    pass
                break
    for text in texts:
        try:
            tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            continue
        return _eval_section(text)
    return {}


def _eval_section(text: str) -> dict[str, Any]:
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}
    section = data.get("tool", {}).get("verifiers", {}).get("eval", {})
    return dict(section) if isinstance(section, dict) else {}


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
