"""The env servers' guards on requests (re-exported by :mod:`verifiers.serve.security`):
:class:`ServeAllow` (which endpoints and secrets a request may use), :class:`Limits` and
:func:`bounded_unpack` (bounded decoding), :class:`Peers` (cancelling a disconnected client's
work) and :class:`ClientLRU` (a bounded model-client cache)."""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import urlsplit

import msgpack
import zmq

__all__ = [
    "ClientLRU",
    "Limits",
    "PayloadError",
    "Peers",
    "ServeAllow",
    "bounded_unpack",
    "drain_monitor",
    "watch_disconnects",
]

logger = logging.getLogger("verifiers.serve.security")


# ---------------------------------------------------------------------------------- peers


class Peers:
    """Which connection (file descriptor, ``zmq.SRCFD``) each ROUTER peer came in on and
    the requests it has in flight, so a disconnect (the socket monitor's
    ``EVENT_DISCONNECTED``, whose value is that descriptor) cancels them."""

    def __init__(self) -> None:
        self.fd_of: dict[bytes, int] = {}
        self.on_fd: dict[int, set[bytes]] = {}
        self.requests: dict[bytes, set[bytes]] = {}
        self.pending_disconnects: list[int] = []

    def seen(self, cid: bytes, fd: int, monitor: Any = None, on_disconnect: Any = None) -> None:
        if self.fd_of.get(cid) == fd:
            return
        if fd in self.on_fd and monitor is not None:
            # a new connection reusing a closed one's descriptor: the close was reported
            # on the monitor before this connection existed; handle it first
            drain_monitor(monitor, on_disconnect)
        self.fd_of[cid] = fd
        self.on_fd.setdefault(fd, set()).add(cid)

    def add(self, cid: bytes, rid: bytes) -> None:
        self.requests.setdefault(cid, set()).add(rid)

    def done(self, cid: bytes, rid: bytes) -> None:
        rids = self.requests.get(cid)
        if rids is not None:
            rids.discard(rid)
            if not rids:
                del self.requests[cid]

    def disconnected(self, fd: int) -> list[tuple[bytes, set[bytes]]]:
        out = []
        for cid in self.on_fd.pop(fd, set()):
            self.fd_of.pop(cid, None)
            out.append((cid, self.requests.pop(cid, set())))
        return out


def drain_monitor(monitor: Any, on_disconnect: Callable[[int], None]) -> None:
    """Handle the monitor events already queued (without waiting)."""
    from zmq.utils.monitor import parse_monitor_message

    sync: zmq.Socket[bytes] = zmq.Socket.shadow(monitor.underlying)
    while True:
        try:
            msg = parse_monitor_message(sync.recv_multipart(zmq.NOBLOCK))
        except zmq.Again:
            return
        if msg["event"] == zmq.EVENT_DISCONNECTED:
            on_disconnect(int(msg["value"]))


async def watch_disconnects(monitor: Any, on_disconnect: Callable[[int], None]) -> None:
    """Call ``on_disconnect(fd)`` for each ``EVENT_DISCONNECTED`` on an asyncio monitor
    socket, until cancelled."""
    from zmq.utils.monitor import parse_monitor_message

    while True:
        msg = parse_monitor_message(await monitor.recv_multipart())
        if msg["event"] == zmq.EVENT_DISCONNECTED:
            try:
                on_disconnect(int(msg["value"]))
            except Exception:
                logger.warning("handling a disconnect failed", exc_info=True)


# ---------------------------------------------------------------------------------- policy


def _norm_url(url: str) -> str:
    parts = urlsplit(url.strip())
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{parts.path.rstrip('/')}"


