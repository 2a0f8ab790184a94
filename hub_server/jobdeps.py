"""The dependencies a worker job's environment needs, resolved from the hub itself.

A release's wheel declares its dependencies (``Requires-Dist``). The job's sandbox already has
this installation's ``verifiers`` and the libraries installed with it (read-only); every other
dependency must be an environment published on this hub: public, or in the same namespace as
the release (a private project is never handed to another owner's code). Its highest
non-yanked release that satisfies the requirement is chosen (pre-releases only when nothing
else does, as pip does), and the wheels are extracted next to the release's own, transitively.
Nothing is fetched from outside the hub, and nothing is built: only wheels are used.
"""

from __future__ import annotations

import importlib.metadata
import json
import sysconfig
from dataclasses import dataclass
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version
from sqlalchemy import select
from sqlalchemy.orm import Session

from hub_server import models as m

__all__ = ["MAX_DEPENDENCIES", "Dependency", "UnresolvedDependency", "hub_dependencies"]

#: how many hub environments one job may pull in (transitively)
MAX_DEPENDENCIES = 20


class UnresolvedDependency(Exception):
    """A dependency the job cannot have (the message says which, and what to do)."""


@dataclass(frozen=True)
class Dependency:
    """A hub release a job needs: its wheel file row (detached) and what asked for it."""

    name: str
    version: str
    file: Any
    required_by: str
    requires: tuple[str, ...] = ()

    def describe(self) -> str:
        return (
            f"{self.name} {self.version} from this hub ({self.file.filename}, sha256 "
            f"{self.file.sha256[:12]}; required by {self.required_by})"
        )


def _in_the_sandbox() -> frozenset[str]:
    """The distributions the job's sandbox has without the hub: ``verifiers`` (bound from this
    installation) and what is installed, not editable, in this interpreter's site-packages
    (bound read-only; an editable install's code lives elsewhere, which the sandbox cannot
    see)."""
    names = {"verifiers"}
    purelib = sysconfig.get_paths()["purelib"]
    for dist in importlib.metadata.distributions(path=[purelib]):
        try:
            direct = json.loads(dist.read_text("direct_url.json") or "{}")
        except ValueError:
            direct = {}
        if not (direct.get("dir_info") or {}).get("editable"):
            names.add(canonicalize_name(dist.metadata["Name"] or ""))
    return frozenset(names)


def hub_dependencies(db: Session, release_id: int) -> list[Dependency]:
    """The hub releases the release's environment needs, in the order found (breadth first).
    Raises :class:`UnresolvedDependency` naming a requirement nothing satisfies."""
    root = db.get(m.Release, release_id)
    if root is None:
        return []
    env = db.get(m.Environment, root.environment_id)
    if env is None:
        return []
    available = _in_the_sandbox()
    seen = {env.name}
    todo = [(spec, f"{env.name} {root.version}") for spec in root.requires_dist or []]
    found: list[Dependency] = []
    while todo:
        spec, wanted_by = todo.pop(0)
        req = _parse(spec, wanted_by)
        if req is None:
            continue
        name = canonicalize_name(req.name)
        if name in seen or name in available:
            continue
        seen.add(name)
        dep = _resolve(db, req, env.namespace_id, wanted_by)
        found.append(dep)
        if len(found) > MAX_DEPENDENCIES:
            raise UnresolvedDependency(
                f"{env.name} needs more than {MAX_DEPENDENCIES} environments from the hub; a "
                "job installs at most that many"
            )
        todo += [(s, f"{dep.name} {dep.version}") for s in dep.requires]
    return found


def _parse(spec: str, wanted_by: str) -> Requirement | None:
    """The requirement, or None when its marker excludes it here (an extra, another python)."""
    try:
        req = Requirement(spec)
    except InvalidRequirement as e:
        raise UnresolvedDependency(
            f"{wanted_by} declares an invalid requirement {spec!r}: {e}"
        ) from None
    if req.url:
        raise UnresolvedDependency(
            f"{wanted_by} requires {spec!r} by URL; a worker installs dependencies from this "
            "hub only: publish it here and require it by name"
        )
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        return None
    return req


def _resolve(db: Session, req: Requirement, namespace_id: int, wanted_by: str) -> Dependency:
    name = canonicalize_name(req.name)
    dep_env = db.scalar(select(m.Environment).where(m.Environment.name == name))
    if dep_env is None or (dep_env.private and dep_env.namespace_id != namespace_id):
        raise UnresolvedDependency(
            f"{req} (required by {wanted_by}) is neither installed with the hub's worker nor a "
            f"public environment on this hub: publish {req.name} to the hub, or install it "
            "with the worker"
        )
    releases: dict[Version, m.Release] = {}
    stmt = select(m.Release).where(m.Release.environment_id == dep_env.id, ~m.Release.yanked)
    for rel in db.scalars(stmt):
        try:
            releases[Version(rel.version)] = rel
        except InvalidVersion:
            continue
    for version in sorted(req.specifier.filter(releases), reverse=True):
        rel = releases[version]
        stmt_f = select(m.File).where(m.File.release_id == rel.id, m.File.wheel_slot == 1)
        f = db.scalar(stmt_f)
        if f is None or not f.filename.endswith(".whl"):
            continue  # a release without a wheel (an sdist only): the next one
        db.expunge(f)
        requires = tuple(rel.requires_dist or [])
        return Dependency(dep_env.name, rel.version, f, wanted_by, requires)
    raise UnresolvedDependency(
        f"{req} (required by {wanted_by}): no release of {dep_env.name} on this hub with a "
        f"wheel satisfies it (releases: {', '.join(str(v) for v in sorted(releases)) or 'none'})"
    )
