"""``vf eval`` / ``vf-eval``: evaluate an environment against a model.

Classic flags keep their meaning: ``-m MODEL -b BASE_URL -k KEY_VAR -n N -r R -c CONCURRENCY
-t MAX_TOKENS -T TEMPERATURE -S SAMPLING_JSON -a ENV_ARGS_JSON -o OUTPUT_DIR -s -e ENDPOINTS``.
``-m oracle`` needs no endpoint: it answers every example with its gold answer.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperCommand

from cli._common import CLIError, handle_errors
from cli.eval_report import Progress, error_verdict, run_with_progress, show_result

HELP = (
    "Evaluate an environment against a model behind an OpenAI-compatible endpoint "
    "(or the built-in `-m oracle`). `vf eval push RUN_DIR` shares a run on the hub; "
    "`vf eval runs list OWNER/NAME` lists shared runs (also hide, unhide, delete); "
    "`vf eval rescore RUN_DIR` re-scores a saved run with the current rubric. "
    "v1 environments also take verifiers 0.4's command line: dotted config flags "
    "(--client.base-url URL, --env.agent.max-turns N, --sampling.max-tokens N) and "
    "@ FILE.toml; `vf-eval TASKSET --no-push --help` lists them."
)

# run alone as `vf-eval` too: no completion commands, plain tracebacks and help
app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_KEY_VAR = "OPENAI_API_KEY"


def _json_arg(value: str | None, flag: str) -> dict[str, Any]:
    if not value:
        return {}
    try:
        data = json.loads(value)
    except json.JSONDecodeError as e:
        raise CLIError(
            f"{flag} is not valid JSON: {e.msg} at position {e.pos}",
            hint=f"""example: {flag} '{{"key": "value"}}'""",
            exit_code=2,
        ) from None
    if not isinstance(data, dict):
        raise CLIError(f"{flag} must be a JSON object, got {type(data).__name__}", exit_code=2)
    return data


def _resolve_endpoint(
    model: str, base_url: str | None, key_var: str | None, endpoints_path: str | None
) -> Any:
    """The :class:`verifiers.EndpointConfig` for ``-m`` from the registry or the flags."""
    from verifiers.clients.endpoints import EndpointConfig, load_endpoints

    named_var = key_var or os.environ.get("VF_API_KEY_VAR")
    if named_var and os.environ.get(named_var) is None:
        source = "-k" if key_var else "VF_API_KEY_VAR"
        raise CLIError(
            f"the API key variable ${named_var} (named by {source}) is not set",
            hint=f"export {named_var}=..., or name the variable that holds the key",
            exit_code=2,
        )
    default_registry = Path("configs/endpoints.toml")
    registry = endpoints_path or (str(default_registry) if default_registry.is_file() else None)
    aliases: list[str] = []
    if registry:
        if not Path(registry).is_file():
            raise CLIError(
                f"endpoints file {registry} does not exist",
                hint="configs/endpoints.toml in the repository shows the format",
                exit_code=2,
            )
        endpoints = load_endpoints(registry)
        if model in endpoints:
            ep = endpoints[model]
            if key_var:
                import dataclasses

                ep = dataclasses.replace(ep, api_key_var=key_var)
            elif ep.api_key_var and os.environ.get(ep.api_key_var) is None:
                raise CLIError(
                    f"alias {model!r} in {registry} takes its API key from "
                    f"${ep.api_key_var}, which is not set",
                    hint=f"export {ep.api_key_var}=..., pass -k VAR_NAME to read the key from "
                    "another variable, or remove api_key_var from the alias if its server "
                    "needs no key",
                    exit_code=2,
                )
            return ep
        aliases = sorted(endpoints)
        if endpoints_path and not base_url:
            raise CLIError(
                f"{model!r} is not an alias in {registry} (aliases: {', '.join(aliases) or 'none'})",
                hint="pick one of them with -m, or pass -b URL to use it as a model name",
                exit_code=2,
            )
    url = base_url or os.environ.get("VF_BASE_URL") or DEFAULT_BASE_URL
    var = named_var or DEFAULT_KEY_VAR
    if os.environ.get(var) is None and url == DEFAULT_BASE_URL:
        known = (
            f"{model!r} is not an alias in {registry} ({', '.join(aliases)}), and "
            if aliases
            else ""
        )
        raise CLIError(
            f"{known}no API key for {url}: ${var} is not set",
            hint=f"export {var}=..., pass -k VAR_NAME, point -b at your own endpoint, or use -m oracle",
            exit_code=2,
        )
    # the default variable is implicit: unset, a self-hosted server gets no key (a variable
    # named by -k or VF_API_KEY_VAR was checked above)
    if os.environ.get(var) is None:
        return EndpointConfig(model=model, base_urls=[url], api_key_var=None, alias=model)
    return EndpointConfig(model=model, base_urls=[url], api_key_var=var, alias=model)


def _load(env_id: str, env_kwargs: dict[str, Any], install: bool) -> Any:
    """The environment for ``ENV_ID``: an installed id, or a package directory (not installed).

    ``OWNER/NAME`` that is not installed is installed from the configured hub when ``install``
    is set, or after a yes on a terminal.
    """
    import verifiers as vf
    from verifiers.loading import load_environment_from_directory

    if Path(env_id).is_dir():
        return load_environment_from_directory(env_id, **env_kwargs)
    try:
        return vf.load_environment(env_id, **env_kwargs)
    except vf.EnvironmentNotFoundError as e:
        if "/" not in env_id:
            raise
        if not (install or _confirm_install(env_id)):
            raise CLIError(
                str(e), hint="or add --install to install it from the hub now", exit_code=2
            ) from None
    from cli import env_cmd

    env_cmd.install(spec=env_id, no_deps=False)
    import importlib

    importlib.invalidate_caches()
    return vf.load_environment(env_id, **env_kwargs)


def _confirm_install(env_id: str) -> bool:
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return False
    from verifiers.hub.config import HubSettings

    return bool(
        typer.confirm(
            f"{env_id} is not installed; install it from {HubSettings.load().url}?",
            default=True,
            err=True,
        )
    )


def _check_counts(num_examples: int | None, rollouts: int | None, concurrent: int | None) -> None:
    """``-n`` is -1 (all) or at least 1; ``-r`` and ``-c`` are at least 1."""
    if num_examples is not None and num_examples != -1 and num_examples < 1:
        raise CLIError(
            f"-n/--num-examples must be -1 (all) or at least 1, got {num_examples}", exit_code=2
        )
    if rollouts is not None and rollouts < 1:
        raise CLIError(f"-r/--rollouts-per-example must be at least 1, got {rollouts}", exit_code=2)
    if concurrent is not None and concurrent < 1:
        raise CLIError(f"-c/--max-concurrent must be at least 1, got {concurrent}", exit_code=2)


_ENV_ID = typer.Argument(
    ..., metavar="ENV_ID", help="Environment id: NAME, OWNER/NAME or OWNER/NAME@VERSION."
)

_MODEL = typer.Option(
    "gpt-4.1-mini", "--model", "-m", help="Model name, endpoint alias, or 'oracle'."
)

_API_BASE_URL = typer.Option(
    None,
    "--api-base-url",
    "-b",
    help="OpenAI-compatible base URL (default $VF_BASE_URL or OpenAI).",
)

_API_KEY_VAR = typer.Option(
    None, "--api-key-var", "-k", help="Environment variable holding the API key."
)

_ENDPOINTS_PATH = typer.Option(
    None, "--endpoints-path", "-e", help="endpoints.toml registry of model aliases."
)

_NUM_EXAMPLES = typer.Option(
    None,
    "--num-examples",
    "-n",
    help="Examples to evaluate (-1: all; default from the env or 5).",
)

_ROLLOUTS_PER_EXAMPLE = typer.Option(
    None,
    "--rollouts-per-example",
    "-r",
    help="Rollouts per example (default from the env or 3).",
)

_MAX_CONCURRENT = typer.Option(
    None,
    "--max-concurrent",
    "-c",
    metavar="N|auto[:MAX]",
    help="Rollouts in flight at once (default 32); 'auto' adapts to the endpoint (backs off "
    "on 429/5xx and rising latency), up to MAX (default 256).",
)

_MAX_TOKENS = typer.Option(None, "--max-tokens", "-t", help="Max tokens per model call.")

_TEMPERATURE = typer.Option(None, "--temperature", "-T", help="Sampling temperature.")

_SAMPLING_ARGS = typer.Option(
    None, "--sampling-args", "-S", help="Sampling arguments as a JSON object."
)

_ENV_ARGS = typer.Option(
    None, "--env-args", "-a", help="Arguments for load_environment as a JSON object."
)

_OUTPUT_DIR = typer.Option(
    None, "--output-dir", "-o", help="Run directory (implies --save-results)."
)

_SAVE_RESULTS = typer.Option(
    False, "--save-results", "-s", help="Write results.jsonl and metadata.json."
)

_RESUME = typer.Option(
    False,
    "--resume",
    "-R",
    help="Continue the matching earlier run: only missing or errored rollouts run.",
)

_OVERWRITE = typer.Option(
    False,
    "--overwrite",
    help="Replace the run already in --output-dir (without it, a run there is refused "
    "unless --resume continues it).",
)

_STATE_COLUMNS = typer.Option(
    [], "--state-columns", "-C", help="Extra state keys to save (repeatable)."
)

_MAX_RETRIES = typer.Option(5, "--max-retries", help="Retries per request for transient errors.")

_TIMEOUT = typer.Option(600.0, "--timeout", help="Seconds per request before it counts as failed.")

_API_CLIENT_TYPE = typer.Option(
    "native", "--api-client-type", help="'native' (fast aiohttp) or 'openai' (official SDK)."
)

_MAX_ERROR_RATE = typer.Option(
    None,
    "--max-error-rate",
    min=0.0,
    max=1.0,
    help="Exit 1 when more than this fraction of rollouts errored (default: only when all did).",
)

_CACHE = typer.Option(
    None,
    "--cache",
    metavar="[DURATION]",
    help="Answer model calls from the on-disk response cache and store new answers; "
    "DURATION (7d, 12h, 30m) makes older entries misses. A re-run makes no model calls.",
)

_CACHE_DIR = typer.Option(
    None,
    "--cache-dir",
    help="Response cache directory (default $VF_CACHE_DIR or ~/.cache/verifiers/responses).",
)

_RETRY_ON_ERROR = typer.Option(
    0,
    "--retry-on-error",
    min=0,
    metavar="N",
    help="Run a rollout that ended in a model or infrastructure error again, up to N times "
    "(reward-function errors are not retried); --max-error-rate counts what is left after.",
)

_INSTALL = typer.Option(
    False,
    "--install",
    help="Install OWNER/NAME from the configured hub when it is not installed (no prompt).",
)

_SAMPLES = typer.Option(
    3, "--samples", min=0, help="Sample rollouts to print after the summary (0: none)."
)

_VERBOSE = typer.Option(False, "--verbose", "-v", help="Debug logging.")

_AS_JSON = typer.Option(
    False, "--json", help="Print the run's metadata as JSON (nothing else on stdout)."
)

_DEBUG = typer.Option(False, "--debug", help="Show tracebacks on errors.")

_PUSH = typer.Option(
    False, "--push", help="Push the finished run to the hub (as `vf eval push RUN_DIR`)."
)

_ALLOW_UNVERIFIED = typer.Option(
    False, "--allow-unverified", help="With --push: accept an unverified environment."
)

_RAY = typer.Option(
    None,
    "--ray",
    metavar="ADDRESS",
    help="Run the rollout groups on a Ray cluster: 'local' (a throwaway one on this "
    "machine), 'auto' or HOST:PORT (needs the ray extra).",
)

_RAY_WORKERS = typer.Option(
    None, "--ray-workers", min=1, help="Ray rollout workers (default: the cluster's CPUs)."
)

_RAY_SANDBOX = typer.Option(
    0.0,
    "--ray-sandbox",
    min=0.0,
    help="Units of the custom 'sandbox' resource each Ray worker needs (0: none).",
)


def cache_flag_argv(args: list[str]) -> list[str]:
    """``--cache`` takes an optional DURATION (it starts with a digit): a bare ``--cache``
    (last, or followed by an option or by ENV_ID) becomes ``--cache=forever``."""
    out: list[str] = []
    for i, arg in enumerate(args):
        if arg == "--":
            return out + args[i:]
        nxt = args[i + 1] if i + 1 < len(args) else ""
        out.append("--cache=forever" if arg == "--cache" and not nxt[:1].isdigit() else arg)
    return out


@dataclass
class EvalOptions:
    """What ``vf-eval`` was asked to do: its flags, one field each."""

    env_id: str
    model: str
    api_base_url: str | None
    api_key_var: str | None
    endpoints_path: str | None
    num_examples: int | None
    rollouts_per_example: int | None
    max_concurrent: str | None
    max_tokens: int | None
    temperature: float | None
    sampling_args: str | None
    env_args: str | None
    output_dir: str | None
    save_results: bool
    resume: bool
    overwrite: bool
    state_columns: list[str]
    max_retries: int
    timeout: float
    api_client_type: str
    max_error_rate: float | None
    install: bool
    samples: int
    verbose: bool
    as_json: bool
    debug: bool
    push: bool
    allow_unverified: bool
    ray_address: str | None = None
    ray_workers: int | None = None
    ray_sandbox: float = 0.0
    cache: str | None = None
    cache_dir: str | None = None
    retry_on_error: int = 0


class _EvalCommand(TyperCommand):
    """``vf eval``: a command line in verifiers 0.4's v1 shape (dotted flags, ``@ FILE``;
    see :mod:`cli.eval_v1`) runs as a v1 eval; any other is parsed as the classic flags."""

    # ctx: the Context of the click typer bundles (typer.Context derives from it)
    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        from cli.eval_v1 import is_v1_command_line

        if is_v1_command_line(args, self.params):
            ctx.meta[_V1_ARGV] = list(args)
            return []
        return super().parse_args(ctx, args)

    def invoke(self, ctx: Any) -> Any:
        if _V1_ARGV in ctx.meta:
            from cli.eval_v1 import run_v1_command

            return handle_errors(run_v1_command)(ctx.meta[_V1_ARGV])
        return super().invoke(ctx)


_V1_ARGV = "vf_eval.v1_argv"


@app.command("eval", help=HELP, cls=_EvalCommand)
@handle_errors
def eval_command(
    env_id: str = _ENV_ID,
    model: str = _MODEL,
    api_base_url: str | None = _API_BASE_URL,
    api_key_var: str | None = _API_KEY_VAR,
    endpoints_path: str | None = _ENDPOINTS_PATH,
    num_examples: int | None = _NUM_EXAMPLES,
    rollouts_per_example: int | None = _ROLLOUTS_PER_EXAMPLE,
    max_concurrent: str | None = _MAX_CONCURRENT,
    max_tokens: int | None = _MAX_TOKENS,
    temperature: float | None = _TEMPERATURE,
    sampling_args: str | None = _SAMPLING_ARGS,
    env_args: str | None = _ENV_ARGS,
    output_dir: str | None = _OUTPUT_DIR,
    save_results: bool = _SAVE_RESULTS,
    resume: bool = _RESUME,
    overwrite: bool = _OVERWRITE,
    state_columns: list[str] = _STATE_COLUMNS,
    max_retries: int = _MAX_RETRIES,
    timeout: float = _TIMEOUT,
    api_client_type: str = _API_CLIENT_TYPE,
    max_error_rate: float | None = _MAX_ERROR_RATE,
    install: bool = _INSTALL,
    samples: int = _SAMPLES,
    verbose: bool = _VERBOSE,
    as_json: bool = _AS_JSON,
    debug: bool = _DEBUG,
    push: bool = _PUSH,
    allow_unverified: bool = _ALLOW_UNVERIFIED,
    ray_address: str | None = _RAY,
    ray_workers: int | None = _RAY_WORKERS,
    ray_sandbox: float = _RAY_SANDBOX,
    cache: str | None = _CACHE,
    cache_dir: str | None = _CACHE_DIR,
    retry_on_error: int = _RETRY_ON_ERROR,
) -> None:
    opts = EvalOptions(**locals())  # every parameter, by name: nothing else is defined yet
    run_dir: list[Path | None] = [None]
    result = show_result(
        lambda: _execute(opts, run_dir), as_json=opts.as_json, samples=opts.samples
    )
    finish_run(
        result,
        max_error_rate=opts.max_error_rate,
        push=opts.push,
        allow_unverified=opts.allow_unverified,
        as_json=opts.as_json,
    )


def finish_run(
    result: Any,
    *,
    max_error_rate: float | None,
    push: bool,
    allow_unverified: bool,
    as_json: bool,
) -> None:
    """After the run: push it (``--push``), print the JSON (``--json``), fail on errors."""
    failed = error_verdict(result.metadata["summary"], max_error_rate)
    pushed = None
    if push and not failed and result.path:
        from cli.eval_push import push_run, report

        pushed = push_run(result.path, env=None, allow_unverified=allow_unverified)
        if not as_json:
            report(pushed)
    if as_json:
        out = dict(result.metadata)
        out["path"] = str(result.path) if result.path else None
        if pushed is not None:
            out["pushed"] = pushed
        sys.stdout.write(json.dumps(out, default=str) + "\n")
    if failed:
        raise CLIError(failed, hint=f"details per rollout: {result.path or 'run with -s'}")


def _execute(o: EvalOptions, run_dir: list[Path | None]) -> Any:
    """Load, resolve the endpoint, run with a progress display; ``run_dir[0]`` gets the run
    directory as soon as the run has one (for the Ctrl-C message)."""
    import logging

    import verifiers as vf

    logging.basicConfig(level=logging.DEBUG if o.verbose else logging.WARNING, stream=sys.stderr)
    env_kwargs = _json_arg(o.env_args, "--env-args")
    sampling = _json_arg(o.sampling_args, "--sampling-args")
    if o.max_tokens is not None:
        sampling["max_tokens"] = o.max_tokens
    if o.temperature is not None:
        sampling["temperature"] = o.temperature
    if o.api_client_type not in ("native", "openai"):
        raise CLIError(
            f"--api-client-type must be 'native' or 'openai', not {o.api_client_type!r}",
            exit_code=2,
        )
    concurrency = _concurrency_arg(o.max_concurrent)
    _check_counts(
        o.num_examples,
        o.rollouts_per_example,
        concurrency if isinstance(concurrency, int) else None,
    )
    if o.resume and o.overwrite:
        raise CLIError(
            "--resume continues the run in the output directory and --overwrite replaces it: "
            "give one of them",
            exit_code=2,
        )
    cache = _cache_arg(o)
    if o.retry_on_error and o.ray_address:
        raise CLIError("--retry-on-error works without --ray: give one of them", exit_code=2)
    env = _load(o.env_id, env_kwargs, o.install)
    # only what the user gave: the library applies the defaults (the environment's
    # [tool.verifiers.eval], else its own), exactly as for vf.evaluate()
    given: dict[str, Any] = {
        "num_examples": o.num_examples,
        "rollouts_per_example": o.rollouts_per_example,
    }
    if concurrency is not None:
        given["max_concurrent"] = concurrency
    client, endpoint, model_name = _client(o)
    executor = _ray_executor(o, env_kwargs) if o.ray_address else None
    progress = None if o.as_json else Progress(o.env_id, model_name)

    def started(path: Path | None) -> None:
        run_dir[0] = path

    async def run() -> vf.EvalResult:
        try:
            return await vf.evaluate_async(
                env,
                client,
                model_name,
                sampling_args=sampling,
                save_results=o.save_results or o.resume or o.push or o.output_dir is not None,
                output_dir=o.output_dir,
                resume=o.resume,
                overwrite=o.overwrite,
                state_columns=o.state_columns,
                on_progress=progress.update if progress else None,
                endpoint=endpoint,
                on_start=started,
                on_total=progress.set_total if progress else None,
                on_concurrency=progress.set_concurrency if progress else None,
                executor=executor,
                cache=cache,
                cache_dir=o.cache_dir,
                retry_on_error=o.retry_on_error,
                **given,
            )
        finally:
            await client.close()
            await env.close()

    return run_with_progress(run, progress, lambda: _interrupted(run_dir[0]))


def _concurrency_arg(value: str | None) -> int | str | None:
    """``-c N`` (a number) or ``-c auto`` / ``-c auto:MAX``."""
    if value is None:
        return None
    text = value.strip().lower()
    if text == "auto" or (text.startswith("auto:") and text[5:].isdigit() and int(text[5:]) > 0):
        return text
    try:
        return int(text)
    except ValueError:
        raise CLIError(
            f"-c/--max-concurrent must be a number, 'auto' or 'auto:MAX', not {value!r}",
            exit_code=2,
        ) from None


def _cache_arg(o: EvalOptions) -> bool | str | None:
    """``--cache`` (no expiry), ``--cache DURATION``, or no cache; a bad duration is named."""
    if o.cache is None and o.cache_dir is None:
        return None
    if o.ray_address:
        raise CLIError("--cache works without --ray: give one of them", exit_code=2)
    if o.cache is None or o.cache == "forever":
        return True
    from verifiers.response_cache import parse_duration

    try:
        parse_duration(o.cache)
    except ValueError:
        raise CLIError(
            f"--cache {o.cache!r} is not a duration",
            hint="give it as 7d, 12h or 30m, or put --cache after ENV_ID and the other "
            "options for entries that never expire",
            exit_code=2,
        ) from None
    return o.cache


def _client(o: EvalOptions) -> tuple[Any, str | None, str]:
    """(client, endpoint URLs for the metadata, model name) for ``-m``."""
    import verifiers as vf

    if o.model == "oracle":
        return vf.OracleClient(), None, "oracle"
    ep = _resolve_endpoint(o.model, o.api_base_url, o.api_key_var, o.endpoints_path)
    from verifiers.clients.probe import probe_endpoint

    for url in ep.base_urls:  # a wrong URL fails now, not after a run of retries
        probe_endpoint(url, ep.api_key())
    retry = vf.RetryPolicy(max_retries=o.max_retries)
    client = ep.pool(timeout=o.timeout, retry=retry, client_type=o.api_client_type)
    return client, ",".join(ep.base_urls), ep.model


def _ray_executor(o: EvalOptions, env_kwargs: dict[str, Any]) -> Any:
    """The executor that runs the groups on the Ray cluster at ``--ray``: each worker builds
    its own client (the oracle, or the endpoint's pool; the API key variable goes with it)."""
    import functools

    import verifiers as vf
    from verifiers.distributed import EnvSpec, RayConfig, RayExecutor, oracle_client
    from verifiers.distributed.pool import ray_available

    if not ray_available():
        raise CLIError(
            "--ray needs Ray, which is not installed",
            hint="pip install 'verifiers[ray]'",
            exit_code=2,
        )
    factory: Any = oracle_client
    env_vars: dict[str, str] = {}
    if o.model != "oracle":
        ep = _resolve_endpoint(o.model, o.api_base_url, o.api_key_var, o.endpoints_path)
        retry = vf.RetryPolicy(max_retries=o.max_retries)
        factory = functools.partial(
            ep.pool, timeout=o.timeout, retry=retry, client_type=o.api_client_type
        )
        if ep.api_key_var and os.environ.get(ep.api_key_var) is not None:
            env_vars[ep.api_key_var] = os.environ[ep.api_key_var]
    assert o.ray_address is not None
    config = RayConfig(
        address=o.ray_address,
        num_workers=o.ray_workers,
        sandbox=o.ray_sandbox,
        env_vars=env_vars,
    )
    return RayExecutor(EnvSpec.of(o.env_id, env_kwargs), config, factory)


def _interrupted(run_dir: Path | None) -> CLIError:
    """Ctrl-C: where the partial results are and the command that continues the run."""
    import shlex

    args = list(sys.argv[1:])
    prog = "vf-eval" if Path(sys.argv[0]).name == "vf-eval" else "vf eval"
    if prog == "vf eval" and args[:1] == ["eval"]:
        args = args[1:]
    if run_dir is None:
        return CLIError("interrupted (results were not saved: add -s to keep them)", exit_code=130)
    if "--resume" not in args and "-R" not in args:
        args.append("--resume")
    if "-o" not in args and "--output-dir" not in args:
        args += ["-o", str(run_dir)]
    return CLIError(
        f"interrupted: the finished rollouts are saved in {run_dir}",
        hint=f"continue with: {prog} {shlex.join(args)}",
        exit_code=130,
    )
