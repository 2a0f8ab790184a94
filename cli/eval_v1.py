"""``vf-eval`` with verifiers 0.4's command line, for v1 environments.

``vf-eval TASKSET -m MODEL --client.base-url URL -n 1 -r 1 --env.agent.max-turns 4
--sampling.max-tokens 512 --no-rich --no-push`` and ``vf-eval @ eval.toml`` build an
:class:`verifiers.v1.configs.cli.eval.EvalConfig` (:mod:`verifiers.v1.cli.flags` reads the
flags) and run it through the classic machinery (:class:`verifiers.v1.bridge.V1Environment`),
so the run directory ``OUTPUT_DIR/RUN.DIR`` holds ``results.jsonl`` and ``metadata.json``
(``vf view``, ``vf eval push``, ``vf eval rescore``), 0.4.0's ``traces.jsonl`` (one episode
record per line, as upstream writes it) and ``configs/eval.json``, the resolved
config a later ``vf-eval @ RUN_DIR/configs/eval.json --resume`` continues.

A command line takes this shape when it loads a file (``@ FILE``, ``@FILE.toml``), uses a dotted flag, or uses a
root flag of ``EvalConfig`` the classic command does not have (``--no-rich``, ``--clean``,
``--dry-run``, ``--num-rollouts`` ...). Short flags then mean what they mean upstream: ``-n``
is ``--select.limit``, ``-s`` ``--select.shuffle``, ``-o`` the folder the run directory goes
in. Our ``--json``, ``--samples N``, ``--max-error-rate X``, ``--allow-unverified`` and
``--debug`` work in both shapes.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from cli._common import CLIError

__all__ = ["is_v1_command_line", "run_v1_command"]

USAGE = (
    "usage: vf-eval TASKSET [--env.FIELD VALUE ...] [--client.base-url URL] [-m MODEL] "
    "[-n N] [-r R] [--sampling.FIELD VALUE ...] [@ FILE.toml]\n"
    "       vf-eval @ RUN_DIR/configs/eval.json --resume"
)

# classic flags that have no place in a v1 command line, with what to write instead
CLASSIC_HINTS: dict[str, str] = {
    **dict.fromkeys(("-b", "--api-base-url"), "write --client.base-url URL"),
    **dict.fromkeys(("-k", "--api-key-var"), "write --client.api-key-var VAR"),
    **dict.fromkeys(("-t", "--max-tokens"), "write --sampling.max-tokens N"),
    **dict.fromkeys(("-T", "--temperature"), "write --sampling.temperature X"),
    **dict.fromkeys(("-S", "--sampling-args"), "write one --sampling.KEY VALUE per key"),
    **dict.fromkeys(
        ("-a", "--env-args"),
        "write one --env.taskset.KEY VALUE per argument (or an [env.taskset] table in @ FILE)",
    ),
    "--num-examples": "write -n N (--select.limit N)",
    "--save-results": "drop it: a v1 run always saves to OUTPUT_DIR/RUN.DIR",
    "-R": "write --resume",
    "--overwrite": "write --clean",
    "--timeout": "write --client.timeout.read SECONDS",
    **dict.fromkeys(
        (
            "-e",
            "--endpoints-path",
            "-C",
            "--state-columns",
            "--max-retries",
            "--api-client-type",
            "--cache",
            "--cache-dir",
            "--retry-on-error",
            "--ray",
            "--ray-workers",
            "--ray-sandbox",
            "--install",
        ),
        "this classic flag has no v1 counterpart: run without the v1 flags to use it",
    ),
}


def _classic_names(params: Iterable[Any]) -> set[str]:
    names: set[str] = set()
    for param in params:
        names.update(getattr(param, "opts", ()))
        names.update(getattr(param, "secondary_opts", ()))
    return names


def is_v1_command_line(args: list[str], params: Iterable[Any]) -> bool:
    """Whether ``args`` is a v1 command line (see the module docstring); ``params`` are the
    classic command's (click) parameters."""
    classic = _classic_names(params)
    unknown: list[str] = []
    for arg in args:
        if arg == "--":
            break
        if arg == "@":
            return True
        if arg.startswith("@"):  # @FILE.toml, not a value such as -m @preset/name
            from verifiers.v1.cli.flags import CONFIG_SUFFIXES

            if arg.endswith(CONFIG_SUFFIXES):
                return True
        if not arg.startswith("--"):
            continue
        name = arg.partition("=")[0]
        if "." in name:
            return True
        if name not in classic:
            unknown.append(name[2:])
    if not unknown:
        return False
    from verifiers.v1.cli.flags import flag_table
    from verifiers.v1.configs.cli.eval import EvalConfig

    table = flag_table(EvalConfig, {})
    root = {s for s in [*table.leaves, *table.groups] if "." not in s}
    negatable = {
        s
        for s in root
        if s in table.optional_groups or getattr(table.leaves.get(s), "kind", "") == "bool"
    }
    return any(n in root or (n.startswith("no-") and n[3:] in negatable) for n in unknown)


