"""``vf eval`` / ``vf-eval``: evaluate an environment against a model.

Classic flags keep their meaning: ``-m MODEL -b BASE_URL -k KEY_VAR -n N -r R -c CONCURRENCY
-t MAX_TOKENS -T TEMPERATURE -S SAMPLING_JSON -a ENV_ARGS_JSON -o OUTPUT_DIR -s -e ENDPOINTS``.
``-m oracle`` needs no endpoint: it answers every example with its gold answer.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
from pathlib import Path
from typing import Any

import typer

from cli._common import CLIError, handle_errors
from cli.eval_report import Progress, error_verdict, print_samples, print_summary

HELP = (
    "Evaluate an environment against a model behind an OpenAI-compatible endpoint "
    "(or the built-in `-m oracle`)."
)

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
            hint=f"export {named_var}=... , or name the variable that holds the key",
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
            hint=f"export {var}=... , pass -k VAR_NAME, point -b at your own endpoint, or use -m oracle",
            exit_code=2,
        )
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
    from cli.hub_config import hub_target

    return bool(
        typer.confirm(
            f"{env_id} is not installed; install it from {hub_target().url}?",
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


@handle_errors
def eval_command(
    env_id: str = typer.Argument(
        ..., metavar="ENV_ID", help="Environment id: NAME, OWNER/NAME or OWNER/NAME@VERSION."
    ),
    model: str = typer.Option(
        "gpt-4.1-mini", "--model", "-m", help="Model name, endpoint alias, or 'oracle'."
    ),
    api_base_url: str | None = typer.Option(
        None,
        "--api-base-url",
        "-b",
        help="OpenAI-compatible base URL (default $VF_BASE_URL or OpenAI).",
    ),
    api_key_var: str | None = typer.Option(
        None, "--api-key-var", "-k", help="Environment variable holding the API key."
    ),
    endpoints_path: str | None = typer.Option(
        None, "--endpoints-path", "-e", help="endpoints.toml registry of model aliases."
    ),
    num_examples: int | None = typer.Option(
        None,
        "--num-examples",
        "-n",
        help="Examples to evaluate (-1: all; default from the env or 5).",
    ),
    rollouts_per_example: int | None = typer.Option(
        None,
        "--rollouts-per-example",
        "-r",
        help="Rollouts per example (default from the env or 3).",
    ),
    max_concurrent: int | None = typer.Option(
        None, "--max-concurrent", "-c", help="Rollouts in flight at once (default 32)."
    ),
    max_tokens: int | None = typer.Option(
        None, "--max-tokens", "-t", help="Max tokens per model call."
    ),
    temperature: float | None = typer.Option(
        None, "--temperature", "-T", help="Sampling temperature."
    ),
    sampling_args: str | None = typer.Option(
        None, "--sampling-args", "-S", help="Sampling arguments as a JSON object."
    ),
    env_args: str | None = typer.Option(
        None, "--env-args", "-a", help="Arguments for load_environment as a JSON object."
    ),
    output_dir: str | None = typer.Option(
        None, "--output-dir", "-o", help="Run directory (implies --save-results)."
    ),
    save_results: bool = typer.Option(
        False, "--save-results", "-s", help="Write results.jsonl and metadata.json."
    ),
    resume: bool = typer.Option(
        False,
        "--resume",
        "-R",
        help="Continue the matching earlier run: only missing or errored rollouts run.",
    ),
    state_columns: list[str] = typer.Option(
        [], "--state-columns", "-C", help="Extra state keys to save (repeatable)."
    ),
    max_retries: int = typer.Option(
        5, "--max-retries", help="Retries per request for transient errors."
    ),
    timeout: float = typer.Option(
        600.0, "--timeout", help="Seconds per request before it counts as failed."
    ),
    api_client_type: str = typer.Option(
        "native", "--api-client-type", help="'native' (fast aiohttp) or 'openai' (official SDK)."
    ),
    max_error_rate: float | None = typer.Option(
        None,
        "--max-error-rate",
        min=0.0,
        max=1.0,
        help="Exit 1 when more than this fraction of rollouts errored (default: only when all did).",
    ),
    install: bool = typer.Option(
        False,
        "--install",
        help="Install OWNER/NAME from the configured hub when it is not installed (no prompt).",
    ),
    samples: int = typer.Option(
        3, "--samples", min=0, help="Sample rollouts to print after the summary (0: none)."
    ),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug logging."),
    as_json: bool = typer.Option(
        False, "--json", help="Print the run's metadata as JSON (nothing else on stdout)."
    ),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks on errors."),
    ray_address: str | None = typer.Option(
        None,
        "--ray",
        metavar="ADDRESS",
        help="Run the rollout groups on a Ray cluster: 'local' (a throwaway one on this "
        "machine), 'auto' or HOST:PORT (needs the ray extra).",
    ),
    ray_workers: int | None = typer.Option(
        None, "--ray-workers", min=1, help="Ray rollout workers (default: the cluster's CPUs)."
    ),
    ray_sandbox: float = typer.Option(
        0.0,
        "--ray-sandbox",
        min=0.0,
        help="Units of the custom 'sandbox' resource each Ray worker needs (0: none).",
    ),
) -> None:
    import asyncio
    import logging

    import verifiers as vf

    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING, stream=sys.stderr)
    env_kwargs = _json_arg(env_args, "--env-args")
    sampling = _json_arg(sampling_args, "--sampling-args")
    if max_tokens is not None:
        sampling["max_tokens"] = max_tokens
    if temperature is not None:
        sampling["temperature"] = temperature
    if api_client_type not in ("native", "openai"):
        raise CLIError(
            f"--api-client-type must be 'native' or 'openai', not {api_client_type!r}", exit_code=2
        )

    _check_counts(num_examples, rollouts_per_example, max_concurrent)

    factory_env: dict[str, str] = {}  # the API key variable, for the Ray workers

    def execute() -> vf.EvalResult:
        env = _load(env_id, env_kwargs, install)
        # only what the user gave: the library applies the defaults (the environment's
        # [tool.verifiers.eval], else its own), exactly as for vf.evaluate()
        given: dict[str, Any] = {
            "num_examples": num_examples,
            "rollouts_per_example": rollouts_per_example,
        }
        if max_concurrent is not None:
            given["max_concurrent"] = max_concurrent
        retry = vf.RetryPolicy(max_retries=max_retries)
        client: Any
        endpoint: str | None
        factory: Any = None  # what a Ray worker calls to build its own client
        if model == "oracle":
            client, endpoint, model_name = vf.OracleClient(), None, "oracle"
        else:
            ep = _resolve_endpoint(model, api_base_url, api_key_var, endpoints_path)
            from verifiers.clients.probe import probe_endpoint

            for url in ep.base_urls:  # a wrong URL fails now, not after a run of retries
                probe_endpoint(url, ep.api_key())
            client = ep.pool(timeout=timeout, retry=retry, client_type=api_client_type)
            endpoint, model_name = ",".join(ep.base_urls), ep.model
            factory = functools.partial(
                ep.pool, timeout=timeout, retry=retry, client_type=api_client_type
            )
            if ep.api_key_var and os.environ.get(ep.api_key_var) is not None:
                factory_env[ep.api_key_var] = os.environ[ep.api_key_var]

        progress = None if as_json else Progress(env_id, model_name)
        executor = (
            _ray_executor(
                env_id, env_kwargs, ray_address, ray_workers, ray_sandbox, factory, factory_env
            )
            if ray_address
            else None
        )

        def started(path: Path | None) -> None:
            run_dir[0] = path

        async def run() -> vf.EvalResult:
            try:
                return await vf.evaluate_async(
                    env,
                    client,
                    model_name,
                    sampling_args=sampling,
                    save_results=save_results or resume or output_dir is not None,
                    output_dir=output_dir,
                    resume=resume,
                    state_columns=state_columns,
                    on_progress=progress.update if progress else None,
                    endpoint=endpoint,
                    on_start=started,
                    executor=executor,
                    **given,
                )
            finally:
                await client.close()
                await env.close()

        if progress:
            progress.start(n_total=None)
        try:
            result = asyncio.run(run())
        except KeyboardInterrupt:
            if progress:
                progress.stop(clear_if_idle=True)
            raise _interrupted(run_dir[0]) from None
        except BaseException:
            if progress:
                progress.stop(clear_if_idle=True)  # a config error stays a one-line message
            raise
        if progress:
            progress.stop()
        return result

    run_dir: list[Path | None] = [None]
    if not as_json:
        result = execute()
        print_summary(result)
        if samples:
            print_samples(result, samples)
    else:
        with contextlib.redirect_stdout(sys.stderr):  # stdout carries only the JSON
            result = execute()
        out = dict(result.metadata)
        out["path"] = str(result.path) if result.path else None
        sys.stdout.write(json.dumps(out, default=str) + "\n")
    failed = error_verdict(result.metadata["summary"], max_error_rate)
    if failed:
        raise CLIError(failed, hint=f"details per rollout: {result.path or 'run with -s'}")


def _ray_executor(
    env_id: str,
    env_kwargs: dict[str, Any],
    address: str,
    workers: int | None,
    sandbox: float,
    factory: Any,
    env_vars: dict[str, str] | None = None,
) -> Any:
    """The executor that runs the groups on the Ray cluster at ``address``."""
    try:
        from verifiers.distributed import EnvSpec, RayConfig, RayExecutor, oracle_client
        from verifiers.distributed.pool import ray_available
    except ImportError as e:  # pragma: no cover - the package is part of verifiers
        raise CLIError(f"verifiers.distributed is unavailable: {e}") from None
    if not ray_available():
        raise CLIError(
            "--ray needs Ray, which is not installed",
            hint="pip install 'verifiers[ray]'",
            exit_code=2,
        )
    config = RayConfig(
        address=address, num_workers=workers, sandbox=sandbox, env_vars=dict(env_vars or {})
    )
    return RayExecutor(EnvSpec.of(env_id, env_kwargs), config, factory or oracle_client)


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
