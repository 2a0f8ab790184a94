"""Runtimes: where an agent program (a harness's process) runs.

A :class:`Runtime` runs commands and long-lived processes and reads and writes files; the
built-in ones are our sandboxes (:mod:`verifiers.sandbox`): ``bwrap`` (a user-namespace
sandbox on this machine, the default of program harnesses), ``docker`` (where an engine runs)
and ``subprocess`` (the host, no isolation: trusted programs only, never a default, a one-line
warning when chosen). A runtime is created stopped; :meth:`Runtime.start` takes the
host paths to bind into it (the interception socket of the rollout).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from verifiers.v1.errors import HarnessError
from verifiers.v1.runtimes.e2b import E2B_UNAVAILABLE, E2BConfig

if TYPE_CHECKING:
    from verifiers.sandbox.base import Sandbox, SandboxProcess

__all__ = [
    "BwrapConfig",
    "BwrapRuntime",
    "DockerConfig",
    "DockerRuntime",
    "ProgramResult",
    "Runtime",
    "RuntimeConfig",
    "SubprocessConfig",
    "SubprocessRuntime",
    "base_sandbox_labels",
    "make_runtime",
    "set_base_sandbox_labels",
]

_BASE_LABELS: list[str] = []

SUBPROCESS_NETWORK = (
    "the subprocess runtime runs programs as host processes and cannot keep them off the "
    "network: use type = 'bwrap' (no network unless network = true) or 'docker' for "
    "network = false, or drop network = false to accept the host's network"
)
NO_BWRAP = (
    "the bwrap runtime (the default for program harnesses) needs bubblewrap, which is not "
    "installed: `apt-get install bubblewrap` (Debian/Ubuntu; `dnf install bubblewrap` on "
    "Fedora). Or choose another runtime by name: type = 'docker' (a running engine), or "
    "type = 'subprocess' (NO isolation: model-written commands run on this host), e.g. "
    "`--env.<seat>.runtime.type subprocess`, AgentConfig(runtime={'type': 'subprocess'}) or "
    "ProgramHarnessConfig(runtime=SubprocessConfig())"
)


def set_base_sandbox_labels(labels: list[str]) -> None:
    """Set the process-wide labels every sandbox a runtime of this process starts carries,
    extended by each runtime config's own ``labels`` (a trainer stamps its run name so every
    sandbox of the run can be found: ``docker ps --filter label=<label>``). Call it in the
    process that creates the sandboxes (an env-server worker's setup); it applies to runtimes
    started afterwards."""
    if isinstance(labels, str) or not all(isinstance(x, str) for x in labels):
        raise TypeError(f"set_base_sandbox_labels takes a list of strings, got {labels!r}")
    bad = [x for x in labels if not x or any(c.isspace() for c in x)]
    if bad:
        raise ValueError(f"sandbox labels must be non-empty and without whitespace: {bad}")
    _BASE_LABELS[:] = list(dict.fromkeys(labels))


def base_sandbox_labels() -> list[str]:
    """The process-wide sandbox labels (:func:`set_base_sandbox_labels`)."""
    return list(_BASE_LABELS)


class _RuntimeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    network: bool = False
    """Let programs reach the network (the model endpoint is reachable either way). False is
    enforced: ``bwrap`` gives the program a network namespace of its own with nothing but
    loopback, ``docker`` runs it with ``--network none``; ``subprocess`` cannot and refuses
    it."""
    memory_mb: int | None = 2048
    cpu_seconds: int | None = 600
    processes: int | None = 256
    disk_mb: int | None = 1024
    command_timeout: float = 120.0
    """Default wall-clock seconds of one command run with :meth:`Runtime.run`."""
    start_timeout: float = 30.0
    labels: list[str] = Field(default_factory=list)
    """Labels of the sandbox, after the process-wide ones (:func:`set_base_sandbox_labels`); a
    ``docker`` container carries each as a container label (``key`` or ``key=value``)."""


class SubprocessConfig(_RuntimeConfig):
    """Programs run as host processes in a private temp dir: NO isolation (trusted code only).
    Never a default: a harness runs here only when its config names ``type = "subprocess"``,
    and the first start in a process logs a one-line warning saying so. It cannot keep
    programs off the network, so ``network`` is always true here (false is refused)."""

    type: Literal["subprocess"] = "subprocess"
    network: bool = True
    """Always true: host processes reach the host's network (``false`` is refused)."""

    @field_validator("network")
    @classmethod
    def _network_is_the_hosts(cls, value: bool) -> bool:
        if not value:
            raise ValueError(SUBPROCESS_NETWORK)
        return value


class BwrapConfig(_RuntimeConfig):
    """Programs run in a bubblewrap sandbox (own user, pid, mount and network namespaces)."""

    type: Literal["bwrap"] = "bwrap"
    ro_binds: dict[str, str] = Field(default_factory=dict)
    """Host paths mounted read-only inside: ``{host: inside}``."""


class DockerConfig(_RuntimeConfig):
    """Programs run in a docker container (needs a running docker engine)."""

    type: Literal["docker"] = "docker"
    image: str = "python:3.12-slim"


def _runnable(value: Any) -> Any:
    """Reject a runtime this package cannot run programs in, saying so (after checking its
    own rules), instead of a bare "unknown tag"."""
    if isinstance(value, Mapping) and value.get("type") == "e2b":
        E2BConfig.model_validate(value)
        raise ValueError(E2B_UNAVAILABLE)
    if isinstance(value, E2BConfig):
        raise ValueError(E2B_UNAVAILABLE)
    return value


RuntimeConfig = Annotated[
    SubprocessConfig | BwrapConfig | DockerConfig,
    Field(discriminator="type"),
    BeforeValidator(_runnable),
]
"""A runtime programs can run in here, chosen by ``type``; an ``e2b`` one (a valid
:class:`~verifiers.v1.runtimes.E2BConfig`) is rejected with what it would need."""


class ProgramResult(BaseModel):
    """A finished command: its exit code and (possibly truncated) output."""

    exit_code: int
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


class Runtime:
    """A place to run programs, backed by one of our sandboxes."""

    def __init__(self, config: SubprocessConfig | BwrapConfig | DockerConfig) -> None:
        self.config = config
        self._sandbox: Sandbox | None = None
        self.labels: list[str] = []
        """The labels of the running sandbox (set by :meth:`start`: the process-wide base
        labels, then the config's)."""

    @property
    def type(self) -> str:
        return self.config.type

    @property
    def binds_paths(self) -> bool:
        """Whether host paths must be bound in (False: the runtime sees the host's files)."""
        return self.config.type != "subprocess"

    @property
    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            raise RuntimeError(f"the {self.type} runtime is not started; call start() first")
        return self._sandbox

    @property
    def running(self) -> bool:
        return self._sandbox is not None and self._sandbox.running

    async def start(self, binds: Mapping[str, str] | None = None) -> None:
        """Start the runtime with ``binds`` (``{host path: path inside}``, read-only)."""
        from verifiers.sandbox import create_sandbox
        from verifiers.sandbox.base import SandboxLimits

        config = self.config
        limits = SandboxLimits(
            memory_mb=config.memory_mb,
            cpu_seconds=config.cpu_seconds,
            processes=config.processes,
            disk_mb=config.disk_mb,
            timeout=config.command_timeout,
            start_timeout=config.start_timeout,
        )
        self.labels = list(dict.fromkeys([*_BASE_LABELS, *config.labels]))
        options: dict[str, Any] = {}
        if isinstance(config, BwrapConfig):
            options["ro_binds"] = {**config.ro_binds, **(binds or {})}
        elif isinstance(config, DockerConfig):
            options["image"] = config.image
            if self.labels:
                options["labels"] = list(self.labels)
            if binds:
                options["ro_binds"] = dict(binds)
        elif binds:
            raise ValueError(
                "the subprocess runtime runs on the host and binds nothing; use the host paths"
            )
        if isinstance(config, BwrapConfig):
            from verifiers.sandbox.bwrap import bwrap_available

            if not bwrap_available():
                raise HarnessError(NO_BWRAP)
        if isinstance(config, SubprocessConfig):
            import warnings

            from verifiers.sandbox.subprocess_backend import warn_not_isolated

            # named by the config: one warning line per process instead of one per sandbox
            warn_not_isolated("runtime type 'subprocess'")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                sandbox = create_sandbox(config.type, limits=limits, network=True)
        else:
            sandbox = create_sandbox(config.type, limits=limits, network=config.network, **options)
        sandbox.labels = list(self.labels)
        await sandbox.start()
        self._sandbox = sandbox

    async def stop(self) -> None:
        """Stop the runtime and everything running in it. Idempotent."""
        sandbox, self._sandbox = self._sandbox, None
        if sandbox is not None:
            await sandbox.stop()

    async def run(
        self,
        argv: str | Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stdin: bytes | str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> ProgramResult:
        """Run a command to completion (a string runs with ``/bin/sh -c``)."""
        result = await self.sandbox.exec(argv, stdin=stdin, env=env, cwd=cwd, timeout=timeout)
        return ProgramResult(
            exit_code=result.exit_code,
            stdout=result.stdout,
            stderr=result.stderr,
            timed_out=result.timed_out,
        )

    async def spawn(
        self, argv: str | Sequence[str], *, env: Mapping[str, str] | None = None
    ) -> SandboxProcess:
        """Start a long-lived process."""
        return await self.sandbox.spawn(argv, env=env)

    async def read(self, path: str) -> bytes:
        return await self.sandbox.read_file(path)

    async def write(self, path: str, content: bytes | str) -> None:
        await self.sandbox.write_file(path, content)

    async def __aenter__(self) -> Runtime:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


class SubprocessRuntime(Runtime):
    pass


class BwrapRuntime(Runtime):
    pass


class DockerRuntime(Runtime):
    pass


def make_runtime(config: SubprocessConfig | BwrapConfig | DockerConfig | E2BConfig) -> Runtime:
    """A new, stopped runtime for ``config`` (an ``e2b`` one raises :class:`HarnessError`:
    this package does not drive E2B sandboxes)."""
    if isinstance(config, E2BConfig):
        raise HarnessError(E2B_UNAVAILABLE)
    cls: type[Runtime] = {
        "subprocess": SubprocessRuntime,
        "bwrap": BwrapRuntime,
        "docker": DockerRuntime,
    }[config.type]
    return cls(config)
