"""``CliAgentEnv``: a whole agent program runs in the rollout's sandbox; its model calls are
the rollout's steps.

The agent (mini-swe-agent, a bash loop, any program speaking the OpenAI chat API) is started
with ``run_command`` in a fresh sandbox (bwrap by default: no network). Its environment has
``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` pointing at this rollout's interception channel
(:mod:`verifiers.agents.interception`): the only service it can reach. Each request it makes is
one trajectory step: the environment calls the model through the rollout's client with the
same code path every environment uses (:meth:`Environment.get_model_response`; the caller's
or trainer's sampling arguments win over the agent's), records the step (token ids, logprobs)
and sends the answer back in the shape the agent asked for (streamed or not).

The rollout ends when the agent exits, at ``max_turns`` (the call that reaches it is still
answered), at ``timeout_seconds`` (default one hour: an agent that hangs is stopped and the
rollout marked ``timed_out``), when the agent goes over the interception server's limits (its
byte budget or body read timeout: recorded as the rollout's error), or on an error; then the sandbox is stopped, which ends
everything the agent started. Grading happens outside the agent's sandbox: a reward function
reads what :meth:`CliAgentEnv.post_rollout` kept (or, with ``keep_sandbox_for_scoring``, the
sandbox itself, in which the agent no longer runs).

State keys: ``agent_exit_code``, ``agent_stdout``, ``agent_stderr`` (tails), ``agent_completed``,
``timed_out``; metrics ``agent_timeout`` and ``agent_error`` (the classic ones).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import warnings
from collections.abc import Mapping
from types import EllipsisType
from typing import TYPE_CHECKING, Any, ClassVar, cast

from verifiers.decorators import cleanup, stop, teardown
from verifiers.envs.multiturn_env import MultiTurnEnv
from verifiers.errors import ConfigError, InfraError, OverlongPromptError, SandboxError
from verifiers.sandbox import Sandbox, SandboxLimits
from verifiers.types import Messages, ModelResponse, State

if TYPE_CHECKING:
    from verifiers.agents.interception import Channel, InterceptedCall, InterceptionServer

__all__ = ["AgentError", "CliAgentEnv"]

logger = logging.getLogger(__name__)

#: a rollout's default wall-clock limit (agent and scoring): an hour, what the v1 program
#: harnesses allow their program too
DEFAULT_TIMEOUT_SECONDS = 3600.0
#: rollouts with a live sandbox at once, by default
DEFAULT_MAX_LIVE_SANDBOXES = 32
NO_BWRAP = (
    "CliAgentEnv runs agents in a bwrap sandbox by default and bubblewrap is not installed: "
    "`apt-get install bubblewrap` (Debian/Ubuntu; `dnf install bubblewrap` on Fedora), or name "
    "another backend: sandbox_backend='docker' (a running engine) or, for trusted agents only, "
    "sandbox_backend='subprocess' (NO isolation: the agent runs on this host)"
)

#: where the rollout's interception socket appears inside a docker sandbox (the local backends
#: have none: the channel listens on the sandbox's own loopback)
SOCKET_INSIDE = "/run/vf/model.sock"
_TAIL = 1 << 16

# Options of the classic hosted-sandbox client and tunnel: accepted, no effect here.
_PRIME_ONLY = frozenset(
    {
        "interception_port",
        "interception_url",
        "poll_interval",
        "cpu_cores",
        "gpu_count",
        "team_id",
        "advanced_configs",
        "labels",
        "max_retries",
        "base_delay",
        "backoff_factor",
        "max_backoff_seconds",
        "jitter",
        "sandbox_client_max_workers",
        "sandbox_client_max_connections",
        "sandbox_client_max_keepalive_connections",
        "sandbox_wait_for_creation_max_attempts",
        "sandbox_creations_per_minute",
        "timeouts",
    }
)

# Environment variables the environment sets for the agent; environment_vars cannot change them.
PROTECTED_ENV_VARS = frozenset(
    {
        "OPENAI_BASE_URL",
        "OPENAI_API_BASE",
        "OPENAI_API_KEY",
        "OPENAI_MODEL",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_API_KEY",
    }
)


# Run in a bwrap sandbox (its own pid namespace, the sandbox's agent as pid 1): kill every
# other process, until none is left (a fork during the sweep is caught by the next round).
_KILL_ALL = """
import os, signal
me = os.getpid()
def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
for _ in range(100):
    others = [int(p) for p in os.listdir("/proc")
              if p.isdigit() and int(p) not in (1, me) and alive(int(p))]
    if not others:
        break
    for pid in others:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