class _Extras:
    """Our own flags, outside the config: output and exit behaviour."""

    def __init__(self) -> None:
        self.as_json = False
        self.samples = 3
        self.max_error_rate: float | None = None
        self.allow_unverified = False


def _take_extras(args: list[str]) -> tuple[_Extras, list[str]]:
    extras = _Extras()
    rest: list[str] = []
    i = 0
    while i < len(args):
        name, eq, value = args[i].partition("=")
        if name in ("--json", "--allow-unverified", "--debug") and not eq:
            extras.as_json = extras.as_json or name == "--json"
            extras.allow_unverified = extras.allow_unverified or name == "--allow-unverified"
            i += 1
            continue
        if name in ("--samples", "--max-error-rate"):
            if not eq:
                if i + 1 >= len(args):
                    raise CLIError(f"{name} needs a value", exit_code=2)
                value = args[i + 1]
            i += 1 if eq else 2
            try:
                if name == "--samples":
                    extras.samples = int(value)
                    if extras.samples < 0:
                        raise ValueError
                else:
                    extras.max_error_rate = float(value)
                    if not 0.0 <= extras.max_error_rate <= 1.0:
                        raise ValueError
            except ValueError:
                wanted = "a count (0: none)" if name == "--samples" else "a fraction from 0 to 1"
                raise CLIError(f"{name} takes {wanted}, not {value!r}", exit_code=2) from None
            continue
        rest.append(args[i])
        i += 1
    return extras, rest


def _refuse_classic_environment(args: list[str]) -> None:
    """A leading id naming a classic environment (its module has ``load_environment`` and
    exports no v1 taskset): the v1 flags do not apply to it."""
    if not args or args[0].startswith(("-", "@")):
        return
    env_id = args[0]
    from verifiers.errors import ConfigError
    from verifiers.v1.utils.loaders import taskset_class

    try:
        taskset_class(env_id)
        return
    except ConfigError:
        pass
    from verifiers.loading import import_env_module

    try:
        module = import_env_module(env_id)
    except ImportError:
        return  # named by nothing installed: the v1 loader's error says so
    if not callable(getattr(module, "load_environment", None)):
        return
    v1_flags = [a.partition("=")[0] for a in args[1:] if a.startswith(("--", "@"))]
    raise CLIError(
        f"{env_id} is a classic environment: the v1 flags "
        f"({', '.join(dict.fromkeys(v1_flags)) or '@ FILE'}) configure v1 environments only",
        hint="use the classic flags: -b URL -k VAR -n N -r R -t MAX_TOKENS -T TEMPERATURE "
        "-a ENV_ARGS_JSON -S SAMPLING_JSON -o RUN_DIR (vf-eval --help)",
        exit_code=2,
    )


def run_v1_command(args: list[str]) -> None:
    """Parse a v1 command line, run it, print the summary (or ``--json``)."""
    from verifiers.v1.cli.flags import format_flags, parse_config_argv
    from verifiers.v1.configs.cli.eval import EvalConfig

    extras, rest = _take_extras(args)
    if any(a in ("-h", "--help") for a in rest):
        flags = [a for a in rest if a not in ("-h", "--help")]
        print(USAGE + "\n\nflags:\n" + format_flags(EvalConfig, flags))
        return
    _refuse_classic_environment(rest)
    config = parse_config_argv(EvalConfig, rest, hints=CLASSIC_HINTS)
    if not config.env.taskset.id:
        raise CLIError("no taskset: name one first (vf-eval TASKSET ...)", hint=USAGE, exit_code=2)
    if config.run.attach:
        raise CLIError(
            "--run.attach streams into a run a hosted platform opened, which this SDK has no "
            "client for",
            hint="drop --run.attach; --push shares the finished run on the configured hub",
            exit_code=2,
        )
    run_dir = config.run_dir
    if config.resume:
        _check_resume(config, run_dir)
    if config.dry_run:
        path = _write_config(config, run_dir)
        print(f"wrote {path}", file=sys.stderr)
        return
    from cli.eval_report import finish_run, show_result

    live = not extras.as_json and config.rich is not None and not config.rich.show_logs
    result = show_result(
        lambda: _execute(config, show=live), as_json=extras.as_json, samples=extras.samples
    )

    finish_run(
        result,
        max_error_rate=extras.max_error_rate,
        push=config.push,
        allow_unverified=extras.allow_unverified,
        as_json=extras.as_json,
    )


def _stream_traces(env: Any, run_dir: Path, *, resume: bool) -> None:
    """Append each finished episode's record to ``RUN_DIR/traces.jsonl`` (0.4.0's run file,
    beside ``results.jsonl``); a fresh run starts it empty."""
    from verifiers.v1.utils.trace_store import traces_file, write_episode

    if not resume:
        traces_file(run_dir).write_text("", "utf-8")
    env.on_episode = lambda episode: write_episode(run_dir, episode)


