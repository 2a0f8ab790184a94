"""``vf env init|build|push|pull|inspect|fork|install|info|list|search|yank|unyank`` (``validate`` is added by
``cli/validate_cmd.py`` onto this same ``app``)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from cli._common import CLIError, handle_errors

if TYPE_CHECKING:
    from verifiers.hub.schemas import ProjectOut

app = typer.Typer(no_args_is_help=True)

_JSON = typer.Option(False, "--json", help="Print JSON.")


class Sort(StrEnum):
    recent = "recent"
    name = "name"
    downloads = "downloads"


_SORT = typer.Option(
    Sort.recent, "--sort", help="recently updated first, by name, or most downloaded first"
)


@app.command("init")
@handle_errors
def init(
    name: str = typer.Argument(..., help="Environment name (also the distribution name)"),
    path: Path = typer.Option(Path("environments"), "--path", help="Parent directory"),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing directory"),
    v1: bool = typer.Option(
        False, "--v1", help="Scaffold a verifiers.v1 taskset (upstream 0.4's API) instead"
    ),
) -> None:
    """Scaffold an environment package: pyproject (entry point, eval defaults), module, README."""
    from cli.packaging import init_environment

    dest = init_environment(name, path, force, v1=v1)
    typer.echo(f"created {dest}")
    if v1:
        typer.echo(f"  try it:   pip install -e {dest} && vf-eval {name} -m MODEL -b URL -n 5")
    else:
        typer.echo(f"  try it:   pip install -e {dest} && vf-eval {name} -m oracle -n 5")
    typer.echo(f"  publish:  vf env push {dest}")


@app.command("build")
@handle_errors
def build(
    path: Path = typer.Argument(Path("."), help="Environment package directory"),
    outdir: Path = typer.Option(
        None, "--outdir", "-o", help="Where to write the wheel (PATH/dist)"
    ),
) -> None:
    """Build the package's wheel; prints its path."""
    from cli.packaging import build_wheel

    typer.echo(str(build_wheel(path, outdir)))


@app.command("push")
@handle_errors
def push(
    path: Path = typer.Argument(Path("."), help="Environment package directory, or a built .whl"),
    owner: str = typer.Option(None, "--owner", help="Namespace to publish under (default: yours)"),
    private: bool = typer.Option(False, "--private", help="Create the project as private"),
    as_json: bool = _JSON,
) -> None:
    """Build the wheel and upload it to the hub."""
    from cli.packaging import build_wheel, fork_source
    from verifiers.hub.client import HubClient

    client = HubClient()
    client.require_token()  # before building: a missing login is the first thing to fix
    if path.suffix == ".whl":
        if not path.is_file():
            raise CLIError(f"no such wheel: {path}", "build one with `vf env build PATH`")
        wheel = path
        forked_from = None
    else:
        forked_from = fork_source(path)  # `vf env fork` wrote it: the hub records the fork
        wheel = build_wheel(path)
    result = client.push(wheel, owner=owner, private=private, forked_from=forked_from)
    if as_json:
        typer.echo(result.model_dump_json(indent=2))
        return
    what = f"{result.owner}/{result.name}@{result.version}"
    if result.created:
        typer.echo(f"published {what} ({result.filename}, sha256 {result.sha256[:12]})")
    else:
        typer.echo(f"{what} was already published with identical contents; nothing to do")
    if result.forked_from is not None:
        src = result.forked_from
        typer.echo(
            f"  the hub records {result.owner}/{result.name} as a fork of "
            f"{src.owner}/{src.name}@{src.version}"
        )
    typer.echo(f"  install with: vf env install {result.owner}/{result.name}@{result.version}")


@app.command("install")
@handle_errors
def install_cmd(
    specs: list[str] = typer.Argument(..., help="OWNER/NAME[@VERSION], one or more"),
    no_deps: bool = typer.Option(
        False, "--no-deps", help="Do not install missing dependencies from your default index"
    ),
) -> None:
    """Install environments into this Python from the hub (exact versions, hub files only,
    all or nothing: every one is resolved and verified before any is installed)."""
    _install(specs, no_deps)


@handle_errors
def install(spec: str, no_deps: bool = False) -> None:
    """``vf env install SPEC`` for one environment (what ``vf-eval --install`` calls)."""
    _install([spec], no_deps)