"""


class AgentError(InfraError):
    """The agent program failed (exited non-zero, or could not be started)."""


class CliAgentEnv(MultiTurnEnv):
    """Run an agent program in a sandbox; each of its model calls is one rollout step.

    Args:
        run_command: the shell command that runs the agent (``/bin/sh -c``), in the sandbox's
            work dir, with ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` and ``OPENAI_MODEL`` set.
        max_turns: model calls per rollout (``-1``: no limit).
        timeout_seconds: wall-clock limit per rollout (agent and scoring); the agent is stopped
            when it passes and the rollout marked ``timed_out``. Not given:
            :attr:`DEFAULT_TIMEOUT_SECONDS` (3600, one hour); ``None`` or ``0``: no limit.
        environment_vars: more variables for the agent (the ones above cannot be overridden).
        keep_sandbox_for_scoring: keep the sandbox (with the agent stopped) until scoring is
            done, for reward functions that look into it (``state["sandbox"]``).
        sandbox_backend: ``"bwrap"`` (the default; needs bubblewrap: ``apt-get install
            bubblewrap``), ``"docker"`` (an engine on this machine; ``docker_image`` needs
            ``python3``) or ``"subprocess"`` (NO isolation: the agent runs on this host as this
            user, with its network; trusted agents only, and it must be named: a one-line
            warning is logged).
        sandbox_limits: :class:`verifiers.SandboxLimits`; ``memory_gb`` and ``disk_size_gb``
            (classic names) override it. The default allows 2 GiB of address space per process.
        ro_binds: host paths mounted read-only into each sandbox (``{host: inside}``), e.g. an
            agent's installed environment.
        max_live_sandboxes: rollouts with a live sandbox at once (others wait). Default 32:
            each sandbox may use ``memory_gb`` and its channel up to ``max_request_bytes`` of
            this process's memory.
        max_request_bytes: largest request body the interception server accepts; a rollout's
            requests may hold as many body bytes at once (413 beyond).
        request_read_timeout: seconds a request body may take to arrive (408 beyond).
        start_command: run in the background before the agent starts.

    The classic hosted-sandbox and tunnel options (``cpu_cores``,
    ``team_id``, ``interception_url``, ``poll_interval``, ...) are accepted and have no effect.
    """

    #: the rollout's wall-clock limit when ``timeout_seconds`` is not given
    DEFAULT_TIMEOUT_SECONDS: ClassVar[float] = DEFAULT_TIMEOUT_SECONDS

    def __init__(
        self,
        run_command: str,
        *,
        max_turns: int = -1,
        timeout_seconds: float | EllipsisType | None = ...,
        environment_vars: Mapping[str, str] | None = None,
        keep_sandbox_for_scoring: bool = False,
        sandbox_backend: str | None = None,
        sandbox_limits: SandboxLimits | None = None,
        memory_gb: float | None = 2,
        disk_size_gb: float | None = None,
        ro_binds: Mapping[str, str] | None = None,
        max_live_sandboxes: int = DEFAULT_MAX_LIVE_SANDBOXES,
        max_request_bytes: int = 16 << 20,
        request_read_timeout: float = 60.0,
        start_command: str | None = None,
        docker_image: str | None = None,
        **kwargs: Any,
    ) -> None:
        ignored = sorted(k for k in kwargs if k in _PRIME_ONLY)
        for key in ignored:
            value = kwargs.pop(key)
            if key == "gpu_count" and value:
                raise ConfigError("local sandboxes have no GPUs: gpu_count must be 0")
        if ignored:
            logger.debug("CliAgentEnv: ignoring hosted-sandbox options: %s", ", ".join(ignored))
        if kwargs.get("message_type", "chat") != "chat":
            raise ConfigError("CliAgentEnv intercepts chat requests: message_type must be 'chat'")
        kwargs.pop("message_type", None)
        if not isinstance(run_command, str) or not run_command.strip():
            raise ConfigError("CliAgentEnv needs run_command: the shell command running the agent")
        if sandbox_backend not in (None, "bwrap", "docker", "subprocess"):
            raise ConfigError(
                f"CliAgentEnv runs agents on the bwrap (default), docker (an engine on this "
                f"machine) or subprocess backend, not {sandbox_backend!r}: the interception "
                "socket is bind-mounted into the sandbox"
            )
        if max_live_sandboxes < 1:
            raise ConfigError(f"max_live_sandboxes must be at least 1, got {max_live_sandboxes}")
        if not request_read_timeout > 0 or max_request_bytes <= 0:
            raise ConfigError("max_request_bytes and request_read_timeout must be positive")
        if sandbox_backend == "subprocess":
            from verifiers.sandbox.subprocess_backend import warn_not_isolated

            warn_not_isolated("CliAgentEnv(sandbox_backend='subprocess')")
        if timeout_seconds is ...:
            timeout_seconds = self.DEFAULT_TIMEOUT_SECONDS
        super().__init__(
            max_turns=max_turns, timeout_seconds=timeout_seconds, message_type="chat", **kwargs
        )
        limits = sandbox_limits or SandboxLimits()
        changes: dict[str, Any] = {}
        if memory_gb is not None and sandbox_limits is None:
            changes["memory_mb"] = int(memory_gb * 1024)
        if disk_size_gb is not None:
            changes["disk_mb"] = int(disk_size_gb * 1024)
        self.sandbox_limits = limits.replace(**changes) if changes else limits
        self.run_command = run_command
        self.environment_vars = dict(environment_vars or {})
        clash = sorted(PROTECTED_ENV_VARS & set(self.environment_vars))
        if clash:
            raise ConfigError(
                f"environment_vars cannot set {', '.join(clash)}: the environment points the "
                "agent at its interception channel"
            )
        self.keep_sandbox_for_scoring = keep_sandbox_for_scoring
        self.sandbox_backend = sandbox_backend
        self.ro_binds = dict(ro_binds or {})
        self.max_live_sandboxes = max_live_sandboxes
        self.max_request_bytes = max_request_bytes
        self.request_read_timeout = request_read_timeout
        self.start_command = start_command if start_command != "tail -f /dev/null" else None
        # the image for the docker backend (needs python3 for the relay); ignored elsewhere
        self.docker_image = docker_image
        self._server: InterceptionServer | None = None
        self._server_loop: asyncio.AbstractEventLoop | None = None
        self._live: asyncio.Semaphore | None = None

    # interception ----------------------------------------------------------------------------

    def interception_server(self) -> InterceptionServer:
        """The process's interception server (one per event loop)."""
        from verifiers.agents.interception import InterceptionServer

        loop = asyncio.get_running_loop()
        if self._server is None or self._server_loop is not loop:
            self._server = InterceptionServer(
                max_body_bytes=self.max_request_bytes, read_timeout=self.request_read_timeout
            )
            self._server_loop = loop
            self._live = asyncio.Semaphore(self.max_live_sandboxes)
        return self._server

    # hooks (classic names) -------------------------------------------------------------------

    async def build_env_vars(self, state: State) -> dict[str, str]:
        """The agent's environment variables: ``environment_vars`` and ``VF_TASK`` (the text of
        the prompt's last user message). Override to add more (the interception ones are set
        afterwards and cannot be changed)."""
        return {"VF_TASK": task_text(state["prompt"]), **self.environment_vars}

    async def post_sandbox_setup(self, state: State) -> None:
        """Hook: prepare the sandbox (``state["sandbox"]``) before the agent starts: write the
        task's files, start services. Raising ends the rollout as errored."""

    async def post_rollout(self, state: State) -> None:
        """Hook: runs when the agent has been stopped and before its sandbox is (unless
        ``keep_sandbox_for_scoring``): keep in ``state`` what grading needs."""

    async def normalize_intercepted_messages(self, messages: list[dict[str, Any]]) -> Messages:
        """Hook: the agent's messages as the model should see them (default: as sent)."""
        return messages  # type: ignore[return-value]

    async def normalize_response(self, response: ModelResponse) -> ModelResponse:
        """Hook: the model's response as recorded and returned to the agent."""
        return response

    async def env_response(self, messages: Messages, state: State, **kwargs: Any) -> Messages:
        """The agent is the environment's side of the conversation: nothing to add."""
        return []

    # the rollout -----------------------------------------------------------------------------

    async def setup_state(self, state: State) -> State:
        state = await super().setup_state(state) or state
        server = self.interception_server()
        assert self._live is not None
        await self._live.acquire()
        state["_agent_live"] = self._live
        state["agent_completed"] = False
        state["agent_exit_code"] = None
        channel = await self._open_channel(state, server)
        channel.model_name = str(state.get("model") or "model")
        sandbox: Sandbox = state["sandbox"]
        await self.post_sandbox_setup(state)
        env = await self.build_env_vars(state)
        env.update(
            {
                "OPENAI_BASE_URL": state["interception_base_url"],
                "OPENAI_API_BASE": state["interception_base_url"],
                "OPENAI_API_KEY": channel.secret,
                "OPENAI_MODEL": str(state.get("model") or "model"),
                "ANTHROPIC_BASE_URL": state["interception_base_url"].removesuffix("/v1"),
                "ANTHROPIC_API_KEY": channel.secret,
            }
        )
        if self.start_command:
            await sandbox.spawn(["/bin/sh", "-c", self.start_command], env=env)
        state["agent_start_time"] = time.time()
        try:
            proc = await sandbox.spawn(["/bin/sh", "-c", self.run_command], env=env)
        except SandboxError as e:
            raise AgentError(f"the agent could not be started: {e}") from e
        state["_agent_task"] = asyncio.ensure_future(self._watch_agent(proc, state))
        state["_agent_proc"] = proc
        return state

    async def _open_channel(self, state: State, server: InterceptionServer) -> Channel:
        """Start the sandbox and open the rollout's channel, reachable from that sandbox only;
        sets ``sandbox`` and ``interception_base_url``. Local sandboxes (bwrap, subprocess):
        the channel listens on a socket the sandbox's agent opened on the sandbox's own
        loopback (no relay process). Docker: a Unix socket bound into the container and a
        relay (:data:`FORWARDER`) in it."""
        if self.sandbox_backend == "docker":
            channel = await server.open_channel()
            state["_agent_channel"] = channel
            sandbox = await self._start_sandbox(channel.path)
            state["sandbox"] = sandbox
            state["sandbox_id"] = sandbox.id
            port = await self._start_forwarder(state, sandbox, channel)
        else:
            sandbox = await self._start_sandbox(None)
            state["sandbox"] = sandbox
            state["sandbox_id"] = sandbox.id
            # before any code of the task or the agent runs in the sandbox
            listener = await sandbox.listen_loopback()  # type: ignore[attr-defined]
            port = int(listener.getsockname()[1])
            try:
                channel = await server.open_channel(listener=listener)
            except BaseException:
                listener.close()
                raise
            state["_agent_channel"] = channel
        state["interception_base_url"] = channel.base_url(port)
        return channel

    async def _start_sandbox(self, socket_path: str | None) -> Sandbox:
        from verifiers.sandbox import create_sandbox

        options: dict[str, Any] = {}
        if socket_path is not None:
            options["ro_binds"] = {**self.ro_binds, socket_path: SOCKET_INSIDE}
        elif self.sandbox_backend != "subprocess":
            options["ro_binds"] = dict(self.ro_binds)
        if self.sandbox_backend == "docker" and self.docker_image:
            options["image"] = self.docker_image
        if self.sandbox_backend is None:
            from verifiers.sandbox.bwrap import bwrap_available

            if not bwrap_available():
                raise SandboxError(NO_BWRAP)
        with warnings.catch_warnings():  # subprocess: warned once, at construction
            warnings.simplefilter("ignore", RuntimeWarning)
            sandbox = create_sandbox(self.sandbox_backend, limits=self.sandbox_limits, **options)
        await sandbox.start()
        return sandbox

    async def _start_forwarder(self, state: State, sandbox: Sandbox, channel: Channel) -> int:
        from verifiers.agents.interception import FORWARDER

        target = channel.path if sandbox.backend == "subprocess" else SOCKET_INSIDE
        proc = await sandbox.spawn(["python3", "-c", FORWARDER, target])
        state["_agent_relay"] = proc
        try:
            line = await asyncio.wait_for(proc.readline(), self.sandbox_limits.start_timeout)
        except TimeoutError:
            line = b""
        try:
            return int(line)
        except ValueError:
            raise SandboxError(
                "the interception relay did not start in the sandbox: "
                f"{proc.stderr_tail().decode(errors='replace')[-500:]}"
            ) from None

    async def _watch_agent(self, proc: Any, state: State) -> None:
        """Wait for the agent's exit, keeping the tails of its output. A process it left behind
        may hold its stdout open: the exit counts, not the end of output."""
        tail = bytearray()

        async def read() -> None:
            while chunk := await proc.read(1 << 16):
                tail.extend(chunk)
                if len(tail) > _TAIL:
                    del tail[: len(tail) - _TAIL]

        reader = asyncio.ensure_future(read())
        try:
            code = await proc.wait()
            with contextlib.suppress(TimeoutError):  # what it wrote before exiting
                await asyncio.wait_for(asyncio.shield(reader), 1.0)
        finally:
            reader.cancel()
            with contextlib.suppress(BaseException):
                await reader
            state["agent_stdout"] = tail.decode("utf-8", "replace")
            state["agent_stderr"] = proc.stderr_tail().decode("utf-8", "replace")[-_TAIL:]
        state["agent_exit_code"] = code

    async def _next_call(self, state: State) -> InterceptedCall | None:
        """The agent's next request, or None once it has exited or gone over the interception
        server's limits."""
        channel: Channel = state["_agent_channel"]
        agent: asyncio.Task[None] = state["_agent_task"]
        getter = asyncio.ensure_future(channel.next_call())
        limit = asyncio.ensure_future(channel.limit_hit())
        try:
            await asyncio.wait({getter, agent, limit}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in (getter, limit):
                if not waiter.done():
                    waiter.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await waiter
        if getter.done() and not getter.cancelled():
            return getter.result()
        return None

    async def _loop(self, state: State) -> None:
        """The agent drives: each of its requests is one model call of the rollout, recorded
        by the same code path as every environment's turns."""
        try:
            new_state = await self.setup_state(state)
            if new_state is not None and new_state is not state:
                state.update(new_state)
            while not await self._should_stop(state, state["prompt"]):
                call = await self._next_call(state)
                if call is None:
                    if not self._over_limits(state):
                        self._agent_finished(state)
                    continue
                await self._answer(state, call)
        finally:
            await self._stop_agent(state)

    async def _answer(self, state: State, call: InterceptedCall) -> None:
        state["_current_call"] = call
        try:
            prompt = await self.normalize_intercepted_messages(call.messages)
            if not state["trajectory"]:  # the agent's first prompt is the rollout's prompt
                state["prompt"] = prompt
            state["oai_tools"] = call.tools or []
            try:
                response = await self._model_turn(
                    state, prompt, sampling_args=call.sampling_args, tools=call.tools
                )
            except OverlongPromptError as e:
                call.fail(400, f"the prompt is too long: {e}", "context_length_exceeded")
                state["prompt_too_long"] = True
                state["is_truncated"] = True
                state["stop_condition"] = "prompt_too_long"
                return
            response = await self.normalize_response(response)
            # the step's prompt is what the agent sent: its history need not be the
            # rollout's transcript
            self._record_step(state, response, len(prompt), [response.message], prompt)
            step = cast(dict[str, Any], state["trajectory"][-1])
            step["extras"]["prompt"] = prompt
            completion = prompt[len(state["prompt"]) :] if _extends(prompt, state["prompt"]) else []
            state["completion"] = [*completion, response.message]
            call.answer(response)
        except BaseException as e:
            call.fail(502, f"the model call failed: {type(e).__name__}")
            raise
        finally:
            state.pop("_current_call", None)

    @staticmethod
    def _over_limits(state: State) -> bool:
        """Record (once) the interception limits the agent went over as the rollout's error;
        whether it went over any."""
        channel: Channel | None = state.get("_agent_channel")
        if channel is None or not channel.limit_errors:
            return False
        if state.get("error") is None:
            state["error"] = {
                "type": "InterceptionLimitError",
                "message": "the agent went over the interception server's limits: "
                + "; ".join(channel.limit_errors),
            }
        return True

    def _agent_finished(self, state: State) -> None:
        state["agent_completed"] = True
        code = state.get("agent_exit_code")
        if code not in (0, None) and state.get("error") is None:
            turns = len(state["trajectory"])
            err = (state.get("agent_stderr") or "")[-2000:]
            error = AgentError(
                f"the agent exited with status {code} after {turns} model call(s): {err}"
            )
            state["error"] = {"type": "AgentError", "message": str(error)}

    async def _stop_agent(self, state: State) -> None:
        """Stop the agent (and, unless kept for scoring, its sandbox); run ``post_rollout``."""
        channel: Channel | None = state.get("_agent_channel")
        if channel is not None:
            await channel.close()
            self._over_limits(state)
        task: asyncio.Task[None] | None = state.get("_agent_task")
        sandbox: Sandbox | None = state.get("sandbox")
        for key in ("_agent_proc", "_agent_relay"):
            proc = state.pop(key, None)
            if proc is None:
                continue
            with contextlib.suppress(Exception):
                if sandbox is not None and sandbox.running:
                    await asyncio.wait_for(proc.kill(), 10.0)
                else:
                    await proc.close_stdin()
        if task is not None and not task.done():
            task.cancel()
        if task is not None:
            with contextlib.suppress(BaseException):
                await task
        if (
            sandbox is not None
            and sandbox.running
            and sandbox.backend == "bwrap"
            and self._sandbox_outlives_agent()
        ):
            # what the agent left behind (detached, reparented): in its own pid namespace
            # everything but the sandbox's init dies, so nothing runs during post_rollout or
            # scoring
            with contextlib.suppress(Exception):
                await sandbox.exec(["python3", "-c", _KILL_ALL], timeout=30)
        if sandbox is not None and sandbox.running:
            try:
                await self.post_rollout(state)
            finally:
                if not self.keep_sandbox_for_scoring:
                    await self._stop_sandbox(state)

    def _sandbox_outlives_agent(self) -> bool:
        """Whether code runs in the sandbox after the agent (``post_rollout`` overridden, or
        the sandbox kept for scoring): only then are the agent's leftovers killed first (one
        more process); otherwise stopping the sandbox ends them."""
        overridden = type(self).post_rollout is not CliAgentEnv.post_rollout
        return overridden or self.keep_sandbox_for_scoring

    async def _stop_sandbox(self, state: State) -> None:
        sandbox: Sandbox | None = state.get("sandbox")
        if sandbox is not None:
            await sandbox.stop()
        live: asyncio.Semaphore | None = state.pop("_agent_live", None)
        if live is not None:
            live.release()

    @stop(priority=50)
    async def agent_completed(self, state: State) -> bool:
        return bool(state.get("agent_completed"))

    def add_metrics(self, state: State) -> None:
        super().add_metrics(state)
        code = state.get("agent_exit_code")
        state["metrics"]["agent_timeout"] = float(bool(state.get("timed_out")))
        state["metrics"]["agent_error"] = float(code is not None and code != 0)

    @cleanup
    async def cleanup_agent(self, state: State) -> None:
        """Whatever the rollout's end, the channel is closed and the sandbox stopped."""
        channel: Channel | None = state.pop("_agent_channel", None)
        if channel is not None:
            await channel.close()
        await self._stop_sandbox(state)
        state.pop("sandbox", None)
        state.pop("_agent_task", None)

    @teardown
    async def teardown_interception(self) -> None:
        if self._server is not None:
            await self._server.close()
            self._server = None


def task_text(prompt: Messages | str) -> str:
    """The text of the last user message of ``prompt`` (a string prompt as it is)."""
    if isinstance(prompt, str):
        return prompt
    for message in reversed(prompt):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return "".join(
                    p.get("text", "") for p in content if isinstance(p, dict) and p.get("text")
                )
    return ""


def _extends(prompt: Messages, first: Messages | str) -> bool:
    return isinstance(first, list) and len(prompt) >= len(first) and prompt[: len(first)] == first


# names 0.3.x's version of this module imports, served on first use (verifiers.classic.forward)
from verifiers.classic.forward import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
