"""Names a new hub project may not take: the most-used public package names.

A hub project named like a well-known public package is a dependency-confusion trap: an
installer that sees both indexes may take the hub's. The list ships with the hub as
``protected_names.txt``; an operator refreshes or replaces it with
``VF_HUB_PROTECTED_NAMES_FILE``.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path

from packaging.utils import canonicalize_name

from hub_server.errors import Forbidden
from hub_server.settings import Settings


def parse_names(text: str) -> frozenset[str]:
    names = set()
    for line in text.splitlines():
        name = line.split("#", 1)[0].strip()
        if name:
            names.add(canonicalize_name(name))
    return frozenset(names)


@lru_cache(maxsize=4)
def load_protected(path: Path | None = None) -> frozenset[str]:
    """The operator's file when given, else the list shipped with the hub."""
    if path is not None:
        try:
            return parse_names(path.read_text(encoding="utf-8"))
        except OSError as e:
            raise ValueError(f"VF_HUB_PROTECTED_NAMES_FILE: cannot read {path} ({e})") from None
    shipped = resources.files("hub_server").joinpath("protected_names.txt")
    return parse_names(shipped.read_text(encoding="utf-8"))


def check_not_protected(name: str, protected: frozenset[str]) -> None:
    if canonicalize_name(name) in protected:
        raise Forbidden(
            f"{name!r} is the name of a widely used public package; a hub project with that "
            "name could be installed in its place (dependency confusion). Choose a distinct "
            "name, e.g. with your own prefix"
        )


def check_new_project_name(name: str, settings: Settings) -> None:
    """A new project may not take a well-known public name: the protected list, and the
    upstream index when the hub has one."""
    check_not_protected(name, load_protected(settings.protected_names_file))
    if settings.upstream_index_url:
        from hub_server.upstream import check_not_upstream

        check_not_upstream(name, settings.upstream_index_url)