def _install(specs: list[str], no_deps: bool) -> None:
    from verifiers.hub.client import HubClient

    done = HubClient().install_many(specs, no_deps=no_deps, warn=lambda m: typer.echo(m, err=True))
    for one in done:
        project, release = one.project, one.release
        typer.echo(f"installed {project.owner}/{project.name}=={release.version}")
    for one in done:
        typer.echo(f"  evaluate with: {_evaluate_hint(one.release.entry_points, one.project.name)}")


def _evaluate_hint(entry_points: dict[str, str], project: str) -> str:
    """The first command to try: the built-in oracle for a classic environment; a v1 taskset
    (its entry point names a module, not a ``load_environment`` function) has no oracle, so it
    needs a model."""
    name = sorted(entry_points)[0] if entry_points else project
    value = entry_points.get(name, ":")
    if ":" not in value:
        return f"vf-eval {name} -m MODEL -b URL -n 5   (a v1 taskset: it needs a model)"
    return f"vf-eval {name} -m oracle -n 5"


@app.command("pull")
@handle_errors
def pull(
    spec: str = typer.Argument(..., help="OWNER/NAME[@VERSION] (default: the latest version)"),
    dest: Path = typer.Argument(None, help="Folder to unpack into, missing or empty (./NAME)"),
) -> None:
    """Unpack a version's source into a folder, to read or change and push again."""
    from verifiers.hub.client import HubClient

    done = HubClient().pull(spec, dest)
    project, release = done.project, done.release
    typer.echo(
        f"pulled {project.owner}/{project.name}@{release.version} into {done.path} "
        f"({len(done.files)} files from {done.file.filename})"
    )
    typer.echo(f"  to publish a change: bump the version in {done.path / 'pyproject.toml'}, then")
    typer.echo(f"  vf env push {done.path}")


@app.command("inspect")
@handle_errors
def inspect(
    spec: str = typer.Argument(..., help="OWNER/NAME[@VERSION] (default: the latest version)"),
    path: str = typer.Argument(None, help="A file to print (default: list the files)"),
    as_json: bool = _JSON,
) -> None:
    """List a version's files, or print one, from the hub's stored archive (no install)."""
    from verifiers.hub.client import HubClient

    client = HubClient()
    if path is None:
        tree = client.tree(spec)
        if as_json:
            typer.echo(tree.model_dump_json(indent=2))
            return
        for entry in tree.files:
            typer.echo(f"{entry.size:>10}  {entry.path}")
        typer.echo(f"({len(tree.files)} files in {tree.filename})")
        return
    shown = client.read_file(spec, path)
    if as_json:
        typer.echo(shown.model_dump_json(indent=2))
    elif shown.text is None:
        raise CLIError(
            f"{shown.path} is a binary file ({shown.size} bytes)",
            f"read it after `vf env pull {spec}`",
        )
    else:
        typer.echo(shown.text, nl=not shown.text.endswith("\n"))
        if shown.truncated:
            typer.echo(f"[... cut at {len(shown.text.encode())} of {shown.size} bytes]", err=True)


@app.command("fork")
@handle_errors
def fork(
    spec: str = typer.Argument(..., help="OWNER/NAME[@VERSION] to copy (default: latest)"),
    new_name: str = typer.Argument(..., help="Name of the copy (a new environment)"),
    dest: Path = typer.Option(
        None,
        "--dir",
        help="Where to write the copy's source (missing or empty; default ./NEW_NAME)",
    ),
) -> None:
    """Copy an environment's source under a new name: the distribution, the entry point and
    the module are renamed (the copy installs beside the original), and its pyproject.toml
    records where it came from ([tool.verifiers.fork]). Nothing is built and none of the
    package's code runs: read it, then publish it with `vf env push DIR` (the hub records the
    fork; both pages show it)."""
    from cli.packaging import rename_project
    from verifiers.hub.client import HubClient

    target = dest if dest is not None else Path(new_name)
    pulled = HubClient().pull(spec, target)
    source = f"{pulled.project.owner}/{pulled.project.name}@{pulled.release.version}"
    if not (pulled.path / "pyproject.toml").is_file():
        raise CLIError(f"{source} has no pyproject.toml to fork from")
    runs_code = rename_project(pulled.path, new_name, source)
    typer.echo(f"forked {source} as {new_name} into {pulled.path}")
    if runs_code:
        typer.echo(
            f"  note: building it runs the package's own code ({', '.join(runs_code)}); "
            "read it before you push",
            err=True,
        )
    typer.echo(f"  publish it with: vf env push {pulled.path} (the hub records it as a fork)")


