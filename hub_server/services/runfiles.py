"""A pushed run's bytes: the gzip stream (``metadata.json`` on the first line, then
``results.jsonl``) unpacked with bounded memory, and the local cache the pages read from."""

from __future__ import annotations

import contextlib
import hashlib
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from hub_server.boundedjson import read_bounded
from hub_server.errors import BadRequest, TooLarge
from hub_server.privatefs import open_private, private_dir
from verifiers.results import METADATA_FILE, RESULTS_FILE

MAX_METADATA_BYTES = 1024 * 1024
_CHUNK = 1024 * 1024
RAW_FILE = "raw.jsonl"  # the pushed lines, where any was too long to show whole
RAW_MAP = "raw.json"  # offset of a shortened line in results.jsonl -> [offset, length] in raw
SHORT_LINE = 256 * 1024  # longer records are shown shortened (read in bounded memory)
SLACK = 1024 * 1024  # the ratio limit applies above this many bytes (as for wheels)


def run_key(sha256: str) -> str:
    return f"runs/{sha256[:2]}/{sha256}.jsonl.gz"


@dataclass
class Unpacked:
    metadata: dict[str, Any]
    dir: Path  # holds results.jsonl (shown), metadata.json and, for long records, raw.jsonl
    stream_sha256: str  # of the uncompressed stream (its blob key)
    content_sha256: str  # of the records alone, in any order: identical results, one run
    records: int


def unpack(
    gz: IO[bytes],
    dest: Path,
    max_uncompressed: int,
    *,
    compressed_size: int | None = None,
    max_ratio: float | None = None,
    max_records: int | None = None,
) -> Unpacked:
    """Decompress a pushed run into ``dest``, splitting off the metadata line.

    Bounded while inflating: at most ``max_uncompressed`` bytes, and (given the compressed
    size) at most ``max_ratio`` times the compressed size beyond the first MiB. Then the
    records are copied into ``results.jsonl`` for the pages, each record over
    :data:`SHORT_LINE` bytes parsed in bounded memory and shortened (its original kept in
    ``raw.jsonl`` for download), so reading any one record later costs bounded memory."""
    inflater = zlib.decompressobj(wbits=31)
    digest = hashlib.sha256()
    head = bytearray()
    total = 0
    meta: dict[str, Any] | None = None
    private_dir(dest)
    allowed = max_uncompressed
    if compressed_size is not None and max_ratio is not None:
        allowed = min(allowed, max(SLACK, int(max_ratio * max(compressed_size, 1))))
    raw = dest / RAW_FILE
    with open_private(raw) as out:

        def take(data: bytes) -> None:
            nonlocal total, meta
            total += len(data)
            if total > allowed:
                if allowed < max_uncompressed:
                    raise TooLarge(
                        f"the run expands beyond {allowed} bytes from {compressed_size} "
                        f"compressed (ratio over {max_ratio:g}): refused as a gzip bomb"
                    )
                raise TooLarge(
                    f"the run is over {max_uncompressed} bytes uncompressed; push a smaller run"
                )
            digest.update(data)
            if meta is None:
                head.extend(data)
                nl = head.find(b"\n")
                if nl < 0:
                    if len(head) > MAX_METADATA_BYTES:
                        raise BadRequest("the run's metadata line is over 1 MiB")
                    return
                meta = _parse_metadata(bytes(head[:nl]))
                out.write(head[nl + 1 :])
                head.clear()
            else:
                out.write(data)

        try:
            while chunk := gz.read(_CHUNK):
                while chunk:
                    take(inflater.decompress(chunk, _CHUNK))
                    chunk = inflater.unconsumed_tail
            take(inflater.flush())
        except zlib.error as e:
            raise BadRequest(
                f"the run is not valid gzip ({e}); push it with `vf eval push`"
            ) from None
    if meta is None:
        meta = _parse_metadata(bytes(head))
    with open_private(dest / METADATA_FILE) as f:
        f.write(orjson.dumps(meta))
    content, records = _shown_copy(dest, max_records)
    return Unpacked(meta, dest, digest.hexdigest(), content, records)


def _shown_copy(dest: Path, max_records: int | None) -> tuple[str, int]:
    """Write ``results.jsonl`` from ``raw.jsonl`` (long records shortened, see :func:`unpack`);
    returns the records' content hash and count. ``raw.jsonl`` is kept only when some record
    was shortened."""
    raw_path, shown_path = dest / RAW_FILE, dest / RESULTS_FILE
    hashes: list[bytes] = []
    long_lines: dict[str, list[int]] = {}
    with raw_path.open("rb") as raw, raw_path.open("rb") as reread, open_private(shown_path) as out:
        while True:
            start = raw.tell()
            line = raw.readline(SHORT_LINE + 1)
            if not line:
                break
            if len(line) > SHORT_LINE and not line.endswith(b"\n"):
                h = hashlib.sha256(line)
                ended = False
                while more := raw.readline(_CHUNK):  # the rest of the long line, unkept
                    h.update(more)
                    if more.endswith(b"\n"):
                        ended = True
                        break
                length = raw.tell() - start - ended  # without its newline
                reread.seek(start)
                try:
                    got = read_bounded(reread, length)
                except ValueError:
                    continue  # not a JSON record: skipped, as the index skips such lines
                if not isinstance(got.value, dict):
                    continue
                shown = dict(got.value)
                shown["_shortened"] = {"bytes": length}
                long_lines[str(out.tell())] = [start, length]
                out.write(orjson.dumps(shown) + b"\n")
                hashes.append(h.digest())
            else:
                body = line.strip()
                if not body:
                    continue
                hashes.append(hashlib.sha256(body).digest())
                out.write(body + b"\n")
            if max_records is not None and len(hashes) > max_records:
                raise TooLarge(
                    f"the run has over {max_records} records; push at most that many "
                    "(evaluate fewer examples or rollouts)"
                )
    if long_lines:
        with open_private(dest / RAW_MAP) as f:
            f.write(orjson.dumps(long_lines))
    else:
        raw_path.unlink()
    content = hashlib.sha256(b"".join(sorted(hashes))).hexdigest()
    return content, len(hashes)


def _parse_metadata(line: bytes) -> dict[str, Any]:
    try:
        meta = orjson.loads(line)
    except orjson.JSONDecodeError:
        meta = None
    if not isinstance(meta, dict):
        raise BadRequest("the run's first line must be its metadata.json as a JSON object")
    return meta


def _touch(path: Path) -> None:
    with contextlib.suppress(OSError):
        (path / ".used").touch(mode=0o600)


def _dir_size(path: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, f)).st_size
    return total
