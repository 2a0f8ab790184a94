"""Sealed versions: once a version has a wheel, its code is fixed.

A second wheel (another tag, or a build tag) would let a published version's code change
under the same version number, and installers pick the best-ranked wheel, so it would be
installed instead of the reviewed one. Only an sdist may still join a version with a wheel
(``twine upload dist/*`` and ``uv publish`` send the sdist and the wheel separately)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from hub_server import models as m
from hub_server.errors import Conflict
from hub_server.wheels import SDIST_TAG, WheelInfo


def check_sealed(db: Session, release: m.Release, info: WheelInfo, project: str) -> None:
    """Refuse a wheel joining ``release`` when the release already has a wheel."""
    if info.wheel_tags == SDIST_TAG:
        return
    wheel = db.scalar(
        select(m.File.filename)
        .where(m.File.release_id == release.id, m.File.wheel_tags != SDIST_TAG)
        .limit(1)
    )
    if wheel is not None and wheel != info.filename:
        raise Conflict(
            f"version {release.version} of {project} already has the wheel {wheel}, and a "
            f"published version is sealed: {info.filename} cannot join it: bump the version "
            "and upload again"
        )
