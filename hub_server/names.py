"""Distribution names: only ASCII PEP 508 names reach the index.

``packaging`` accepts any Unicode word character in a wheel filename and nothing checks an
sdist's, so without this rule a Cyrillic letter a (U+0430) in ``vf-math`` or markup in a name would be
published and shown next to the real project.
"""

from __future__ import annotations

import re

from hub_server.errors import InvalidUpload

# PEP 508: letters, digits, '.', '_' and '-', starting and ending with a letter or digit
_PEP508_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?", re.ASCII)
RULE = (
    "a distribution name must be a valid PEP 508 name: ASCII letters, digits, '.', '_' and "
    "'-', starting and ending with a letter or digit"
)


def is_valid_name(name: str) -> bool:
    return _PEP508_NAME.fullmatch(name) is not None


def check_name(name: str, where: str) -> None:
    """Refuse ``name`` (read from ``where``: the filename or METADATA) unless it is an ASCII
    PEP 508 name, naming the rule and what to do."""
    if not is_valid_name(name):
        raise InvalidUpload(
            f"{where}: {name!r} is not allowed; {RULE} (no look-alike letters from other "
            "scripts, no markup, no '?', '#' or '%'): rename the package and rebuild it"
        )


def normalised_filename(filename: str) -> str:
    """The one spelling of a distribution filename (PEP 427 / PEP 625): normalised name with
    ``_``, canonical version without trailing zeros, the build tag, and the tag set expanded
    and sorted. Two spellings of the same file give the same string, so a deleted file cannot
    be revived by re-spelling its name. Unparseable names are returned lower-cased."""
    from packaging.utils import (
        InvalidSdistFilename,
        InvalidWheelFilename,
        canonicalize_name,
        canonicalize_version,
        parse_sdist_filename,
        parse_wheel_filename,
    )

    try:
        if filename.endswith(".whl"):
            name, version, build, tags = parse_wheel_filename(filename)
            parts = [canonicalize_name(name).replace("-", "_"), canonicalize_version(version)]
            if build:
                parts.append(f"{build[0]}{build[1]}")
            parts.append("+".join(sorted(str(t) for t in tags)))
            return "-".join(parts) + ".whl"
        if filename.endswith(".tar.gz"):
            name, version = parse_sdist_filename(filename)
            norm = canonicalize_name(name).replace("-", "_")
            return f"{norm}-{canonicalize_version(version)}.tar.gz"
    except (InvalidWheelFilename, InvalidSdistFilename):
        pass
    return filename.lower()
