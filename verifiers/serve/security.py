"""Security of the env servers (classic :mod:`verifiers.serve` and :mod:`verifiers.v1.serve`):
who may talk to them, which secrets their model calls may use, and how big a request may be.

- **Authentication** (:class:`ServeAuth`): ZeroMQ CURVE. A server accepts only clients whose
  public key it authorises (a ZAP handler); a client must know the server's public key.
  Keys come from, in order: an explicit ``keys_dir=``, ``VF_SERVE_KEYS_DIR``, the
  ``VF_SERVE_SECRET_KEY`` / ``VF_SERVE_SERVER_KEY`` / ``VF_SERVE_CLIENT_KEYS`` variables, or
  else the per-user key pair (``$XDG_CONFIG_HOME/verifiers/serve/user.key_secret``, created
  atomically with mode 0600 on first use): a server and a client of the same user then trust
  each other with no configuration, other users and hosts are refused. Where libzmq lacks
  CURVE, every message carries an HMAC-SHA256 of its frames under a shared secret instead.
  ``insecure=True`` serves without authentication (and logs a warning).
- **Endpoint policy** (:class:`ServeAllow`): a request may name a client type, a model,
  sampling arguments and an endpoint the server allows; the server's secrets (API key
  variables, environment headers) go only where the server's own configuration says.
- **Bounded input** (:class:`Limits`, :func:`bounded_unpack`): a socket message-size limit
  and a count/depth limit on every decoded request.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import os
import secrets
import stat
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import zmq

from verifiers.serve.guards import (
    ClientLRU,
    Limits,
    PayloadError,
    Peers,
    ServeAllow,
    bounded_unpack,
    drain_monitor,
    watch_disconnects,
)

__all__ = [
    "ClientLRU",
    "Limits",
    "PayloadError",
    "Peers",
    "ServeAllow",
    "ServeAuth",
    "bounded_unpack",
    "default_keys_path",
    "drain_monitor",
    "generate_keys",
    "user_keys",
    "watch_disconnects",
]

logger = logging.getLogger("verifiers.serve.security")

SECRET_SUFFIX = ".key_secret"
PUBLIC_SUFFIX = ".key"
USER_KEY = "user"
HMAC_SIZE = 32

# ---------------------------------------------------------------------------------- keys


def config_dir() -> Path:
    """``$XDG_CONFIG_HOME/verifiers/serve`` (``~/.config/verifiers/serve`` by default)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "verifiers" / "serve"


def default_keys_path() -> Path:
    """The per-user key file both ends read when nothing else is configured."""
    return config_dir() / (USER_KEY + SECRET_SUFFIX)


def _cert_text(public: bytes, secret: bytes | None, shared: bytes | None) -> str:
    lines = ["#   verifiers env-server key (ZeroMQ CURVE certificate)", "metadata", "curve"]
    lines.append(f'    public-key = "{public.decode()}"')
    if secret is not None:
        lines.append(f'    secret-key = "{secret.decode()}"')
    if shared is not None:
        lines.append(f'    shared-secret = "{shared.hex()}"')
    return "\n".join(lines) + "\n"


def _read_cert(path: Path, *, secret: bool) -> dict[str, bytes]:
    try:
        info = path.stat()
    except FileNotFoundError:
        raise PermissionError(f"no key file at {path}; create it with `vf serve keygen`") from None
    if secret and info.st_mode & 0o077:
        raise PermissionError(
            f"the secret key file {path} is readable by others (mode "
            f"{stat.S_IMODE(info.st_mode):o}); run `chmod 600 {path}`"
        )
    out: dict[str, bytes] = {}
    for line in path.read_text().splitlines():
        name, sep, value = line.strip().partition("=")
        if sep and name.strip() in ("public-key", "secret-key", "shared-secret"):
            out[name.strip()] = value.strip().strip('"').encode()
    if "public-key" not in out or (secret and "secret-key" not in out):
        raise PermissionError(f"{path} is not a verifiers/ZeroMQ key file")
    return out