def _is_loopback(url: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return False
    host = (parts.hostname or "").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _holds_secret(var: str) -> bool:
    """Whether the key variable ``var`` is a secret of this process (set, or PRIME_API_KEY
    with a key in ``~/.prime/config.json``)."""
    if os.environ.get(var):
        return True
    if var == "PRIME_API_KEY":
        from verifiers.utils.client_utils import load_prime_config

        return bool(load_prime_config().get("api_key"))
    return False


@dataclass(frozen=True)
class ServeAllow:
    """Which endpoints and secrets a server's model calls may use (its own configuration).

    - ``endpoints``: ``{base URL: key variable or None}``; a URL ending in ``*`` is a prefix.
      The server sends the key of that variable only to these URLs.
    - ``loopback``: a request may name an ``http(s)`` URL on this host (``localhost``,
      127.0.0.0/8, ``::1``: a trainer's own inference server) with a key variable that
      holds no secret here (unset: the key sent is ``EMPTY``).
    - ``headers``: header names a request may set to values of its own.
    - ``headers_from_env``: header -> variable mappings a request may ask for.

    Also read from ``VF_SERVE_ALLOW`` (``URL=VAR,URL=VAR``; ``URL`` alone for no key),
    ``VF_SERVE_ALLOW_HEADERS`` (names, comma-separated) by :meth:`from_env`.
    """

    endpoints: Mapping[str, str | None] = field(default_factory=dict)
    loopback: bool = True
    headers: frozenset[str] = frozenset({"x-data-parallel-rank"})
    headers_from_env: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_env(cls, base: ServeAllow | Mapping[str, Any] | None = None) -> ServeAllow:
        if isinstance(base, Mapping):
            base = cls(**base)
        base = base or cls()
        endpoints = dict(base.endpoints)
        for item in os.environ.get("VF_SERVE_ALLOW", "").split(","):
            url, _, var = item.strip().partition("=")
            if url:
                endpoints[url] = var or None
        headers = set(base.headers) | {
            h.strip().lower()
            for h in os.environ.get("VF_SERVE_ALLOW_HEADERS", "").split(",")
            if h.strip()
        }
        return cls(
            endpoints=endpoints,
            loopback=base.loopback,
            headers=frozenset(h.lower() for h in headers),
            headers_from_env=dict(base.headers_from_env),
        )

    def _endpoint_vars(self, url: str) -> list[str | None] | None:
        norm = _norm_url(url)
        found: list[str | None] = []
        for pattern, var in self.endpoints.items():
            if pattern.endswith("*"):
                if norm.startswith(_norm_url(pattern[:-1]) if "://" in pattern else pattern[:-1]):
                    found.append(var)
            elif norm == _norm_url(pattern):
                found.append(var)
        return found or None

    def check_endpoint(
        self,
        *,
        url: str,
        key_var: str,
        headers: Mapping[str, Any],
        headers_from_env: Mapping[str, Any],
        where: str,
    ) -> str | None:
        """Why a request may not use this endpoint (None when it may)."""
        fix = (
            "the env server decides which endpoints and secrets its model calls use; start it "
            "with allow=ServeAllow(...) or VF_SERVE_ALLOW='URL=KEY_VAR' to allow this"
        )
        allowed_vars = self._endpoint_vars(url)
        if allowed_vars is None and not (self.loopback and _is_loopback(url)):
            return f"{where}: the base URL {url!r} is not one this server allows; {fix}"
        if _holds_secret(key_var) and key_var not in (allowed_vars or []):
            return (
                f"{where}: api_key_var {key_var!r} names a secret of the server that it does "
                f"not send to {url!r}; {fix}"
            )
        for name in headers:
            if str(name).lower() not in self.headers:
                return (
                    f"{where}: the header {name!r} is not one this server lets a request set; {fix}"
                )
        for name, var in headers_from_env.items():
            if self.headers_from_env.get(name) != var:
                return (
                    f"{where}: headers_from_env asks for {name!r} from the server's variable "
                    f"{var!r}; a request cannot read the server's environment; {fix}"
                )
        return None

    _CLASSIC_FIELDS = frozenset(
        "client_idx client_type api_key_var api_base_url timeout connect_timeout max_connections "
        "max_keepalive_connections max_retries extra_headers extra_headers_from_state "
        "renderer_config renderer_model_name renderer_pool_size endpoint_configs".split()
    )

    def check_classic(self, config: Any) -> str | None:
        """Why a classic request's ``client_config`` map is refused (None: allowed)."""
        if not isinstance(config, Mapping):
            return "client_config must be a map"
        endpoints = config.get("endpoint_configs") or []
        if not isinstance(endpoints, list):
            return "client_config.endpoint_configs must be a list"
        for where, cfg in [("client_config", config)] + [
            (f"client_config.endpoint_configs[{i}]", e) for i, e in enumerate(endpoints)
        ]:
            if not isinstance(cfg, Mapping):
                return f"{where} must be a map"
            unknown = sorted(str(k) for k in cfg if k not in self._CLASSIC_FIELDS)
            if unknown:
                return f"{where}: unknown field(s) {unknown}; a request may not add fields"
            if where != "client_config" and not any(
                k in cfg for k in ("api_base_url", "api_key_var", "extra_headers")
            ):
                continue
            error = self.check_endpoint(
                url=str(
                    cfg.get("api_base_url", config.get("api_base_url", "https://api.openai.com/v1"))
                ),
                key_var=str(cfg.get("api_key_var", config.get("api_key_var", "OPENAI_API_KEY"))),
                headers=cfg.get("extra_headers") or {},
                headers_from_env={},
                where=where,
            )
            if error:
                return error
        return None

    def check_v1(self, config: Any) -> str | None:
        """Why a v1 run request's ``client`` map is refused (None: allowed)."""
        if not isinstance(config, Mapping):
            return "client must be a map"
        return self.check_endpoint(
            url=str(config.get("base_url", "https://api.openai.com/v1")),
            key_var=str(config.get("api_key_var", "OPENAI_API_KEY")),
            headers=config.get("headers") or {},
            headers_from_env=config.get("headers_from_env") or {},
            where="client",
        )


# ---------------------------------------------------------------------------------- limits


class PayloadError(ValueError):
    """A request over the server's limits, or not a msgpack value."""


@dataclass(frozen=True)
class Limits:
    """Bounds on what a server accepts: ``max_message_bytes`` per frame (the socket's
    ``MAXMSGSIZE``: a bigger message drops the connection), and per decoded request at most
    ``max_items`` container elements, ``max_depth`` nesting levels."""

    max_message_bytes: int = 64 * 1024 * 1024
    max_items: int = 1_000_000
    max_depth: int = 64

    @classmethod
    def from_env(cls) -> Limits:
        raw = os.environ.get("VF_SERVE_MAX_MESSAGE_BYTES")
        return cls(max_message_bytes=int(raw)) if raw else cls()


def bounded_unpack(data: bytes | memoryview, limits: Limits) -> Any:
    """Decode a request, refusing (:class:`PayloadError`) one over ``limits`` before it can
    take more than about ``max_items`` small objects of memory."""
    if len(data) > limits.max_message_bytes:
        raise PayloadError(
            f"the request is {len(data)} bytes; the limit is {limits.max_message_bytes}"
        )
    budget = [limits.max_items]

    def count(obj: Any) -> Any:
        budget[0] -= len(obj) + 1
        if budget[0] < 0:
            raise PayloadError(f"the request has more than {limits.max_items} elements")
        return obj

    cap = min(limits.max_items, len(data))
    try:
        value = msgpack.unpackb(
            data,
            raw=False,
            strict_map_key=False,
            list_hook=count,
            object_hook=count,
            max_array_len=cap,
            max_map_len=cap,
            max_str_len=len(data),
            max_bin_len=len(data),
            max_ext_len=0,
        )
    except PayloadError:
        raise
    except msgpack.StackError:
        raise PayloadError(f"the request nests deeper than {limits.max_depth} levels") from None
    except ValueError as e:
        if "exceeds max_" not in str(e):
            raise PayloadError(f"the request is not a msgpack value: {e}") from None
        raise PayloadError(f"the request has more than {limits.max_items} elements ({e})") from None
    except Exception as e:
        raise PayloadError(f"the request is not a msgpack value: {type(e).__name__}: {e}") from None
    _check_depth(value, limits.max_depth)
    return value


def _check_depth(value: Any, max_depth: int) -> None:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        obj, depth = stack.pop()
        if depth > max_depth:
            raise PayloadError(f"the request nests deeper than {max_depth} levels")
        if isinstance(obj, dict):
            stack.extend((v, depth + 1) for v in obj.values() if isinstance(v, (dict, list)))
        elif isinstance(obj, list):
            stack.extend((v, depth + 1) for v in obj if isinstance(v, (dict, list)))


# ---------------------------------------------------------------------------------- caches

C = TypeVar("C")


class ClientLRU(Generic[C]):
    """At most ``size`` model clients, least recently used evicted; an evicted client is
    closed once no request holds it (:meth:`acquire` / :meth:`release`)."""

    def __init__(self, size: int = 32) -> None:
        self.size = size
        self._items: OrderedDict[bytes, C] = OrderedDict()
        self._holders: dict[int, int] = {}
        self._evicted: dict[int, C] = {}
        self.closing: set[Any] = set()

    def __len__(self) -> int:
        return len(self._items)

    def acquire(self, key: bytes, build: Callable[[], C]) -> C:
        item = self._items.get(key)
        if item is None:
            item = self._items[key] = build()
            while len(self._items) > self.size:
                _, old = self._items.popitem(last=False)
                self._evicted[id(old)] = old
                if not self._holders.get(id(old)):
                    self._close(old)
        else:
            self._items.move_to_end(key)
        self._holders[id(item)] = self._holders.get(id(item), 0) + 1
        return item

    def release(self, item: C) -> None:
        left = self._holders.get(id(item), 1) - 1
        if left > 0:
            self._holders[id(item)] = left
            return
        self._holders.pop(id(item), None)
        if id(item) in self._evicted:
            self._close(item)

    def _close(self, item: C) -> None:
        import asyncio

        self._evicted.pop(id(item), None)
        close = getattr(item, "close", None)
        if close is None:
            return
        with contextlib.suppress(RuntimeError):
            task = asyncio.get_running_loop().create_task(close())
            self.closing.add(task)
            task.add_done_callback(self.closing.discard)

    async def close(self) -> None:
        items = list(self._items.values()) + list(self._evicted.values())
        self._items.clear()
        self._evicted.clear()
        for item in items:
            with contextlib.suppress(Exception):
                await item.close()  # type: ignore[attr-defined]
