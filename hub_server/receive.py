"""Receive a twine/uv-style multipart upload as a stream: digests and the size limit are
applied while the bytes arrive, before anything is parsed or stored."""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass, field
from typing import IO, Any

from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.requests import Request

from hub_server.errors import BadRequest, TooLarge

FILE_FIELDS = ("content", "file")
_FIELD_LIMIT = 64 * 1024
_FIELDS_TOTAL_LIMIT = 1024 * 1024  # all non-file parts together (twine sends a few KiB)
_SPOOL = 1024 * 1024


@dataclass
class Received:
    fields: dict[str, str] = field(default_factory=dict)
    file: IO[bytes] | None = None
    filename: str | None = None
    size: int = 0
    sha256: str = ""
    md5: str = ""
    blake2_256: str = ""

    def close(self) -> None:
        if self.file is not None:
            self.file.close()

    def check_claims(self) -> None:
        """Digests the client sent (twine sends all three) must match the received bytes."""
        for key, actual in (
            ("sha256_digest", self.sha256),
            ("md5_digest", self.md5),
            ("blake2_256_digest", self.blake2_256),
        ):
            claimed = self.fields.get(key, "").strip().lower()
            if claimed and claimed != actual:
                raise BadRequest(
                    f"the upload's {key} ({claimed}) does not match the received bytes "
                    f"({actual}): the file was corrupted in transit; upload again"
                )


class _Parser:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.out = Received()
        self._headers: dict[str, str] = {}
        self._hname = b""
        self._hvalue = b""
        self._name = ""
        self._is_file = False
        self._buf = bytearray()
        self._hashes: list[Any] = []
        self._field_bytes = 0

    def callbacks(self) -> dict[str, Any]:
        return {
            "on_part_begin": self.on_part_begin,
            "on_part_data": self.on_part_data,
            "on_part_end": self.on_part_end,
            "on_header_field": self.on_header_field,
            "on_header_value": self.on_header_value,
            "on_header_end": self.on_header_end,
            "on_headers_finished": self.on_headers_finished,
        }

    def on_part_begin(self) -> None:
        self._headers = {}
        self._buf = bytearray()
        self._is_file = False

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._hname += data[start:end]  # python-multipart bounds a part's header size

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._hvalue += data[start:end]

    def on_header_end(self) -> None:
        self._headers[self._hname.decode("latin-1").lower()] = self._hvalue.decode("latin-1")
        self._count(len(self._hname) + len(self._hvalue))
        self._hname = self._hvalue = b""

    def _count(self, n: int) -> None:
        """Bound everything that is not the file: part headers and form fields."""
        self._field_bytes += n
        if self._field_bytes > _FIELDS_TOTAL_LIMIT:
            raise BadRequest(
                f"the upload's form fields and part headers exceed {_FIELDS_TOTAL_LIMIT} bytes"
            )

    def on_headers_finished(self) -> None:
        _, params = parse_options_header(self._headers.get("content-disposition", ""))
        self._name = params.get(b"name", b"").decode("utf-8", "replace")
        filename = params.get(b"filename")
        if filename is not None and self._name in FILE_FIELDS:
            if self.out.file is not None:
                raise BadRequest("send one file per upload request")
            self._is_file = True
            self.out.filename = filename.decode("utf-8", "replace")
            self.out.file = tempfile.SpooledTemporaryFile(max_size=_SPOOL)
            self._hashes = [hashlib.sha256(), hashlib.md5(), hashlib.blake2b(digest_size=32)]

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        chunk = data[start:end]
        if self._is_file:
            self.out.size += len(chunk)
            if self.out.size > self.limit:
                raise TooLarge(f"upload is over the limit of {self.limit} bytes")
            for h in self._hashes:
                h.update(chunk)
            assert self.out.file is not None
            self.out.file.write(chunk)
        else:
            self._buf += chunk
            if len(self._buf) > _FIELD_LIMIT:
                raise BadRequest(f"form field {self._name!r} is too long")
            self._count(len(chunk))

    def on_part_end(self) -> None:
        if self._is_file:
            sha, md5, blake = self._hashes
            self.out.sha256, self.out.md5, self.out.blake2_256 = (
                sha.hexdigest(),
                md5.hexdigest(),
                blake.hexdigest(),
            )
        elif self._name:
            self.out.fields[self._name] = self._buf.decode("utf-8", "replace")


async def receive_upload(request: Request, limit: int) -> Received:
    ctype, params = parse_options_header(request.headers.get("content-type", ""))
    boundary = params.get(b"boundary")
    if ctype != b"multipart/form-data" or not boundary:
        raise BadRequest("send the upload as multipart/form-data (as twine and uv publish do)")
    state = _Parser(limit)
    parser = MultipartParser(boundary, state.callbacks())  # type: ignore[arg-type]
    try:
        async for chunk in request.stream():
            parser.write(chunk)
        parser.finalize()
    except (BadRequest, TooLarge):
        state.out.close()
        raise
    except Exception as e:  # malformed multipart
        state.out.close()
        raise BadRequest(f"malformed multipart upload ({e})") from None
    out = state.out
    if out.file is None or not out.filename:
        raise BadRequest("the upload has no file: send it in the 'content' form field")
    out.file.seek(0)
    return out