def _write_exclusive(path: Path, text: str, mode: int) -> bool:
    """Write ``path`` atomically if it does not exist; False when another process won."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)  # atomic, fails when the file exists: racing creators agree
            return True
        except FileExistsError:
            return False
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _new_pair() -> tuple[bytes, bytes]:
    public, secret = zmq.curve_keypair()
    return public, secret


def user_keys(create: bool = True) -> tuple[bytes, bytes, bytes]:
    """The per-user (public, secret, shared secret), created on first use."""
    path = default_keys_path()
    if not path.exists() and create:
        public, secret = _new_pair()
        if _write_exclusive(path, _cert_text(public, secret, secrets.token_bytes(32)), 0o600):
            logger.info("created the per-user env-server key %s", path)
    cert = _read_cert(path, secret=True)
    shared = bytes.fromhex(cert["shared-secret"].decode()) if "shared-secret" in cert else b""
    return cert["public-key"], cert["secret-key"], shared


def generate_keys(directory: Path, force: bool = False) -> dict[str, Path]:
    """Write a server and a client key pair (``server.key_secret``, ``server.key``,
    ``client.key_secret``, ``client.key``) and a shared secret into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    shared = secrets.token_bytes(32)
    written: dict[str, Path] = {}
    for role in ("server", "client"):
        public, secret = _new_pair()
        for suffix, text, mode in (
            (SECRET_SUFFIX, _cert_text(public, secret, shared), 0o600),
            (PUBLIC_SUFFIX, _cert_text(public, None, None), 0o644),
        ):
            path = directory / (role + suffix)
            if path.exists():
                if not force:
                    raise FileExistsError(f"{path} exists; pass --force to replace it")
                path.unlink()
            if not _write_exclusive(path, text, mode):
                raise FileExistsError(f"{path} was created concurrently")
            written[role + suffix] = path
    return written


