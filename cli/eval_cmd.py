"""``vf eval`` / ``vf-eval``: evaluate an environment against a model.

Classic flags keep their meaning: ``-m MODEL -b BASE_URL -k KEY_VAR -n N -r R -c CONCURRENCY
-t MAX_TOKENS -T TEMPERATURE -S SAMPLING_JSON -a ENV_ARGS_JSON -o OUTPUT_DIR -s -e ENDPOINTS``.
``-m oracle`` needs no endpoint: it answers every example with its gold answer.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import typer

from cli._common import CLIError, handle_errors

HELP = (
    "Evaluate an environment against a model behind an OpenAI-compatible endpoint "
    "(or the built-in `-m oracle`)."
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

    default_registry = Path("configs/endpoints.toml")
    registry = endpoints_path or (str(default_registry) if default_registry.is_file() else None)
    if registry:
        if not Path(registry).is_file():
            raise CLIError(f"endpoints file {registry} does not exist", exit_code=2)
        endpoints = load_endpoints(registry)
        if model in endpoints:
            ep = endpoints[model]
            if key_var:
                import dataclasses

                ep = dataclasses.replace(ep, api_key_var=key_var)
            return ep
    url = base_url or os.environ.get("VF_BASE_URL") or DEFAULT_BASE_URL
    var = key_var or os.environ.get("VF_API_KEY_VAR") or DEFAULT_KEY_VAR
    if os.environ.get(var) is None and url == DEFAULT_BASE_URL:
        raise CLIError(
            f"no API key: ${var} is not set",
            hint=f"export {var}=... , pass -k VAR_NAME, point -b at your own endpoint, or use -m oracle",
            exit_code=2,
        )
    return EndpointConfig(model=model, base_urls=[url], api_key_var=var, alias=model)


@app.command("eval", help=HELP)
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
    max_concurrent: int = typer.Option(
        32, "--max-concurrent", "-c", help="Rollouts in flight at once."
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
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug logging."),
    as_json: bool = typer.Option(
        False, "--json", help="Print the run's metadata as JSON (nothing else on stdout)."
    ),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks on errors."),
) -> None:
    import asyncio
    import logging

    import verifiers as vf
    from verifiers.loading import eval_defaults

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

    def execute() -> vf.EvalResult:
        env = vf.load_environment(env_id, **env_kwargs)
        defaults = eval_defaults(env_id)
        n = num_examples if num_examples is not None else int(defaults.get("num_examples", 5))
        r = (
            rollouts_per_example
            if rollouts_per_example is not None
            else int(defaults.get("rollouts_per_example", 3))
        )
        for key in ("max_tokens", "temperature"):
            if key in defaults and key not in sampling:
                sampling[key] = defaults[key]

        retry = vf.RetryPolicy(max_retries=max_retries)
        client: Any
        endpoint: str | None
        if model == "oracle":
            client, endpoint, model_name = vf.OracleClient(), None, "oracle"
        else:
            ep = _resolve_endpoint(model, api_base_url, api_key_var, endpoints_path)
            client = ep.pool(timeout=timeout, retry=retry, client_type=api_client_type)
            endpoint, model_name = ",".join(ep.base_urls), ep.model

        progress = None if as_json else _Progress(env_id, model_name)

        async def run() -> vf.EvalResult:
            try:
                return await vf.evaluate_async(
                    env,
                    client,
                    model_name,
                    num_examples=n,
                    rollouts_per_example=r,
                    max_concurrent=max_concurrent,
                    sampling_args=sampling,
                    save_results=save_results or resume or output_dir is not None,
                    output_dir=output_dir,
                    resume=resume,
                    state_columns=state_columns,
                    on_progress=progress.update if progress else None,
                    endpoint=endpoint,
                )
            finally:
                await client.close()
                await env.close()

        if progress:
            progress.start(n_total=None)
        try:
            result = asyncio.run(run())
        except BaseException:
            if progress:
                progress.stop(clear_if_idle=True)  # a config error stays a one-line message
            raise
        if progress:
            progress.stop()
        return result

    if not as_json:
        _print_summary(execute())
        return
    with contextlib.redirect_stdout(sys.stderr):  # stdout carries only the JSON
        result = execute()
    out = dict(result.metadata)
    out["path"] = str(result.path) if result.path else None
    sys.stdout.write(json.dumps(out, default=str) + "\n")


class _Progress:
    """A rich progress bar on stderr."""

    def __init__(self, env_id: str, model: str) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.progress = Progress(
            TextColumn(f"[bold]{env_id}[/] · {model}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("reward {task.fields[reward]}"),
            TextColumn("errors {task.fields[errors]}"),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self.task = self.progress.add_task("eval", total=None, reward="-", errors=0)
        self.rewards: list[float] = []
        self.errors = 0

    def start(self, n_total: int | None) -> None:
        self.progress.start()

    def stop(self, clear_if_idle: bool = False) -> None:
        """Stop the bar; with ``clear_if_idle`` an untouched bar is erased, not left behind."""
        if clear_if_idle and not self.progress.tasks[0].completed:
            self.progress.live.transient = True
            self.progress.live.stop()  # not Progress.stop(): it adds a blank line off a tty
            return
        self.progress.stop()

    def update(self, done: int, total: int, record: dict[str, Any]) -> None:
        if record.get("reward") is not None:
            self.rewards.append(float(record["reward"]))
        if record.get("error"):
            self.errors += 1
        avg = f"{sum(self.rewards) / len(self.rewards):.3f}" if self.rewards else "-"
        self.progress.update(self.task, completed=done, total=total, reward=avg, errors=self.errors)


def _print_summary(result: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    meta = result.metadata
    s = meta["summary"]
    console = Console()
    table = Table(title=f"{meta['env_id']} · {meta['model']}", show_header=True)
    table.add_column("metric")
    table.add_column("value", justify="right")

    def fmt(v: Any) -> str:
        return "-" if v is None else f"{v:.4f}" if isinstance(v, float) else str(v)

    table.add_row(
        "rollouts",
        f"{s['num_rollouts']} ({meta['num_examples']} examples x {meta['rollouts_per_example']})",
    )
    table.add_row("reward (mean ± s.e.)", f"{fmt(s['avg_reward'])} ± {fmt(s['reward_stderr'])}")
    for k, v in s["pass_at_k"].items():
        table.add_row(f"pass@{k}", fmt(v))
    for name, v in s["metrics"].items():
        table.add_row(f"  {name}", fmt(v))
    errors = ", ".join(f"{k}: {v}" for k, v in s["error_types"].items()) or "0"
    table.add_row("errored rollouts", f"{s['num_errors']} ({errors})" if s["num_errors"] else "0")
    if s["num_reward_errors"]:
        funcs = ", ".join(f"{k}: {v}" for k, v in s["reward_error_funcs"].items())
        table.add_row("reward function errors", f"{s['num_reward_errors']} ({funcs})")
    failures = s.get("request_failures") or {}
    if failures:
        detail = ", ".join(f"{k}: {v}" for k, v in sorted(failures.items()))
        table.add_row(
            "failed requests (retried)",
            f"{sum(v for k, v in failures.items() if k != 'gave_up')} ({detail})",
        )
    table.add_row("truncated", str(s["num_truncated"]))
    table.add_row(
        "tokens (prompt / completion)",
        f"{s['usage']['prompt_tokens']} / {s['usage']['completion_tokens']}",
    )
    table.add_row("wall time", f"{meta['wall_time_s']:.2f} s")
    console.print(table)
    if result.path:
        console.print(f"results: {result.path}")
