"""``vf serve keygen``: keys for the env servers (``verifiers.serve`` and ``verifiers.v1.serve``).

Without ``--dir`` it creates (or shows) the per-user key pair that a server and a client of
the same user read by default (``$XDG_CONFIG_HOME/verifiers/serve/user.key_secret``). With
``--dir DIR`` it writes a server and a client pair for a deployment across users or hosts:
start the server with ``keys_dir=DIR`` (or ``VF_SERVE_KEYS_DIR=DIR``) holding
``server.key_secret`` and ``client.key``; give the client ``client.key_secret`` and
``server.key``. More clients: their ``*.key`` files in ``DIR/authorized_clients/``.
"""

from __future__ import annotations

from pathlib import Path

import typer

from cli._common import CLIError, handle_errors

HELP = "Keys that authenticate env-server clients (ZeroMQ CURVE)."

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)


@app.command("keygen", help="Create env-server keys: the per-user pair, or a set in --dir.")
@handle_errors
def keygen_command(
    directory: Path | None = typer.Option(
        None, "--dir", help="Write server.key(_secret) and client.key(_secret) here."
    ),
    force: bool = typer.Option(False, "--force", help="Replace keys that exist in --dir."),
) -> None:
    from verifiers.serve.security import default_keys_path, generate_keys, user_keys

    if directory is None:
        public, _, _ = user_keys()
        typer.echo(f"per-user key: {default_keys_path()}")
        typer.echo(f"public key:   {public.decode()}")
        return
    try:
        written = generate_keys(directory, force=force)
    except FileExistsError as e:
        raise CLIError(str(e)) from e
    for name, path in written.items():
        typer.echo(f"wrote {path}" + ("  (secret: keep it private)" if "secret" in name else ""))
    typer.echo(
        f"server: keys_dir={directory} (or VF_SERVE_KEYS_DIR={directory}); "
        "client: a directory with client.key_secret and server.key"
    )
