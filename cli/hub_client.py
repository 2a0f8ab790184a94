"""A small synchronous client of the hub's JSON API, used by the ``vf`` commands."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, TypeAdapter

from cli._common import CLIError
from cli.hub_config import HubTarget, hub_target
from verifiers.hub import schemas as s

M = TypeVar("M", bound=BaseModel)


class HubClient:
    def __init__(self, target: HubTarget | None = None, timeout: float = 120.0) -> None:
        self.target = target or hub_target()
        self.url = self.target.url
        self.token = self.target.token
        self.timeout = timeout

    # ------------------------------------------------------------------ plumbing

    def _headers(self, auth: bool) -> dict[str, str]:
        if auth and not self.token:
            raise CLIError(
                f"no hub token configured for {self.url}",
                "log in with `vf login --url URL --token TOKEN` or set VF_HUB_TOKEN",
            )
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def request(self, method: str, path: str, *, auth: bool = False, **kw: Any) -> Any:
        try:
            resp = httpx.request(
                method,
                f"{self.url}{path}",
                headers=self._headers(auth),
                timeout=self.timeout,
                **kw,
            )
        except httpx.HTTPError as e:
            raise CLIError(
                f"cannot reach the hub at {self.url} ({type(e).__name__}: {e})",
                "start one with `vf hub serve`, or point at yours with `vf login --url URL` "
                "or VF_HUB_URL",
            ) from None
        if resp.status_code >= 400:
            raise self._error(resp)
        return resp.json() if resp.content else None

    def _error(self, resp: httpx.Response) -> CLIError:
        try:
            message = str(resp.json()["message"])
        except Exception:
            message = resp.text.strip()[:300] or resp.reason_phrase
        hint = None
        if resp.status_code == 401 and "vf login" not in message:
            hint = "log in with `vf login --url URL --token TOKEN` (or set VF_HUB_TOKEN)"
        return CLIError(f"hub: {message} (HTTP {resp.status_code})", hint)

    def _get(self, model: type[M], path: str, **kw: Any) -> M:
        return model.model_validate(self.request("GET", path, **kw))

    # ------------------------------------------------------------------ API

    def whoami(self) -> s.WhoAmI:
        return self._get(s.WhoAmI, "/api/v1/whoami", auth=True)

    def create_token(self, body: s.TokenCreate) -> s.TokenCreated:
        data = self.request("POST", "/api/v1/tokens", auth=True, json=body.model_dump())
        return s.TokenCreated.model_validate(data)

    def list_tokens(self) -> list[s.TokenOut]:
        data = self.request("GET", "/api/v1/tokens", auth=True)
        return TypeAdapter(list[s.TokenOut]).validate_python(data)

    def revoke_token(self, token_id: int) -> s.TokenOut:
        return s.TokenOut.model_validate(
            self.request("DELETE", f"/api/v1/tokens/{token_id}", auth=True)
        )

    def upload(self, wheel: Path, *, owner: str | None, private: bool) -> s.UploadResult:
        fields = {":action": "file_upload", "protocol_version": "1"}
        if owner:
            fields["owner"] = owner
        if private:
            fields["private"] = "true"
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

    def list_projects(
        self,
        *,
        query: str | None = None,
        owner: str | None = None,
        tag: str | None = None,
        page: int = 1,
        per_page: int = 20,
    ) -> s.ProjectList:
        params: dict[str, str | int] = {"page": page, "per_page": per_page}
        for k, v in (("q", query), ("owner", owner), ("tag", tag)):
            if v:
                params[k] = v
        return self._get(s.ProjectList, "/api/v1/projects", params=params)

    def set_yanked(
        self, owner: str, name: str, version: str, yanked: bool, reason: str | None = None
    ) -> s.ReleaseOut:
        path = f"/api/v1/projects/{quote(owner)}/{quote(name)}/versions/{quote(version)}/"
        if yanked:
            data = self.request("POST", path + "yank", auth=True, json={"reason": reason})
        else:
            data = self.request("POST", path + "unyank", auth=True)
        return s.ReleaseOut.model_validate(data)

    def delete_release(self, owner: str, name: str, version: str) -> list[str]:
        """Delete a release (admins); its filenames stay burned. Returns the deleted files."""
        path = f"/api/v1/projects/{quote(owner)}/{quote(name)}/versions/{quote(version)}"
        data = self.request("DELETE", path, auth=True)
        return list(data.get("deleted", []))

    def index_url(self, owner: str, name: str, *, with_token: bool = True) -> str:
        """The project-scoped simple index (it can never shadow a dependency)."""
        base = self.url
        if with_token and self.token:
            scheme, rest = base.split("://", 1)
            base = f"{scheme}://__token__:{quote(self.token, safe='')}@{rest}"
        return f"{base}/{owner}/{name}/simple/"
