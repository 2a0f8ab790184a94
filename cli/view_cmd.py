"""``vf view [PATH]``: browse evaluation and training runs in a local web viewer."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from cli._common import CLIError, handle_errors

HELP = (
    "Browse evaluation runs and vf train output directories (a run directory or a folder of "
    "them) in a local web viewer; a training run's page follows the run live."
)
# every run vf-eval writes: classic flags write under outputs/evals/, 0.4's flags outputs/NAME--...
DEFAULT_ROOT = Path("outputs")

app = typer.Typer()


@app.command("view", help=HELP)
@handle_errors
def view_command(
    path: Path = typer.Argument(
        DEFAULT_ROOT,
        metavar="[PATH]",
        help="A run directory, or a folder holding runs (default: outputs, all of vf-eval's runs).",
    ),
    port: int = typer.Option(0, "--port", "-p", help="Port to listen on (default: any free)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    no_browser: bool = typer.Option(False, "--no-browser", help="Do not open a browser."),
) -> None:
    if not path.exists():
        raise CLIError(
            f"{path} does not exist",
            "pass a run directory (with results.jsonl, or a vf train OUTPUT_DIR) or the folder "
            "vf-eval writes to (outputs); create a run with `vf eval ENV -s`",
            exit_code=2,
        )
    if not path.is_dir():
        raise CLIError(f"{path} is not a directory", "pass the run's directory", exit_code=2)
    if not 0 <= port <= 65535:
        raise CLIError(f"--port {port} is out of range (0-65535)", exit_code=2)
    try:
        import jinja2  # noqa: F401
    except ImportError:
        raise CLIError(
            "the viewer needs Jinja2", "pip install 'verifiers[cli]'", exit_code=2
        ) from None
    from verifiers.web.viewer import serve

    try:
        server = serve(path, host=host, port=port)
        url, viewer = server.__enter__()
    except OSError as e:
        raise CLIError(
            f"cannot listen on {host}:{port}: {e.strerror or e}",
            "choose another port with --port N (0 picks a free one)",
        ) from None
    start = url + viewer.launch_path()  # carries this launch's secret
    print(f"vf view: serving {viewer.root} at {start} (Ctrl-C to stop)", file=sys.stderr)
    sys.stderr.flush()
    if not no_browser:
        import webbrowser

        webbrowser.open(start)
    try:
        import threading

        threading.Event().wait()
    finally:
        server.__exit__(None, None, None)
