"""``vf hub serve|user create|migrate``: run and administer a hub server."""

from __future__ import annotations

import contextlib
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from cli._common import CLIError, handle_errors, plural

if TYPE_CHECKING:
    from hub_server.settings import Settings

app = typer.Typer(no_args_is_help=True)
user_app = typer.Typer(no_args_is_help=True, help="Manage hub users (server side).")
app.add_typer(user_app, name="user")

_DATA_DIR = typer.Option(
    None,
    "--data-dir",
    help="Where the SQLite file and blobs live (default $VF_HUB_DATA_DIR, else "
    "~/.local/share/verifiers-hub)",
)
_DB_URL = typer.Option(
    None,
    "--database-url",
    help="SQLAlchemy URL, e.g. postgresql://... (default: SQLite in data dir)",
)


def _settings(data_dir: Path | None, database_url: str | None) -> Settings:
    try:
        from hub_server.settings import Settings
    except ImportError as e:
        raise CLIError(
            f"the hub server needs the [server] extra ({e.name} is missing)",
            "pip install 'verifiers[server]'",
        ) from None
    try:
        return Settings.from_env(None, data_dir=data_dir, database_url=database_url)
    except ValueError as e:
        raise CLIError(str(e)) from None


@contextmanager
def _storage_errors(settings: Settings) -> Iterator[None]:
    """Name the database or directory that cannot be opened, in one line."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError

    try:
        where = make_url(settings.resolved_database_url).render_as_string(hide_password=True)
    except ArgumentError:
        where = "the database URL"
    try:
        yield
    except (ArgumentError, NoSuchModuleError) as e:
        raise CLIError(
            f"invalid database URL {where}: {e}",
            "use postgresql://USER@HOST/DB, or leave it out for SQLite in --data-dir",
        ) from None
    except DBAPIError as e:
        detail = str(e.orig).strip().splitlines()[0] if e.orig else type(e).__name__
        raise CLIError(f"cannot open the database {where}: {detail}") from None
    except OSError as e:
        raise CLIError(
            f"cannot use {e.filename or settings.data_dir}: {e.strerror or e}",
            "pass a writable --data-dir (or VF_HUB_DATA_DIR)",
        ) from None


_INIT = typer.Option(
    False, "--init", help="Create a new, empty hub when the data dir (or database) holds none"
)


def _require_hub(settings: Settings, init: bool) -> None:
    """Refuse to act on a data dir or database that holds no hub, unless ``--init`` says so.

    A typo in ``--data-dir`` would otherwise create a fresh, empty hub and act on it.
    """
    if init:
        return
    hint = "check --data-dir / --database-url (or VF_HUB_DATA_DIR), or pass --init to create one"
    if settings.database_url is None:
        db = settings.data_dir / "hub.db"
        if not db.is_file():
            if settings.data_dir.exists() and not settings.data_dir.is_dir():
                raise CLIError(f"cannot use {settings.data_dir}: not a directory")
            raise CLIError(f"no hub in {settings.data_dir} (it has no hub.db)", hint)
        return
    from sqlalchemy import inspect

    from hub_server.db import make_engine

    with _storage_errors(settings):
        engine = make_engine(settings.resolved_database_url)
        try:
            found = inspect(engine).has_table("alembic_version")
        finally:
            engine.dispose()
    if not found:
        raise CLIError(f"no hub in the database {_where(settings)}", hint)


def _used(settings: Settings) -> None:
    """Say on stderr which hub an admin command acted on."""
    typer.echo(f"vf hub: data: {_where(settings)}", err=True)


def _where(settings: Settings) -> str:
    if not settings.database_url:
        return str(settings.data_dir)
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(settings.database_url).render_as_string(hide_password=True)
    except ArgumentError:
        return "the configured database URL"


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _listen(host: str, port: int) -> socket.socket:
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        return socket.create_server((host, port), family=family, backlog=2048)
    except OSError as e:
        raise CLIError(
            f"cannot listen on {_url(host, port)}: {e.strerror or e}",
            "pick another --port (0 picks a free one) or --host",
        ) from None


_FORWARDED = typer.Option(
    "",
    "--forwarded-allow-ips",
    help="Comma-separated addresses of the reverse proxies whose X-Forwarded-For / "
    "X-Forwarded-Proto the hub believes (default: none; the peer address is the client's)",
)


def _worker_processes(
    n: int, data_dir: Path | None, database_url: str | None
) -> list[subprocess.Popen[bytes]]:
    """``vf hub worker`` N times beside the server (each one process: one job at a time)."""
    import sys

    args = ["hub", "worker"]
    if data_dir is not None:
        args += ["--data-dir", str(data_dir)]
    if database_url:
        args += ["--database-url", database_url]
    code = "import sys; from cli.main import main; sys.argv[0] = 'vf'; main()"
    return [
        subprocess.Popen([sys.executable, "-c", code, *args], preexec_fn=_die_with_parent)
        for _ in range(n)
    ]


def _die_with_parent() -> None:
    """In a worker process (Linux): SIGTERM when the server process ends, however it ends."""
    import ctypes
    import signal

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG


@contextmanager
def _exit_on_sigterm() -> Iterator[None]:
    """SIGTERM ends the server through ``finally`` blocks (uvicorn re-raises the signal it
    caught once it has shut down: with the default handler, the process would just die and
    leave its worker processes behind)."""
    import signal
    import sys

    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)


@app.command("serve")
@handle_errors
def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to bind"),
    port: int = typer.Option(8000, "--port", help="Port (0 picks a free one)"),
    data_dir: Path = _DATA_DIR,
    database_url: str = _DB_URL,
    processes: int = typer.Option(1, "--processes", min=1, help="Server processes"),
    workers: int = typer.Option(
        0,
        "--workers",
        min=0,
        help="Verification worker processes to start beside the server (each takes one job "
        "at a time: re-scoring pushed runs, validating new releases, in sandboxes)",
    ),
    log_level: str = typer.Option(
        "info", "--log-level", help="Server log level: critical, error, warning, info or debug"
    ),
    worker: bool = typer.Option(
        False, "--worker", help="The same as --workers 1 (the one-machine default)"
    ),
    forwarded_allow_ips: str = _FORWARDED,
) -> None:
    """Run the hub (migrates the database first). Other settings: VF_HUB_* variables."""
    import os

    import uvicorn

    from hub_server.app import create_app
    from hub_server.services import open_service

    settings = _settings(data_dir, database_url)
    where = _where(settings)
    workers = max(workers, 1 if worker else 0)
    proxies = [a.strip() for a in forwarded_allow_ips.split(",") if a.strip()]
    # forwarded headers only from the proxies named: never uvicorn's default (any local peer)
    forwarded: dict[str, object] = {
        "proxy_headers": bool(proxies),
        "forwarded_allow_ips": proxies or [],
    }
    if processes == 1:
        with _storage_errors(settings):
            hub = create_app(settings)
        if port:
            _listen(host, port).close()  # a taken port is a one-line error, not a log record

        class Server(uvicorn.Server):
            async def startup(self, sockets: list[socket.socket] | None = None) -> None:
                await super().startup(sockets)
                if self.servers and not self.should_exit:  # the real port, also for --port 0
                    bound = self.servers[0].sockets[0].getsockname()[1]
                    typer.echo(f"vf hub: serving on {_url(host, bound)} (data: {where})", err=True)

        config = uvicorn.Config(hub, host=host, port=port, log_level=log_level, **forwarded)  # type: ignore[arg-type]
        background = _worker_processes(workers, data_dir, database_url)
        if workers:
            typer.echo(
                f"vf hub: {plural(workers, 'worker process', 'worker processes')} take jobs",
                err=True,
            )
        try:
            with _exit_on_sigterm():
                Server(config).run()
        finally:
            _stop(background)
        return
    if port == 0:  # the workers bind the port themselves: pick a free one now, and say it
        probe = _listen(host, 0)
        port = probe.getsockname()[1]
        probe.close()
    else:
        _listen(host, port).close()
    typer.echo(f"vf hub: serving on {_url(host, port)} (data: {where})", err=True)
    with _storage_errors(settings):
        open_service(settings).engine.dispose()  # migrate once, before the workers start
    os.environ["VF_HUB_AUTO_MIGRATE"] = "0"
    os.environ["VF_HUB_DATA_DIR"] = str(settings.data_dir)
    if settings.database_url:
        os.environ["VF_HUB_DATABASE_URL"] = settings.database_url
    background = _worker_processes(workers, data_dir, database_url)
    try:
        with _exit_on_sigterm():
            uvicorn.run(
                "hub_server.app:create_app",
                factory=True,
                host=host,
                port=port,
                workers=processes,
                log_level=log_level,
                **forwarded,  # type: ignore[arg-type]
            )
    finally:
        _stop(background)


@user_app.command("create")
@handle_errors
def user_create(
    name: str = typer.Argument(..., help="User (and namespace) name"),
    admin: bool = typer.Option(False, "--admin", help="Give the user admin rights"),
    data_dir: Path = _DATA_DIR,
    database_url: str = _DB_URL,
    init: bool = _INIT,
) -> None:
    """Create a user and its namespace; prints a new token alone on the last line."""
    from hub_server.errors import HubError
    from hub_server.services import open_service

    settings = _settings(data_dir, database_url)
    _require_hub(settings, init)
    _used(settings)
    with _storage_errors(settings):
        service = open_service(settings)
    try:
        user, token = service.create_user(name, admin=admin)
    except HubError as e:
        raise CLIError(e.message) from None
    finally:
        service.engine.dispose()
    typer.echo(f"created {'admin ' if admin else ''}user {user}; token (shown once):")
    typer.echo(token)


@user_app.command("list")
@handle_errors
def user_list(data_dir: Path = _DATA_DIR, database_url: str = _DB_URL) -> None:
    """List the hub's users: admin flag, live tokens, projects."""
    from cli._common import format_table
    from hub_server.app import open_service
    from hub_server.services.user_admin import list_users

    settings = _settings(data_dir, database_url)
    _require_hub(settings, init=False)
    _used(settings)
    with _storage_errors(settings):
        service = open_service(settings)
    try:
        users = list_users(service)
    finally:
        service.engine.dispose()
    rows = [
        [
            u.name,
            "yes" if u.admin else "no",
            f"{u.created_at:%Y-%m-%d}",
            str(u.active_tokens),
            str(u.projects),
        ]
        for u in users
    ]
    for line in format_table(["USER", "ADMIN", "CREATED", "TOKENS", "PROJECTS"], rows):
        typer.echo(line)
    typer.echo(f"({plural(len(users), 'user')})")


