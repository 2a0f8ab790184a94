"""An agent's git changes captured into its trace (``trace.info["patch"]``), for SWE-style
tasks: call :func:`capture_patch` from ``Task.finalize`` (the harness is done, the runtime still
up, scoring has not touched the repository yet), so the patch is exactly what the agent left,
test-file edits included.

Diff against a base commit the task recorded before the agent ran (:func:`resolve_head` at the
end of ``setup``, kept on the host, where the agent cannot change it), so commits the agent
made are part of the patch; bare ``HEAD`` misses them. Untracked files the image shipped
(:func:`snapshot_untracked`, also at setup) are passed as ``ignore``: a patch carrying them
would not apply in a fresh box of the same image.
"""

from __future__ import annotations

import uuid
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from verifiers.v1.errors import SandboxError

if TYPE_CHECKING:
    from verifiers.v1.trace import Trace

__all__ = ["PATCH_CAP_BYTES", "capture_patch", "resolve_head", "snapshot_untracked"]

PATCH_CAP_BYTES = 2_000_000
"""The most bytes of a patch kept; a longer one is cut there and marked
``info["patch_truncated"]``."""

# Stage everything but the ignored paths ("$@"; with none, nothing is unstaged), diff the index
# against $VF_DIFF_BASE into $1-named files, and always unstage again, whatever failed: a
# staged tree left behind could break scoring's own checkouts. Any failing step fails the
# capture (a failed `add` leaves a partial index, a failed `head` an empty file: either would
# read as a silently wrong patch); the first of add, reset, diff, head to fail gives the code.
_CAPTURE = """
full=$1; capped=$2; cap=$3; shift 3
rm -f "$full" "$capped"
git add -A; add=$?
if [ "$#" -gt 0 ]; then git reset -q -- "$@"; fi
git -c core.quotepath=off diff --cached --binary "$VF_DIFF_BASE" > "$full"; diff=$?
git reset -q; reset=$?
head -c "$cap" "$full" > "$capped"; cut=$?
rm -f "$full"
for code in $add $reset $diff $cut; do
  if [ "$code" -ne 0 ]; then exit "$code"; fi
done
exit 0
"""


async def resolve_head(runtime: Any, env: dict[str, str] | None = None) -> str:
    """The SHA of the repository's ``HEAD`` in ``runtime``, ``""`` when git cannot tell."""
    result = await runtime.run(["git", "rev-parse", "HEAD"], env or {})
    return (result.stdout or "").strip() if result.exit_code == 0 else ""


async def snapshot_untracked(runtime: Any, env: dict[str, str] | None = None) -> list[str]:
    """The repository's untracked (and not ignored) files, ``[]`` when git cannot tell: what
    the image shipped, to pass to :func:`capture_patch` as ``ignore``."""
    result = await runtime.run(
        ["sh", "-c", "git ls-files --others --exclude-standard -z"], env or {}
    )
    if result.exit_code != 0:
        return []
    return [path for path in (result.stdout or "").split("\0") if path]


async def capture_patch(
    trace: Trace,
    runtime: Any,
    base_commit: str = "",
    env: dict[str, str] | None = None,
    write_path: str | None = None,
    ignore: list[str] | None = None,
) -> None:
    """Record the agent's whole diff (against ``base_commit``, else ``HEAD``; binary-safe;
    the ``ignore`` paths left out) as ``trace.info["patch"]``, cut at
    :data:`PATCH_CAP_BYTES` (``info["patch_truncated"]``). ``write_path`` also writes it to
    that path in the runtime (e.g. under ``vf.ARTIFACTS_DIR`` for a grader in another box).

    Git failing in a runtime that still answers (a stale ``index.lock``, a removed ``.git``,
    a base commit gone) is the agent's doing: it is recorded as ``info["patch_error"]`` and
    the rollout scores as one that changed nothing. A runtime that stops answering raises
    (:class:`~verifiers.v1.errors.SandboxError`): the rollout failed, not the agent."""
    token = uuid.uuid4().hex  # per call: concurrent captures on one filesystem never collide
    full, capped = f"/tmp/vf_patch_full_{token}", f"/tmp/vf_patch_{token}"
    variables = {**(env or {}), "VF_DIFF_BASE": base_commit or "HEAD"}
    argv = ["sh", "-c", _CAPTURE, "vf-capture-patch", full, capped, str(PATCH_CAP_BYTES + 1)]
    try:
        result = await runtime.run([*argv, *(ignore or [])], variables)
        if result.exit_code != 0:
            # Some runtimes report a dead box as a failed command: ask once which it is.
            if (await runtime.run(["true"], {})).exit_code != 0:
                raise SandboxError(
                    "patch capture failed and the runtime stopped answering: "
                    f"{(result.stderr or '').strip()[-300:]}"
                )
            trace.info["patch_error"] = (
                f"exit={result.exit_code} {(result.stderr or '').strip()[-500:]}"
            )
            return
        raw: bytes = await runtime.read(capped)
    finally:
        try:
            await runtime.run(["rm", "-f", full, capped], env or {})
        except Exception:  # leftover temp files never fail a rollout
            pass
    if len(raw) > PATCH_CAP_BYTES:
        raw = raw[:PATCH_CAP_BYTES]
        trace.info["patch_truncated"] = True
    trace.info["patch"] = raw.decode("utf-8", errors="replace")
    if write_path is not None:
        await runtime.run(["mkdir", "-p", str(PurePosixPath(write_path).parent)], env or {})
        await runtime.write(write_path, raw)