@app.command("info")
@handle_errors
def info(spec: str = typer.Argument(..., help="OWNER/NAME"), as_json: bool = _JSON) -> None:
    """Show an environment's versions, tags and entry points."""
    from verifiers.hub.client import HubClient, parse_spec

    owner, name, _ = parse_spec(spec)
    project = HubClient().project(owner, name)
    if as_json:
        typer.echo(project.model_dump_json(indent=2))
        return
    typer.echo(f"{project.owner}/{project.name}{' (private)' if project.private else ''}")
    if project.summary:
        typer.echo(f"  {project.summary}")
    if project.tags:
        typer.echo(f"  tags: {', '.join(project.tags)}")
    typer.echo(f"  latest: {project.latest_version or '-'}")
    if project.forked_from is not None:
        src = project.forked_from
        typer.echo(f"  forked from: {src.owner}/{src.name}@{src.version}")
    if project.forks:
        typer.echo(f"  forks: {project.forks}")
    for rel in project.releases or []:
        mark = f"  [yanked: {rel.yanked_reason or 'no reason'}]" if rel.yanked else ""
        eps = ", ".join(rel.entry_points) or "-"
        typer.echo(f"  {rel.version:<12} {rel.created_at:%Y-%m-%d}  entry points: {eps}{mark}")


def _print_projects(items: list[ProjectOut], total: int, page: int, per_page: int) -> None:
    from cli._common import plural

    if not items:
        typer.echo("no environments found")
        return
    rows = [
        [
            f"{p.owner}/{p.name}",
            p.latest_version or "-",
            "private" if p.private else "public",
            str(p.downloads),
            ", ".join(p.tags),
            p.summary or "",
        ]
        for p in items
    ]
    headers = ["ENVIRONMENT", "LATEST", "VISIBILITY", "DOWNLOADS", "TAGS", "SUMMARY"]
    for text in _environment_lines(headers, rows, _list_width()):
        typer.echo(text)
    shown = (page - 1) * per_page + len(items)
    more = f"; next: --page {page + 1}" if shown < total else ""
    typer.echo(f"({len(items)} shown of {plural(total, 'environment')}{more})")


def _list_width() -> int | None:
    """The width `vf env list` fits: the terminal's (or ``$COLUMNS``); none in a pipe, where a
    line per environment, in full, is what `grep` and `cut` want."""
    import os
    import sys

    from cli._common import terminal_width

    if not sys.stdout.isatty() and not os.environ.get("COLUMNS"):
        return None
    return terminal_width()


def _environment_lines(headers: list[str], rows: list[list[str]], width: int | None) -> list[str]:
    """One table row per environment where the whole table fits ``width`` (always in a pipe:
    ``None``); otherwise the short columns as a table, each row followed by its summary and
    tags on lines of their own, wrapped to ``width``: nothing is cut (only a name longer than
    the line is)."""
    import textwrap

    from cli._common import format_table

    full = format_table(headers, rows)
    if width is None or max(len(line) for line in full) <= width:
        return full
    short = format_table(headers[:4], [r[:4] for r in rows], width=width, shrink=(0,))
    out = short[:2]
    for row, line in zip(rows, short[2:], strict=True):
        out.append(line)
        for label, text in (("", row[5]), ("tags: ", row[4])):
            if text:
                out += textwrap.wrap(
                    label + text, width, initial_indent="    ", subsequent_indent="    "
                )
    return out