@user_app.command("delete")
@handle_errors
def user_delete(
    name: str = typer.Argument(..., help="The user to remove"),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation"),
    data_dir: Path = _DATA_DIR,
    database_url: str = _DB_URL,
) -> None:
    """Delete a user who never published; disable (revoke every token) one who did."""
    import sys

    from hub_server.app import open_service
    from hub_server.errors import HubError
    from hub_server.services.user_admin import delete_user

    settings = _settings(data_dir, database_url)
    _require_hub(settings, init=False)
    _used(settings)
    if not yes:
        if not sys.stdin.isatty():
            raise CLIError(f"removing user {name} needs confirmation", "pass --yes")
        typer.confirm(f"remove user {name} and revoke all their tokens?", abort=True)
    with _storage_errors(settings):
        service = open_service(settings)
    try:
        outcome = delete_user(service, name)
    except HubError as e:
        raise CLIError(e.message) from None
    finally:
        service.engine.dispose()
    if outcome == "deleted":
        typer.echo(f"deleted user {name}")
    else:
        typer.echo(
            f"disabled user {name}: every token revoked; their published files stay "
            "(remove versions with `vf env delete`)"
        )


@app.command("gc")
@handle_errors
def gc(
    grace_minutes: float = typer.Option(
        60.0, "--grace-minutes", min=0, help="Keep unreferenced blobs younger than this"
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only list what would be deleted"),
    data_dir: Path = _DATA_DIR,
    database_url: str = _DB_URL,
) -> None:
    """Delete blobs no published file references (lost upload races, deleted releases)."""
    from hub_server.services import open_service

    settings = _settings(data_dir, database_url)
    _require_hub(settings, init=False)
    _used(settings)
    with _storage_errors(settings):
        service = open_service(settings)
    try:
        deleted = service.collect_garbage(grace_minutes * 60, dry_run=dry_run)
    finally:
        service.engine.dispose()
    for key in deleted:
        typer.echo(key)
    verb = "would delete" if dry_run else "deleted"
    typer.echo(f"{verb} {plural(len(deleted), 'unreferenced blob')}", err=True)


@app.command("worker")
@handle_errors
def worker_command(
    data_dir: Path = _DATA_DIR,
    database_url: str = _DB_URL,
    once: bool = typer.Option(False, "--once", help="Run the jobs that are due, then exit"),
) -> None:
    """Take verification jobs from the hub's database and run them in sandboxes: re-score
    pushed runs, validate new releases. Run several (on several machines, over PostgreSQL)
    to share the work; on SQLite run one."""
    from hub_server.services import open_service
    from hub_server.worker import main_loop

    settings = _settings(data_dir, database_url)
    _require_hub(settings, init=False)
    _used(settings)
    with _storage_errors(settings):
        service = open_service(settings)
    try:
        done = main_loop(service, once=once)
    finally:
        service.engine.dispose()
    if once:
        typer.echo(f"ran {plural(done, 'job')}", err=True)


@app.command("jobs")
@handle_errors
def jobs_command(
    data_dir: Path = _DATA_DIR,
    database_url: str = _DB_URL,
    status: str = typer.Option(None, "--status", help="Only jobs in this state"),
    limit: int = typer.Option(50, "--limit", min=1, max=10000, help="Show at most this many jobs"),
    backfill: bool = typer.Option(
        False,
        "--backfill",
        help="First queue what a hub from before the worker lacks: validation of its "
        "releases, re-scoring of its pinned runs",
    ),
) -> None:
    """List the newest verification jobs (queued, running, done, failed)."""
    from cli._common import format_table
    from hub_server.services import open_service

    settings = _settings(data_dir, database_url)
    _require_hub(settings, init=False)
    with _storage_errors(settings):
        service = open_service(settings)
    try:
        if backfill:
            validations, rescores = service.jobs.backfill()
            typer.echo(
                f"queued {plural(validations, 'validation')} and {plural(rescores, 're-scoring')}",
                err=True,
            )
        jobs = service.jobs.list(status, limit)
    finally:
        service.engine.dispose()
    rows = [
        [str(j.id), j.kind, str(j.subject_id), j.status, f"{j.attempts}/{j.max_attempts}",
         ((j.log or "").strip().splitlines() or [""])[0][:60]]
        for j in jobs
    ]  # fmt: skip
    for line in format_table(["ID", "KIND", "SUBJECT", "STATUS", "TRIES", "LOG"], rows):
        typer.echo(line)


@app.command("migrate")
@handle_errors
def migrate(data_dir: Path = _DATA_DIR, database_url: str = _DB_URL, init: bool = _INIT) -> None:
    """Bring the database schema up to date (``--init``: create a new hub)."""
    from hub_server.db import make_engine
    from hub_server.migrate import current_revision, upgrade

    settings = _settings(data_dir, database_url)
    _require_hub(settings, init)
    _used(settings)
    with _storage_errors(settings):
        if settings.database_url is None:
            settings.data_dir.mkdir(parents=True, exist_ok=True)
        engine = make_engine(settings.resolved_database_url)
        try:
            before = current_revision(engine)
            upgrade(engine)
            after = current_revision(engine)
        finally:
            engine.dispose()
    typer.echo(f"database at revision {after}" + ("" if before == after else f" (was {before})"))