@dataclass(frozen=True)
class ServeAuth:
    """How one end of an env-server connection authenticates (see the module docstring).

    ``mode``: ``curve`` (default where libzmq has it), ``hmac`` (a shared secret signing
    every message) or ``insecure``. A server uses ``public``/``secret`` as its key pair and
    accepts the clients in ``authorized``; a client uses its pair and ``server_public``.
    """

    mode: Literal["curve", "hmac", "insecure"]
    public: bytes = b""
    secret: bytes = b""
    server_public: bytes = b""
    authorized: frozenset[bytes] = frozenset()
    shared_secret: bytes = b""
    source: str = ""

    @classmethod
    def resolve(
        cls,
        role: Literal["server", "client"],
        *,
        keys_dir: str | os.PathLike[str] | None = None,
        insecure: bool = False,
        mode: str | None = None,
    ) -> ServeAuth:
        """The configuration of this end (the order is the module docstring's)."""
        if insecure:
            return cls(mode="insecure", source="insecure=True")
        chosen = (
            mode or os.environ.get("VF_SERVE_AUTH") or ("curve" if zmq.has("curve") else "hmac")
        )
        if chosen not in ("curve", "hmac"):
            raise ValueError(f"VF_SERVE_AUTH must be 'curve' or 'hmac', got {chosen!r}")
        if chosen == "curve" and not zmq.has("curve"):
            chosen = "hmac"
        directory = keys_dir or os.environ.get("VF_SERVE_KEYS_DIR")
        if directory:
            return cls._from_dir(role, Path(directory), chosen)
        env_secret = os.environ.get("VF_SERVE_SECRET_KEY")
        if env_secret:
            secret = env_secret.encode()
            public = zmq.curve_public(secret)
            shared = bytes.fromhex(os.environ.get("VF_SERVE_SHARED_SECRET", ""))
            server_public = os.environ.get("VF_SERVE_SERVER_KEY", "").encode() or public
            allowed = {
                k.strip().encode()
                for k in os.environ.get("VF_SERVE_CLIENT_KEYS", "").split(",")
                if k.strip()
            }
            return cls(
                mode=chosen,  # type: ignore[arg-type]
                public=public,
                secret=secret,
                server_public=server_public,
                authorized=frozenset(allowed or {public}),
                shared_secret=shared,
                source="VF_SERVE_SECRET_KEY",
            )
        public, secret, shared = user_keys()
        return cls(
            mode=chosen,  # type: ignore[arg-type]
            public=public,
            secret=secret,
            server_public=public,
            authorized=frozenset({public}),
            shared_secret=shared,
            source=str(default_keys_path()),
        )

    @classmethod
    def _from_dir(cls, role: str, directory: Path, mode: str) -> ServeAuth:
        own = _read_cert(directory / (role + SECRET_SUFFIX), secret=True)
        shared = bytes.fromhex(own["shared-secret"].decode()) if "shared-secret" in own else b""
        server_public = b""
        authorized: set[bytes] = set()
        if role == "client":
            server_public = _read_cert(directory / ("server" + PUBLIC_SUFFIX), secret=False)[
                "public-key"
            ]
        else:
            paths = [directory / ("client" + PUBLIC_SUFFIX)]
            extra = directory / "authorized_clients"
            if extra.is_dir():
                paths += sorted(extra.glob("*" + PUBLIC_SUFFIX))
            authorized = {_read_cert(p, secret=False)["public-key"] for p in paths if p.exists()}
        return cls(
            mode=mode,  # type: ignore[arg-type]
            public=own["public-key"],
            secret=own["secret-key"],
            server_public=server_public,
            authorized=frozenset(authorized),
            shared_secret=shared,
            source=str(directory),
        )

    # -------------------------------------------------------------- sockets

    def secure_server(self, ctx: zmq.Context[Any], sock: zmq.Socket[Any]) -> _Gate | None:
        """Make ``sock`` (not yet bound) refuse unauthenticated clients; the ZAP handler it
        needs (stop it with the context). None in ``insecure`` mode."""
        if self.mode == "insecure":
            logger.warning(
                "the env server runs WITHOUT authentication (insecure=True): anyone who can "
                "reach its address can run requests on it"
            )
            return None
        if self.mode == "hmac":
            if not self.shared_secret:
                raise PermissionError(f"no shared secret for HMAC authentication in {self.source}")
            return None
        gate = _Gate(ctx, self.authorized)
        sock.setsockopt(zmq.CURVE_SERVER, 1)
        sock.setsockopt(zmq.CURVE_SECRETKEY, self.secret)
        sock.setsockopt(zmq.CURVE_PUBLICKEY, self.public)
        return gate

    def secure_client(self, sock: zmq.Socket[Any]) -> None:
        """Make ``sock`` (not yet connected) present this end's key to the server."""
        if self.mode == "curve":
            sock.setsockopt(zmq.CURVE_SERVERKEY, self.server_public)
            sock.setsockopt(zmq.CURVE_PUBLICKEY, self.public)
            sock.setsockopt(zmq.CURVE_SECRETKEY, self.secret)
        elif self.mode == "hmac" and not self.shared_secret:
            raise PermissionError(f"no shared secret for HMAC authentication in {self.source}")

    # -------------------------------------------------------------- HMAC fallback

    @property
    def signs(self) -> bool:
        return self.mode == "hmac"

    def sign(self, frames: Iterable[bytes]) -> bytes:
        mac = hmac.new(self.shared_secret, digestmod=hashlib.sha256)
        for f in frames:
            mac.update(len(f).to_bytes(8, "big"))
            mac.update(f)
        return mac.digest()

    def verify(self, mac: bytes, frames: Iterable[bytes]) -> bool:
        return hmac.compare_digest(mac, self.sign(frames))

    def seal_frames(self, frames: list[bytes], routed: bool = True) -> list[bytes]:
        """``frames`` as sent: with HMAC, the signature follows the routing id (``routed``,
        a ROUTER's send) or leads (a DEALER's)."""
        if not self.signs:
            return frames
        if routed:
            return [frames[0], self.sign(frames[1:]), *frames[1:]]
        return [self.sign(frames), *frames]

    def open_frames(
        self, frames: list[bytes], stats: dict[str, int] | None = None, routed: bool = True
    ) -> list[bytes]:
        """``frames`` as received, the signature checked and removed (``[]`` when it does
        not verify: the message is dropped)."""
        if not self.signs:
            return frames
        at = 1 if routed else 0
        if len(frames) < at + 2 or not self.verify(frames[at], frames[at + 1 :]):
            if stats is not None:
                stats["refused"] = stats.get("refused", 0) + 1
            logger.warning("dropped a message without a valid signature")
            return []
        return [*frames[:at], *frames[at + 1 :]]


class _Gate:
    """A ZAP handler (a thread) admitting the CURVE clients whose keys are authorised; it
    counts the refusals (``refused``)."""

    def __init__(self, ctx: zmq.Context[Any], authorized: frozenset[bytes]) -> None:
        from zmq.auth.thread import ThreadAuthenticator

        self.authorized = authorized
        self.refused = 0
        self._lock = threading.Lock()
        self._auth = ThreadAuthenticator(zmq.Context.shadow(ctx.underlying), log=logger)
        self._auth.start()
        self._auth.configure_curve_callback(domain="*", credentials_provider=self)

    def callback(self, domain: str, key: bytes) -> bool:
        ok = key in self.authorized
        if not ok:
            with self._lock:
                self.refused += 1
            logger.warning("refused an env-server client with an unknown CURVE key")
        return ok

    def stop(self) -> None:
        self._auth.stop()
