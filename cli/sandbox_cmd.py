"""``vf sandbox ...``: run one command in a fresh sandbox; serve sandboxes over HTTP."""

from __future__ import annotations

import sys

import typer

from cli._common import CLIError, handle_errors

app = typer.Typer(no_args_is_help=True)

_EXEC_HELP = """Run CMD in a fresh sandbox and print its stdout and stderr.

Exits with the command's exit code: 124 when it timed out, 128+N when killed by signal N.

Example: vf sandbox exec --timeout 5 -- python3 -c 'print(1 + 1)'
"""


@app.command(
    "exec",
    help=_EXEC_HELP,
    context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True},
)
@handle_errors
def exec_command(
    cmd: list[str] = typer.Argument(
        ..., metavar="-- CMD...", help="The command and its arguments."
    ),
    backend: str | None = typer.Option(
        None, "--backend", "-b", help="bwrap (default on Linux), subprocess, docker or remote."
    ),
    timeout: float = typer.Option(60.0, "--timeout", "-t", help="Wall-clock limit in seconds."),
    memory_mb: int | None = typer.Option(1024, "--memory-mb", "-m", help="Memory limit (MiB)."),
    network: bool = typer.Option(
        False,
        "--network",
        help="Give the command network access: its own network namespace behind slirp4netns "
        "(the outside is reachable, this host's loopback services are not).",
    ),
    host_network: bool = typer.Option(
        False,
        "--host-network",
        help="With --network: share this host's network instead, loopback services included "
        "(bwrap backend; only for trusted code).",
    ),
    max_output: int = typer.Option(
        1 << 20, "--max-output", help="Bytes of stdout (and of stderr) kept; the rest is cut."
    ),
    env: list[str] = typer.Option([], "--env", "-e", help="KEY=VALUE for the command (repeat)."),
    stdin: bool = typer.Option(False, "--stdin", help="Pass this terminal's stdin to the command."),
    url: str | None = typer.Option(None, "--url", help="Sandbox service URL (remote backend)."),
) -> None:
    import asyncio

    from verifiers.sandbox import SandboxLimits, create_sandbox

    if not cmd:
        raise CLIError("no command given", "usage: vf sandbox exec [OPTIONS] -- CMD...")
    variables: dict[str, str] = {}
    for item in env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CLIError(f"--env {item!r} is not KEY=VALUE", "example: --env NAME=value")
        variables[key] = value
    if timeout <= 0:
        raise CLIError(f"--timeout must be positive, got {timeout}")
    if memory_mb is not None and memory_mb <= 0:
        raise CLIError(f"--memory-mb must be positive, got {memory_mb}")
    limits = SandboxLimits(memory_mb=memory_mb, timeout=timeout, max_output_bytes=max_output)
    options: dict[str, object] = {"url": url} if url else {}
    if host_network:
        if not network or url or backend not in (None, "bwrap"):
            raise CLIError("--host-network goes with --network, on the bwrap backend")
        options["host_network"] = True
    if url and backend not in (None, "remote"):
        raise CLIError("--url is only for the remote backend")
    data = sys.stdin.buffer.read() if stdin else None

    async def run() -> int:
        sandbox = create_sandbox(
            "remote" if url else backend, limits=limits, network=network, **options
        )
        async with sandbox:
            r = await sandbox.exec_raw(cmd, stdin=data, env=variables, timeout=timeout)
        sys.stdout.buffer.write(r.stdout)
        sys.stdout.buffer.flush()
        sys.stderr.buffer.write(r.stderr)
        if r.truncated:
            print(f"\n[vf sandbox: output cut at {max_output} bytes]", file=sys.stderr)
        if r.timed_out:
            print(f"[vf sandbox: timed out after {timeout:g}s]", file=sys.stderr)
        if r.oom:
            print("[vf sandbox: out of memory]", file=sys.stderr)
        sys.stderr.flush()
        return r.decode().shell_exit_code

    raise SystemExit(asyncio.run(run()))


@app.command("serve", help="Serve sandboxes over HTTP for the remote backend.")
@handle_errors
def serve_command(
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to listen on."),
    port: int = typer.Option(8765, "--port", "-p", help="Port (0: any free port)."),
    backend: str | None = typer.Option(None, "--backend", "-b", help="Backend for the sandboxes."),
    token: str | None = typer.Option(
        None, "--token", envvar="VF_SANDBOX_TOKEN", help="Require this bearer token."
    ),
    max_live: int = typer.Option(256, "--max-live", help="Sandboxes alive at once."),
    max_exec: int | None = typer.Option(None, "--max-exec", help="Commands running at once."),
    idle_timeout: float = typer.Option(
        600.0, "--idle-timeout", help="Stop a sandbox unused for this many seconds."
    ),
    allow_network: bool = typer.Option(
        False, "--allow-network", help="Let clients ask for sandboxes with network access."
    ),
    max_limit: list[str] = typer.Option(
        [],
        "--max-limit",
        help="The most a client may ask for, KEY=VALUE (repeat), e.g. memory_mb=4096, "
        "timeout=600, max_output_bytes=1048576. Defaults: verifiers.sandbox.server."
        "DEFAULT_MAX_LIMITS.",
    ),
) -> None:
    from verifiers.errors import ConfigError
    from verifiers.sandbox.server import DEFAULT_MAX_LIMITS, serve

    changes: dict[str, float | int] = {}
    for item in max_limit:
        key, sep, value = item.partition("=")
        try:
            if not sep:
                raise ValueError
            number = float(value)
            changes[key] = int(number) if number.is_integer() and key != "timeout" else number
        except ValueError:
            raise CLIError(
                f"--max-limit {item!r} is not KEY=NUMBER", "e.g. --max-limit memory_mb=4096"
            ) from None
    try:
        max_limits = DEFAULT_MAX_LIMITS.replace(**changes)
    except (ConfigError, TypeError) as e:
        keys = ", ".join(DEFAULT_MAX_LIMITS.to_dict())
        raise CLIError(f"--max-limit: {e}", f"keys: {keys}") from None

    if host not in ("127.0.0.1", "localhost", "::1") and not token:
        raise CLIError(
            f"refusing to serve sandboxes on {host} without a token",
            "pass --token SECRET (or VF_SANDBOX_TOKEN) when listening beyond loopback",
        )
    serve(
        host=host,
        port=port,
        backend=backend,
        token=token,
        max_live=max_live,
        max_exec=max_exec,
        idle_timeout=idle_timeout,
        allow_network=allow_network,
        max_limits=max_limits,
    )