def _write_config(config: Any, run_dir: Path) -> Path:
    from verifiers.v1.cli.output import saved_config_path

    path = saved_config_path(run_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(config.model_dump_json(indent=2), "utf-8")
    return path


def _check_resume(config: Any, run_dir: Path) -> None:
    """A resumed run continues under the config that started it, or not at all."""
    from pydantic import ValidationError

    from verifiers.v1.cli.output import saved_config_path

    saved_path = saved_config_path(run_dir)
    if not saved_path.is_file():
        raise CLIError(
            f"--resume: {run_dir} holds no v1 run (no {saved_path.name} under configs/)",
            hint="resume with vf-eval @ RUN_DIR/configs/eval.json --resume, or give the run's "
            "--run.name",
            exit_code=2,
        )
    try:
        saved = type(config).model_validate_json(saved_path.read_text("utf-8"))
    except ValidationError as exc:
        raise CLIError(
            f"--resume: {saved_path} is not an eval config ({exc})", exit_code=2
        ) from None
    before, now = saved.model_dump(mode="json"), config.model_dump(mode="json")
    changed = sorted(k for k in {*before, *now} if before.get(k) != now.get(k))
    if changed:
        raise CLIError(
            f"--resume continues a run under the config it started with; this one differs "
            f"in {', '.join(changed)}",
            hint=f"vf-eval @ {saved_path} --resume, or start a new run",
            exit_code=2,
        )


def _client(config: Any) -> tuple[Any, str | None]:
    import verifiers as vf
    from verifiers.v1.configs.client import DEFAULT_BASE_URL, build_client

    if config.model == "oracle":
        return vf.OracleClient(), None
    url = config.client.base_url
    key = config.client.api_key
    if key is None and url == DEFAULT_BASE_URL:
        raise CLIError(
            f"no API key for {url}: ${config.client.api_key_var} is not set",
            hint=f"export {config.client.api_key_var}=..., name another variable with "
            "--client.api-key-var, or point --client.base-url at your own endpoint",
            exit_code=2,
        )
    from verifiers.clients.probe import probe_endpoint

    probe_endpoint(url, key)  # a wrong URL fails now, not after a run of retries
    return build_client(config.client), url


def _record_provenance(env: Any, taskset_id: str) -> None:
    """The run names the distribution, version and wheel sha256 of the taskset it ran (as
    a classic run does), so that `vf eval push` can pin it to a release."""
    from verifiers.loading import module_provenance
    from verifiers.v1.utils.loaders import taskset_class

    if not taskset_id:
        return
    dist, version, sha = module_provenance(taskset_class(taskset_id).__module__)
    env.env_distribution = env.env_distribution or dist
    env.env_version = env.env_version or version
    env.env_wheel_sha256 = env.env_wheel_sha256 or sha


def _execute(config: Any, *, show: bool) -> Any:
    """Run ``config`` on the classic machinery, with a progress display when ``show``."""
    import logging

    import verifiers as vf
    from verifiers.v1.bridge import V1Environment
    from verifiers.v1.utils.loaders import load_environment

    # --rich.show-logs: the run's log lines on stderr in place of the progress display
    shown = config.rich is not None and config.rich.show_logs
    level = logging.DEBUG if config.verbose else logging.INFO if shown else logging.WARNING
    logging.basicConfig(level=level, stream=sys.stderr)
    env = V1Environment(load_environment(config.env), select=config.select)
    _record_provenance(env, config.env.taskset.id)
    client, endpoint = _client(config)
    from cli.eval_report import Progress, run_with_progress

    progress = Progress(config.env.env_id, config.model) if show else None
    run_dir: list[Path | None] = [None]

    def started(path: Path | None) -> None:
        run_dir[0] = path
        if path is not None:
            _write_config(config, path)
            _stream_traces(env.v1_env, path, resume=config.resume)

    async def run() -> Any:
        try:
            return await vf.evaluate_async(
                env,
                client,
                config.model,
                sampling_args=config.sampling.as_args(),
                num_examples=-1,
                rollouts_per_example=config.num_rollouts,
                max_concurrent=config.max_concurrent or -1,
                save_results=True,
                output_dir=config.run_dir,
                resume=config.resume,
                overwrite=config.clean,
                endpoint=endpoint,
                on_start=started,
                on_progress=progress.update if progress else None,
                on_total=progress.set_total if progress else None,
            )
        finally:
            await client.close()
            await env.close()

    def interrupted() -> CLIError:
        if run_dir[0] is None:
            return CLIError("interrupted (nothing was saved yet)", exit_code=130)
        return CLIError(
            f"interrupted: the finished rollouts are saved in {run_dir[0]}",
            hint=f"continue with: vf-eval @ {run_dir[0] / 'configs' / 'eval.json'} --resume",
            exit_code=130,
        )

    return run_with_progress(run, progress, interrupted)
