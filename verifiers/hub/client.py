"""A Python client of the hub: what ``vf login``, ``vf env push|install|info|list|...`` and
``vf token ...`` do, without the command-line package, for training scripts and notebooks::

    from verifiers.hub import HubClient

    hub = HubClient()                        # VF_HUB_URL/VF_HUB_TOKEN, else `vf login`'s config
    hub.push("dist/vf_math-0.1.0-py3-none-any.whl")
    hub.install("alice/vf-math@0.1.0")
    hub.push_eval_result("alice/vf-math@0.1.0", EvalResultIn(...))

Every failure is a :class:`~verifiers.errors.HubClientError` naming what went wrong, with the
next step in ``hint``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, TypeAdapter

from verifiers.errors import HubClientError
from verifiers.hub import schemas as s
from verifiers.hub.config import HubSettings, save_login

__all__ = ["HubClient", "Installed", "Pulled", "editable_source", "parse_spec", "pick_release"]

M = TypeVar("M", bound=BaseModel)

_SPEC_RE = re.compile(
    r"^(?P<owner>[A-Za-z0-9-]+)/(?P<name>[A-Za-z0-9._-]+)(?:@(?P<version>[^@/\s]+))?$"
)
_LOGIN_HINT = "log in with `vf login --url URL --token TOKEN` (or set VF_HUB_TOKEN)"


def parse_spec(spec: str, *, need_version: bool = False) -> tuple[str, str, str | None]:
    """``OWNER/NAME[@VERSION]`` -> ``(owner, name, version or None)``; the owner lower-cased."""
    m = _SPEC_RE.match(spec.strip())
    if not m:
        raise HubClientError(
            f"{spec!r} is not OWNER/NAME[@VERSION]",
            hint="for example: vf env install alice/vf-math@0.1.0",
        )
    if need_version and not m["version"]:
        raise HubClientError(f"{spec!r} needs a version", hint=f"for example: {spec}@1.0.0")
    return m["owner"].lower(), m["name"], m["version"]


def pick_release(project: s.ProjectOut, version: str | None) -> s.ReleaseOut:
    """The release of ``project`` with ``version`` (PEP 440 equality), or its latest one."""
    from packaging.version import InvalidVersion, Version

    def same(a: str, b: str) -> bool:
        try:
            return Version(a) == Version(b)
        except InvalidVersion:
            return a == b

    releases = project.releases or []
    if version is None:
        if project.latest_version is None:
            raise HubClientError(
                f"{project.owner}/{project.name} has no installable version (all are yanked)",
                hint=f"pin one explicitly: vf env install {project.owner}/{project.name}@VERSION",
            )
        version = project.latest_version
    for rel in releases:
        if same(rel.version, version):
            return rel
    known = ", ".join(r.version for r in releases) or "none"
    raise HubClientError(
        f"{project.owner}/{project.name} has no version {version} (versions: {known})"
    )


@dataclass(frozen=True)
class Installed:
    """What :meth:`HubClient.install` installed: the project, the release, and the missing
    dependencies it installed from the default index."""

    project: s.ProjectOut
    release: s.ReleaseOut
    dependencies: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Pulled:
    """What :meth:`HubClient.pull` unpacked: from which file, where, and the files written."""

    project: s.ProjectOut
    release: s.ReleaseOut
    file: s.FileOut
    path: Path
    files: list[str] = field(default_factory=list)


def _wheel_to_source(work: Path, written: list[str]) -> list[str]:
    """Turn an unpacked wheel into a buildable project: drop ``*.dist-info``/``*.data``, keep
    the packaged ``pyproject.toml`` (``vf env init``'s packages ship it) or write one from the
    wheel's metadata."""
    import shutil
    from email.parser import Parser

    infos = [p for p in work.iterdir() if p.is_dir() and p.name.endswith(".dist-info")]
    if len(infos) != 1:
        raise HubClientError("the wheel has no single .dist-info folder; cannot rebuild a project")
    info = infos[0]
    # hatchling's extra-metadata lands in .dist-info/extra_metadata/
    packaged = [info / "extra_metadata" / "pyproject.toml", info / "pyproject.toml"]
    found = next((p for p in packaged if p.is_file()), None)
    meta = Parser().parsestr((info / "METADATA").read_text(encoding="utf-8", errors="replace"))
    extra: dict[str, str] = {}
    if found is not None:
        pyproject = found.read_text(encoding="utf-8")
        readme = _readme_path(pyproject)
        if readme is not None:  # the README a build needs travels as METADATA's body
            extra[readme] = str(meta.get_payload() or "")
    else:
        pyproject = _pyproject_from_metadata(meta, info / "entry_points.txt", work)
    for p in work.iterdir():
        if p.is_dir() and p.name.endswith((".dist-info", ".data")):
            shutil.rmtree(p)
    (work / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    kept = [w for w in written if not w.split("/", 1)[0].endswith((".dist-info", ".data"))]
    for rel, text in extra.items():
        if not (work / rel).exists():
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / rel).write_text(text, encoding="utf-8")
            kept.append(rel)
    return [*kept, "pyproject.toml"]


def _readme_path(pyproject: str) -> str | None:
    """The checked relative path of ``[project] readme`` (a file name), if it names one."""
    import tomllib

    from verifiers.hub.archive import ArchiveError, safe_member_path

    try:
        readme = tomllib.loads(pyproject).get("project", {}).get("readme")
    except tomllib.TOMLDecodeError:
        return None
    if isinstance(readme, dict):
        readme = readme.get("file")
    if not isinstance(readme, str):
        return None
    try:
        return safe_member_path(readme)
    except ArchiveError:
        return None


def _pyproject_from_metadata(meta: Any, entry_points: Path, work: Path) -> str:
    import configparser
    import json

    def q(v: str) -> str:
        return json.dumps(v)  # a TOML basic string is a JSON string for these values

    top = sorted(p.name for p in work.iterdir() if not p.name.endswith((".dist-info", ".data")))
    lines = [
        "[build-system]",
        'requires = ["hatchling>=1.21"]',
        'build-backend = "hatchling.build"',
        "",
        "[project]",
        f"name = {q(str(meta['Name']))}",
        f"version = {q(str(meta['Version']))}",
    ]
    if meta["Summary"]:
        lines.append(f"description = {q(str(meta['Summary']))}")
    if meta["Requires-Python"]:
        lines.append(f"requires-python = {q(str(meta['Requires-Python']))}")
    deps = [q(str(d)) for d in meta.get_all("Requires-Dist") or []]
    lines.append(f"dependencies = [{', '.join(deps)}]")
    if entry_points.is_file():
        cp = configparser.ConfigParser(delimiters=("=",), interpolation=None)
        cp.optionxform = str  # type: ignore[assignment,method-assign]
        cp.read_string(entry_points.read_text(encoding="utf-8"))
        for group in cp.sections():
            lines += ["", f"[project.entry-points.{q(group)}]"]
            lines += [f"{q(k)} = {q(v.strip())}" for k, v in cp.items(group)]
    lines += ["", "[tool.hatch.build.targets.wheel]", f"only-include = [{', '.join(map(q, top))}]"]
    return "\n".join(lines) + "\n"


class HubClient:
    """The hub's JSON API over HTTP (synchronous). ``url`` and ``token`` default to the
    configured hub (:meth:`HubSettings.load`)."""

    def __init__(
        self, url: str | None = None, token: str | None = None, *, timeout: float = 120.0
    ) -> None:
        if url is None:
            loaded = HubSettings.load()
            self.settings = HubSettings(loaded.url, token or loaded.token)
        else:
            self.settings = HubSettings(url, token)
        self.timeout = timeout

    @property
    def url(self) -> str:
        return self.settings.url

    @property
    def token(self) -> str | None:
        return self.settings.token

    # ------------------------------------------------------------------ plumbing

    def require_token(self) -> str:
        if not self.token:
            raise HubClientError(
                f"no hub token configured for {self.url}",
                hint="log in with `vf login --url URL --token TOKEN` or set VF_HUB_TOKEN",
            )
        return self.token

    def request(
        self,
        method: str,
        path: str,
        *,
        auth: bool = False,
        headers: dict[str, str] | None = None,
        **kw: Any,
    ) -> Any:
        """``method path`` on the hub; the decoded JSON body (None when empty)."""
        if auth:
            self.require_token()
        headers = {
            **({"Authorization": f"Bearer {self.token}"} if self.token else {}),
            **(headers or {}),
        }
        try:
            resp = httpx.request(
                method, f"{self.url}{path}", headers=headers, timeout=self.timeout, **kw
            )
        except httpx.HTTPError as e:
            raise HubClientError(
                f"cannot reach the hub at {self.url} ({type(e).__name__}: {e})",
                hint="start one with `vf hub serve`, or point at yours with `vf login --url URL` "
                "or VF_HUB_URL",
            ) from None
        if resp.status_code >= 400:
            raise self._error(resp)
        return resp.json() if resp.content else None

    @staticmethod
    def _error(resp: httpx.Response) -> HubClientError:
        try:
            message = str(resp.json()["message"])
        except Exception:
            message = resp.text.strip()[:300] or resp.reason_phrase
        return HubClientError(
            f"hub: {message} (HTTP {resp.status_code})",
            # the hub's own 401 message may already name `vf login`
            hint=_LOGIN_HINT if resp.status_code == 401 and "vf login" not in message else None,
            status_code=resp.status_code,
        )

    def _get(self, model: type[M], path: str, **kw: Any) -> M:
        return model.model_validate(self.request("GET", path, **kw))

    # ------------------------------------------------------------------ account and tokens

    def whoami(self) -> s.WhoAmI:
        return self._get(s.WhoAmI, "/api/v1/whoami", auth=True)

    def login(self) -> tuple[s.WhoAmI, Path]:
        """Check the token against the hub, then store URL and token as the default hub (what
        ``vf login`` does). Returns who the token belongs to and the config file written."""
        who = self.whoami()
        return who, save_login(self.url, self.require_token())

    def create_token(self, body: s.TokenCreate) -> s.TokenCreated:
        data = self.request("POST", "/api/v1/tokens", auth=True, json=body.model_dump())
        return s.TokenCreated.model_validate(data)

    def list_tokens(self) -> list[s.TokenOut]:
        data = self.request("GET", "/api/v1/tokens", auth=True)
        return TypeAdapter(list[s.TokenOut]).validate_python(data)

    def revoke_token(self, token_id: int) -> s.TokenOut:
        data = self.request("DELETE", f"/api/v1/tokens/{token_id}", auth=True)
        return s.TokenOut.model_validate(data)

    # ------------------------------------------------------------------ environments

    def push(
        self,
        wheel: str | Path,
        *,
        owner: str | None = None,
        private: bool = False,
        forked_from: str | None = None,
    ) -> s.UploadResult:
        """Upload a built wheel (identical re-upload is a no-op: ``created`` is False).
        ``forked_from`` (``OWNER/NAME@VERSION``): the hub records the new project as a fork
        of that release (it must exist and be readable with this token)."""
        wheel = Path(wheel)
        self.require_token()
        if wheel.suffix != ".whl" or not wheel.is_file():
            raise HubClientError(f"no such wheel: {wheel}", hint="build one with `vf env build`")
        fields = {":action": "file_upload", "protocol_version": "1"}
        if owner:
            fields["owner"] = owner
        if private:
            fields["private"] = "true"
        if forked_from:
            fields["forked_from"] = forked_from
        with wheel.open("rb") as f:
            data = self.request(
                "POST",
                "/api/v1/upload",
                auth=True,
                data=fields,
                files={"content": (wheel.name, f, "application/octet-stream")},
            )
        return s.UploadResult.model_validate(data)

    def project(self, owner: str, name: str) -> s.ProjectOut:
        return self._get(s.ProjectOut, f"/api/v1/projects/{quote(owner)}/{quote(name)}")

    def info(self, spec: str) -> s.ProjectOut:
        """``OWNER/NAME``: the project with its releases, tags and entry points."""
        owner, name, _ = parse_spec(spec)
        return self.project(owner, name)

    def list_projects(
        self,
        *,
        query: str | None = None,
        owner: str | None = None,
        tag: str | None = None,
        page: int = 1,
        per_page: int = 20,
        sort: str | None = None,
    ) -> s.ProjectList:
        """Visible projects; ``sort``: ``recent`` (the hub's default), ``name`` or
        ``downloads`` (most downloaded first)."""
        params: dict[str, str | int] = {"page": page, "per_page": per_page}
        for k, v in (("q", query), ("owner", owner), ("tag", tag), ("sort", sort)):
            if v:
                params[k] = v
        return self._get(s.ProjectList, "/api/v1/projects", params=params)

    def set_yanked(
        self, owner: str, name: str, version: str, yanked: bool, reason: str | None = None
    ) -> s.ReleaseOut:
        path = f"{self._version_path(owner, name, version)}/"
        if yanked:
            data = self.request("POST", path + "yank", auth=True, json={"reason": reason})
        else:
            data = self.request("POST", path + "unyank", auth=True)
        return s.ReleaseOut.model_validate(data)

    def delete_release(self, owner: str, name: str, version: str) -> list[str]:
        """Delete a release (admins); its filenames stay burned. Returns the deleted files."""
        data = self.request("DELETE", self._version_path(owner, name, version), auth=True)
        return list(data.get("deleted", []))

    def index_url(self, owner: str, name: str, *, with_token: bool = True) -> str:
        """The project-scoped simple index (it can never shadow a dependency)."""
        base = self.url
        if with_token and self.token:
            scheme, rest = base.split("://", 1)
            base = f"{scheme}://__token__:{quote(self.token, safe='')}@{rest}"
        return f"{base}/{owner}/{name}/simple/"

    def install(
        self, spec: str, *, no_deps: bool = False, warn: Callable[[str], None] | None = None
    ) -> Installed:
        """Install ``OWNER/NAME[@VERSION]`` into this interpreter, taking only the hub's bytes.

        The environment and every dependency hosted on this hub are downloaded from the hub,
        checked against its sha256 record and installed by a pip that no configuration can
        redirect (:mod:`verifiers.hub.install`); the other missing dependencies come from the
        default index unless ``no_deps``. ``warn`` receives the notes worth showing (a yanked
        release, the dependencies being installed)."""
        return self.install_many([spec], no_deps=no_deps, warn=warn)[0]

    def install_many(
        self,
        specs: list[str],
        *,
        no_deps: bool = False,
        warn: Callable[[str], None] | None = None,
    ) -> list[Installed]:
        """Install several ``OWNER/NAME[@VERSION]`` at once, all or nothing: every spec is
        resolved and one plan made (a shared dependency resolved once, a dependency on one of
        the named environments checked against the version named) before anything is
        downloaded; then every hub file is downloaded and its sha256 checked before one
        locked-down pip run installs them together."""
        from verifiers.hub.install import (
            InstallError,
            install_from_default_index,
            install_hub_files,
            missing_requirements,
            plan_install_many,
        )

        if not specs:
            raise HubClientError("nothing to install", hint="name OWNER/NAME[@VERSION]")
        if len(specs) > 50:
            raise HubClientError(
                f"{len(specs)} environments in one command; at most 50",
                hint="install them in several commands",
            )
        roots: list[tuple[s.ProjectOut, s.ReleaseOut]] = []
        for spec in specs:
            owner, name, version = parse_spec(spec)
            project = self.project(owner, name)
            release = pick_release(project, version)
            where = f"{project.owner}/{project.name}"
            if not any(f.filename.endswith(".whl") for f in release.files):
                raise HubClientError(
                    f"{where} {release.version} has no wheel to install (only a source "
                    "distribution)",
                    hint="ask its owner to push the wheel: vf env push",
                )
            roots.append((project, release))
        try:
            plan = plan_install_many(self, roots, with_deps=not no_deps)
            for project, release in roots:
                if release.yanked and warn is not None:
                    reason = f": {release.yanked_reason}" if release.yanked_reason else ""
                    warn(
                        f"warning: {project.owner}/{project.name} {release.version} is yanked"
                        + reason
                    )
                source = editable_source(project.name)
                if source is not None and warn is not None:
                    warn(
                        f"warning: {project.name} is installed in editable mode from {source}; "
                        f"this install replaces it, and later edits there are not used (go "
                        f"back with: pip install -e {source})"
                    )
            install_hub_files(self, plan)
            missing = missing_requirements(plan.others)
            if missing:
                if warn is not None:
                    warn(f"installing dependencies from your default index: {', '.join(missing)}")
                install_from_default_index(missing)
        except InstallError as e:
            raise HubClientError(e.message, hint=e.hint) from None
        return [Installed(project=p, release=r, dependencies=missing) for p, r in roots]

    def pull(self, spec: str, dest: str | Path | None = None) -> Pulled:
        """Unpack ``OWNER/NAME[@VERSION]``'s source into ``dest`` (default ``./NAME``), which
        must be missing or empty: the release's sdist, or without one its wheel's files with
        the ``pyproject.toml`` the wheel carries (or one rebuilt from its metadata). The file's
        sha256 is checked against the hub's record and its members against
        :mod:`verifiers.hub.archive`'s rules before anything is written."""
        import shutil
        import tempfile

        from verifiers.hub.archive import ArchiveError, extract, is_sdist
        from verifiers.hub.install import InstallError, download_verified

        owner, name, version = parse_spec(spec)
        project = self.project(owner, name)
        release = pick_release(project, version)
        files = sorted(release.files, key=lambda f: (not is_sdist(f.filename), f.filename))
        files = [f for f in files if is_sdist(f.filename) or f.filename.endswith(".whl")]
        if not files:
            raise HubClientError(f"{project.owner}/{project.name} {release.version} has no files")
        chosen = files[0]
        target = Path(dest) if dest is not None else Path(project.name)
        if target.exists() and (not target.is_dir() or any(target.iterdir())):
            raise HubClientError(
                f"{target} exists and is not an empty folder",
                hint="pull into a new folder: vf env pull SPEC DIR",
            )
        with tempfile.TemporaryDirectory(prefix="vf-hub-pull-") as tmp:
            work = Path(tmp) / "out"
            work.mkdir()
            try:
                archive = download_verified(self, chosen, Path(tmp))
                written = extract(
                    archive, chosen.filename, work, strip_top=is_sdist(chosen.filename)
                )
                if not is_sdist(chosen.filename):
                    written = _wheel_to_source(work, written)
            except InstallError as e:
                raise HubClientError(e.message, hint=e.hint) from None
            except ArchiveError as e:
                raise HubClientError(
                    f"refusing to unpack {chosen.filename}: {e}",
                    hint="the archive is malformed or hostile; tell the hub's operator",
                ) from None
            target.mkdir(parents=True, exist_ok=True)
            for item in work.iterdir():
                shutil.move(str(item), target / item.name)
        return Pulled(project, release, chosen, target, sorted(written))

    def tree(self, spec: str) -> s.ReleaseTree:
        """The files of ``OWNER/NAME[@VERSION]``'s stored archive (sdist, else wheel)."""
        owner, name, version = self._resolve(spec)
        return self._get(s.ReleaseTree, self._version_path(owner, name, version) + "/tree")

    def read_file(self, spec: str, path: str) -> s.ArchiveFile:
        """One file of ``OWNER/NAME[@VERSION]``'s stored archive (text, bounded by the hub)."""
        owner, name, version = self._resolve(spec)
        url = f"{self._version_path(owner, name, version)}/tree/{quote(path.lstrip('/'))}"
        return self._get(s.ArchiveFile, url)

    def _resolve(self, spec: str) -> tuple[str, str, str]:
        owner, name, version = parse_spec(spec)
        if version is None:
            project = self.project(owner, name)
            version = pick_release(project, None).version
        return owner, name, version

    # ------------------------------------------------------------------ eval results

    def _version_path(self, owner: str, name: str, version: str) -> str:
        return f"/api/v1/projects/{quote(owner)}/{quote(name)}/versions/{quote(version)}"

    def eval_results(self, spec: str) -> list[s.EvalResultOut]:
        """The eval results recorded for ``OWNER/NAME@VERSION``."""
        owner, name, version = parse_spec(spec, need_version=True)
        assert version is not None
        data = self.request("GET", self._version_path(owner, name, version) + "/evals")
        return TypeAdapter(list[s.EvalResultOut]).validate_python(data)

    def push_eval_result(self, spec: str, result: s.EvalResultIn) -> s.EvalResultOut:
        """Record an eval result for ``OWNER/NAME@VERSION`` (pinned to its wheel's sha256)."""
        owner, name, version = parse_spec(spec, need_version=True)
        assert version is not None
        path = self._version_path(owner, name, version) + "/evals"
        data = self.request("POST", path, auth=True, json=result.model_dump(mode="json"))
        return s.EvalResultOut.model_validate(data)


def editable_source(distribution: str) -> str | None:
    """The directory ``distribution`` is installed from in editable mode (``pip install -e``),
    if it is (PEP 610 ``direct_url.json``)."""
    import json
    from importlib import metadata
    from urllib.parse import unquote, urlparse

    try:
        text = metadata.distribution(distribution).read_text("direct_url.json")
        info = json.loads(text or "{}")
    except (metadata.PackageNotFoundError, ValueError):
        return None
    if not isinstance(info, dict) or not (info.get("dir_info") or {}).get("editable"):
        return None
    url = str(info.get("url") or "")
    return unquote(urlparse(url).path) if url.startswith("file:") else url or None
