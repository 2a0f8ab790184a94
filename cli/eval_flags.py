"""The flags of ``vf eval`` / ``vf-eval`` (classic shape): their typer declarations, the
:class:`EvalOptions` record the command fills from them, and the checks that turn a flag's text
into the value the run takes (``-c``, ``--cache``, JSON objects, counts).

The command itself, which declares its parameters with these, is :mod:`cli.eval_cmd`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import typer

from cli._common import CLIError

ENV_ID = typer.Argument(
    ..., metavar="ENV_ID", help="Environment id: NAME, OWNER/NAME or OWNER/NAME@VERSION."
)


MODEL = typer.Option(
    "gpt-4.1-mini", "--model", "-m", help="Model name, endpoint alias, or 'oracle'."
)


API_BASE_URL = typer.Option(
    None,
    "--api-base-url",
    "-b",
    help="OpenAI-compatible base URL (default $VF_BASE_URL or OpenAI).",
)


API_KEY_VAR = typer.Option(
    None, "--api-key-var", "-k", help="Environment variable holding the API key."
)


ENDPOINTS_PATH = typer.Option(
    None, "--endpoints-path", "-e", help="endpoints.toml registry of model aliases."
)


NUM_EXAMPLES = typer.Option(
    None,
    "--num-examples",
    "-n",
    help="Examples to evaluate (-1: all; default from the env or 5).",
)


ROLLOUTS_PER_EXAMPLE = typer.Option(
    None,
    "--rollouts-per-example",
    "-r",
    help="Rollouts per example (default from the env or 3).",
)


MAX_CONCURRENT = typer.Option(
    None,
    "--max-concurrent",
    "-c",
    metavar="N|auto[:MAX]",
    help="Rollouts in flight at once (default 32); 'auto' adapts to the endpoint (backs off "
    "on 429/5xx and rising latency), up to MAX (default 256).",
)


MAX_TOKENS = typer.Option(None, "--max-tokens", "-t", help="Max tokens per model call.")


TEMPERATURE = typer.Option(None, "--temperature", "-T", help="Sampling temperature.")


SAMPLING_ARGS = typer.Option(
    None, "--sampling-args", "-S", help="Sampling arguments as a JSON object."
)


ENV_ARGS = typer.Option(
    None, "--env-args", "-a", help="Arguments for load_environment as a JSON object."
)


OUTPUT_DIR = typer.Option(
    None, "--output-dir", "-o", help="Run directory (implies --save-results)."
)


SAVE_RESULTS = typer.Option(
    False, "--save-results", "-s", help="Write results.jsonl and metadata.json."
)


RESUME = typer.Option(
    False,
    "--resume",
    "-R",
    help="Continue the matching earlier run: only missing or errored rollouts run.",
)


OVERWRITE = typer.Option(
    False,
    "--overwrite",
    help="Replace the run already in --output-dir (without it, a run there is refused "
    "unless --resume continues it).",
)


STATE_COLUMNS = typer.Option(
    [], "--state-columns", "-C", help="Extra state keys to save (repeatable)."
)


MAX_RETRIES = typer.Option(5, "--max-retries", help="Retries per request for transient errors.")


TIMEOUT = typer.Option(600.0, "--timeout", help="Seconds per request before it counts as failed.")


API_CLIENT_TYPE = typer.Option(
    "native", "--api-client-type", help="'native' (fast aiohttp) or 'openai' (official SDK)."
)


MAX_ERROR_RATE = typer.Option(
    None,
    "--max-error-rate",
    min=0.0,
    max=1.0,
    help="Exit 1 when more than this fraction of rollouts errored (default: only when all did).",
)


CACHE = typer.Option(
    None,
    "--cache",
    metavar="[DURATION]",
    help="Answer model calls from the on-disk response cache and store new answers; "
    "DURATION (7d, 12h, 30m) makes older entries misses. A re-run makes no model calls.",
)


CACHE_DIR = typer.Option(
    None,
    "--cache-dir",
    help="Response cache directory (default $VF_CACHE_DIR or ~/.cache/verifiers/responses).",
)


RETRY_ON_ERROR = typer.Option(
    0,
    "--retry-on-error",
    min=0,
    metavar="N",
    help="Run a rollout that ended in a model or infrastructure error again, up to N times "
    "(reward-function errors are not retried); --max-error-rate counts what is left after.",
)


INSTALL = typer.Option(
    False,
    "--install",
    help="Install OWNER/NAME from the configured hub when it is not installed (no prompt).",
)


SAMPLES = typer.Option(
    3, "--samples", min=0, help="Sample rollouts to print after the summary (0: none)."
)


VERBOSE = typer.Option(False, "--verbose", "-v", help="Debug logging.")


AS_JSON = typer.Option(
    False, "--json", help="Print the run's metadata as JSON (nothing else on stdout)."
)


DEBUG = typer.Option(False, "--debug", help="Show tracebacks on errors.")


PUSH = typer.Option(
    False, "--push", help="Push the finished run to the hub (as `vf eval push RUN_DIR`)."
)


ALLOW_UNVERIFIED = typer.Option(
    False, "--allow-unverified", help="With --push: accept an unverified environment."
)


RAY = typer.Option(
    None,
    "--ray",
    metavar="ADDRESS",
    help="Run the rollout groups on a Ray cluster: 'local' (a throwaway one on this "
    "machine), 'auto' or HOST:PORT (needs the ray extra).",
)


RAY_WORKERS = typer.Option(
    None, "--ray-workers", min=1, help="Ray rollout workers (default: the cluster's CPUs)."
)


RAY_SANDBOX = typer.Option(
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


def json_arg(value: str | None, flag: str) -> dict[str, Any]:
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


def check_counts(num_examples: int | None, rollouts: int | None, concurrent: int | None) -> None:
    """``-n`` is -1 (all) or at least 1; ``-r`` and ``-c`` are at least 1."""
    if num_examples is not None and num_examples != -1 and num_examples < 1:
        raise CLIError(
            f"-n/--num-examples must be -1 (all) or at least 1, got {num_examples}", exit_code=2
        )
    if rollouts is not None and rollouts < 1:
        raise CLIError(f"-r/--rollouts-per-example must be at least 1, got {rollouts}", exit_code=2)
    if concurrent is not None and concurrent < 1:
        raise CLIError(f"-c/--max-concurrent must be at least 1, got {concurrent}", exit_code=2)


def concurrency_arg(value: str | None) -> int | str | None:
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


def cache_arg(o: EvalOptions) -> bool | str | None:
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
