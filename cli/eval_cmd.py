"""``vf eval`` / ``vf-eval``: evaluate an environment against a model.

Classic flags keep their meaning: ``-m MODEL -b BASE_URL -k KEY_VAR -n N -r R -c CONCURRENCY
-t MAX_TOKENS -T TEMPERATURE -S SAMPLING_JSON -a ENV_ARGS_JSON -o OUTPUT_DIR -s -e ENDPOINTS``.
``-m oracle`` needs no endpoint: it answers every example with its gold answer.
Their declarations and checks are in :mod:`cli.eval_flags`; what ``ENV_ID`` and ``-m`` resolve
to is :mod:`cli.eval_inputs`; what is printed during and after the run is :mod:`cli.eval_report`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperCommand

from cli import eval_flags as flags
from cli._common import CLIError, handle_errors
from cli.eval_flags import EvalOptions, cache_arg, check_counts, concurrency_arg, json_arg
from cli.eval_inputs import endpoint_failure, load_env, model_client, ray_executor
from cli.eval_report import Progress, finish_run, run_with_progress, show_result

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
    env_id: str = flags.ENV_ID,
    model: str = flags.MODEL,
    api_base_url: str | None = flags.API_BASE_URL,
    api_key_var: str | None = flags.API_KEY_VAR,
    endpoints_path: str | None = flags.ENDPOINTS_PATH,
    num_examples: int | None = flags.NUM_EXAMPLES,
    rollouts_per_example: int | None = flags.ROLLOUTS_PER_EXAMPLE,
    max_concurrent: str | None = flags.MAX_CONCURRENT,
    max_tokens: int | None = flags.MAX_TOKENS,
    temperature: float | None = flags.TEMPERATURE,
    sampling_args: str | None = flags.SAMPLING_ARGS,
    env_args: str | None = flags.ENV_ARGS,
    output_dir: str | None = flags.OUTPUT_DIR,
    save_results: bool = flags.SAVE_RESULTS,
    resume: bool = flags.RESUME,
    overwrite: bool = flags.OVERWRITE,
    state_columns: list[str] = flags.STATE_COLUMNS,
    max_retries: int = flags.MAX_RETRIES,
    timeout: float = flags.TIMEOUT,
    api_client_type: str = flags.API_CLIENT_TYPE,
    max_error_rate: float | None = flags.MAX_ERROR_RATE,
    install: bool = flags.INSTALL,
    samples: int = flags.SAMPLES,
    verbose: bool = flags.VERBOSE,
    as_json: bool = flags.AS_JSON,
    debug: bool = flags.DEBUG,
    push: bool = flags.PUSH,
    allow_unverified: bool = flags.ALLOW_UNVERIFIED,
    ray_address: str | None = flags.RAY,
    ray_workers: int | None = flags.RAY_WORKERS,
    ray_sandbox: float = flags.RAY_SANDBOX,
    cache: str | None = flags.CACHE,
    cache_dir: str | None = flags.CACHE_DIR,
    retry_on_error: int = flags.RETRY_ON_ERROR,
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


def _execute(o: EvalOptions, run_dir: list[Path | None]) -> Any:
    """Load, resolve the endpoint, run with a progress display; ``run_dir[0]`` gets the run
    directory as soon as the run has one (for the Ctrl-C message)."""
    import logging

    import verifiers as vf

    logging.basicConfig(level=logging.DEBUG if o.verbose else logging.WARNING, stream=sys.stderr)
    env_kwargs = json_arg(o.env_args, "--env-args")
    sampling = json_arg(o.sampling_args, "--sampling-args")
    if o.max_tokens is not None:
        sampling["max_tokens"] = o.max_tokens
    if o.temperature is not None:
        sampling["temperature"] = o.temperature
    if o.api_client_type not in ("native", "openai"):
        raise CLIError(
            f"--api-client-type must be 'native' or 'openai', not {o.api_client_type!r}",
            exit_code=2,
        )
    concurrency = concurrency_arg(o.max_concurrent)
    check_counts(
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
    cache = cache_arg(o)
    if o.retry_on_error and o.ray_address:
        raise CLIError("--retry-on-error works without --ray: give one of them", exit_code=2)
    env = load_env(o.env_id, env_kwargs, o.install)
    # only what the user gave: the library applies the defaults (the environment's
    # [tool.verifiers.eval], else its own), exactly as for vf.evaluate()
    given: dict[str, Any] = {
        "num_examples": o.num_examples,
        "rollouts_per_example": o.rollouts_per_example,
    }
    if concurrency is not None:
        given["max_concurrent"] = concurrency
    client, endpoint, model_name = model_client(o, cached=cache is not None)
    executor = ray_executor(o, env_kwargs) if o.ray_address else None
    progress = None if o.as_json else Progress(o.env_id, model_name)

    def started(path: Path | None) -> None:
        run_dir[0] = path
        if progress is not None and path is not None and o.resume:
            from verifiers.results import RESULTS_FILE, read_records

            # the run has started: results.jsonl holds exactly the rollouts it keeps
            progress.resumed(read_records(path / RESULTS_FILE))

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

    result = run_with_progress(run, progress, lambda: _interrupted(run_dir[0]))
    failure = endpoint_failure(client)  # --cache: the endpoint was down when a call needed it
    if failure is not None:
        raise failure
    return result


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