@app.command("uninstall")
@handle_errors
def uninstall(
    spec: str = typer.Argument(..., help="OWNER/NAME or NAME of an installed environment"),
) -> None:
    """Remove an installed environment package from this Python."""
    import importlib.metadata
    import importlib.util
    import shutil
    import subprocess
    import sys

    name = spec.split("@", 1)[0].rsplit("/", 1)[-1]
    try:
        version = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        raise CLIError(
            f"{name} is not installed in this Python ({sys.executable})",
            "see what is installed with: pip list",
        ) from None
    if importlib.util.find_spec("pip") is not None:
        cmd = [sys.executable, "-m", "pip", "uninstall", "-y", "-q", name]
    elif uv := shutil.which("uv"):
        cmd = [uv, "pip", "uninstall", "--python", sys.executable, name]
    else:
        raise CLIError("neither pip nor uv is available to uninstall packages")
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        raise CLIError(f"could not uninstall {name}: {detail[-1] if detail else 'pip failed'}")
    typer.echo(f"uninstalled {name} {version}")


@app.command("list")
@handle_errors
def list_(
    owner: str = typer.Option(None, "--owner", help="Only this namespace"),
    tag: str = typer.Option(None, "--tag", help="Only environments with this tag"),
    page: int = typer.Option(1, "--page", min=1, help="Page of results to show"),
    per_page: int = typer.Option(20, "--per-page", min=1, max=100, help="Results per page"),
    sort: Sort = _SORT,
    as_json: bool = _JSON,
) -> None:
    """List environments on the hub."""
    from verifiers.hub.client import HubClient

    res = HubClient().list_projects(
        owner=owner, tag=tag, page=page, per_page=per_page, sort=sort.value
    )
    if as_json:
        typer.echo(res.model_dump_json(indent=2))
    else:
        _print_projects(res.items, res.total, res.page, res.per_page)


@app.command("search")
@handle_errors
def search(
    query: str = typer.Argument(..., help="Text to look for in names, summaries and tags"),
    tag: str = typer.Option(None, "--tag", help="Only environments with this tag"),
    page: int = typer.Option(1, "--page", min=1, help="Page of results to show"),
    per_page: int = typer.Option(20, "--per-page", min=1, max=100, help="Results per page"),
    sort: Sort = _SORT,
    as_json: bool = _JSON,
) -> None:
    """Search environments on the hub."""
    from verifiers.hub.client import HubClient

    res = HubClient().list_projects(
        query=query, tag=tag, page=page, per_page=per_page, sort=sort.value
    )
    if as_json:
        typer.echo(res.model_dump_json(indent=2))
    else:
        _print_projects(res.items, res.total, res.page, res.per_page)


@app.command("yank")
@handle_errors
def yank(
    spec: str = typer.Argument(..., help="OWNER/NAME@VERSION"),
    reason: str = typer.Option(None, "--reason", "-r", help="Shown to installers"),
) -> None:
    """Yank a version: installers skip it unless it is pinned exactly."""
    from verifiers.hub.client import HubClient, parse_spec

    owner, name, version = parse_spec(spec, need_version=True)
    assert version is not None
    rel = HubClient().set_yanked(owner, name, version, True, reason)
    typer.echo(f"yanked {owner}/{name}@{rel.version}" + (f" ({reason})" if reason else ""))


@app.command("delete")
@handle_errors
def delete(
    spec: str = typer.Argument(..., help="OWNER/NAME@VERSION"),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation"),
) -> None:
    """Delete a version and its files (admins). Prefer `vf env yank`: a deleted version's
    filenames can never be uploaded again."""
    import sys

    from verifiers.hub.client import HubClient, parse_spec

    owner, name, version = parse_spec(spec, need_version=True)
    assert version is not None
    if not yes:
        if not sys.stdin.isatty():
            raise CLIError(
                f"deleting {owner}/{name}@{version} needs confirmation",
                "pass --yes (or run it in a terminal)",
            )
        typer.confirm(f"delete {owner}/{name}@{version} and its files for good?", abort=True)
    files = HubClient().delete_release(owner, name, version)
    typer.echo(f"deleted {owner}/{name}@{version} ({', '.join(files) or 'no files'})")


@app.command("unyank")
@handle_errors
def unyank(spec: str = typer.Argument(..., help="OWNER/NAME@VERSION")) -> None:
    """Undo a yank."""
    from verifiers.hub.client import HubClient, parse_spec

    owner, name, version = parse_spec(spec, need_version=True)
    assert version is not None
    rel = HubClient().set_yanked(owner, name, version, False)
    typer.echo(f"unyanked {owner}/{name}@{rel.version}")
