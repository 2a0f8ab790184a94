"""``vf serve keygen``: the per-user key, and a key set in a directory that a server and a
client then use."""

from __future__ import annotations

import stat
from pathlib import Path

from typer.testing import CliRunner

from cli.main import app
from verifiers.serve.security import ServeAuth, default_keys_path


def test_keygen_shows_the_per_user_key_and_writes_a_key_set(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["serve", "keygen"])
    assert result.exit_code == 0, result.output
    assert str(default_keys_path()) in result.output
    public = ServeAuth.resolve("client").public.decode()
    assert public in result.output
    keys = tmp_path / "keys"
    result = runner.invoke(app, ["serve", "keygen", "--dir", str(keys)])
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE((keys / "client.key_secret").stat().st_mode) == 0o600
    server = ServeAuth.resolve("server", keys_dir=keys)
    client = ServeAuth.resolve("client", keys_dir=keys)
    assert client.public in server.authorized and client.server_public == server.public
    again = runner.invoke(app, ["serve", "keygen", "--dir", str(keys)])
    assert again.exit_code == 1 and "--force" in again.output
    assert runner.invoke(app, ["serve", "keygen", "--dir", str(keys), "--force"]).exit_code == 0
    assert ServeAuth.resolve("server", keys_dir=keys).public != server.public
