"""Hub settings, read from ``VF_HUB_*`` environment variables (no globals)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

_MIB = 1024 * 1024


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "verifiers-hub"


@dataclass(frozen=True)
class Settings:
    """Everything the app needs; build with :meth:`from_env` or directly in tests."""

    data_dir: Path = field(default_factory=default_data_dir)
    database_url: str | None = None  # default: sqlite file in data_dir
    storage: str = "local"  # "local" | "s3"
    storage_dir: Path | None = None  # default: data_dir / "blobs"
    s3_bucket: str | None = None
    s3_endpoint_url: str | None = None
    s3_region: str | None = None
    s3_prefix: str = ""
    max_upload_bytes: int = 100 * _MIB
    max_json_bytes: int = _MIB  # every non-upload request body
    max_uncompressed_bytes: int = 1024 * _MIB
    max_compression_ratio: float = 100.0
    max_run_bytes: int = 64 * _MIB  # a pushed eval run, compressed
    max_run_uncompressed_bytes: int = 256 * _MIB  # ... and uncompressed (ratio: as wheels)
    max_run_records: int = 250_000  # rollouts in one pushed run
    run_cache_bytes: int = 2048 * _MIB  # unpacked runs kept for their pages (LRU evicted)
    worker_poll_s: float = 2.0  # how often an idle `vf hub worker` looks for jobs
    job_timeout_s: float = 300.0  # one job's limit (a validation takes minutes); then retried
    max_queued_jobs_per_user: int = 50  # unfinished verification jobs; a push past it: 429
    max_queued_jobs_per_environment: int = 100
    job_retry_s: float = 2.0  # back-off before a failed job's next try (doubles each time)
    upstream_index_url: str | None = None  # unknown global names redirect here when set
    protected_names_file: Path | None = None  # replaces the shipped protected_names.txt
    auto_migrate: bool = True
    # failed authentications per client before 429 (0: no limit), and the window in seconds
    auth_failure_limit: int = 30
    auth_failure_window: int = 300
    session_seconds: int = 8 * 3600  # a browser sign-in's longest life

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        env = os.environ if env is None else env
        values: dict[str, Any] = {}

        def get(key: str) -> str | None:
            v = env.get(f"VF_HUB_{key}")
            return v if v not in (None, "") else None

        if (v := get("DATA_DIR")) is not None:
            values["data_dir"] = Path(v)
        if (v := get("DATABASE_URL")) is not None:
            values["database_url"] = v
        if (v := get("STORAGE")) is not None:
            values["storage"] = v
        if (v := get("STORAGE_DIR")) is not None:
            values["storage_dir"] = Path(v)
        for key in ("S3_BUCKET", "S3_ENDPOINT_URL", "S3_REGION", "UPSTREAM_INDEX_URL"):
            if (v := get(key)) is not None:
                values[key.lower()] = v
        if (v := get("PROTECTED_NAMES_FILE")) is not None:
            values["protected_names_file"] = Path(v)
        if (v := get("S3_PREFIX")) is not None:
            values["s3_prefix"] = v
        for key in (
            "MAX_UPLOAD_BYTES",
            "MAX_JSON_BYTES",
            "MAX_UNCOMPRESSED_BYTES",
            "MAX_RUN_BYTES",
            "AUTH_FAILURE_LIMIT",
            "AUTH_FAILURE_WINDOW",
            "SESSION_SECONDS",
            "MAX_RUN_UNCOMPRESSED_BYTES",
            "MAX_RUN_RECORDS",
            "RUN_CACHE_BYTES",
            "MAX_QUEUED_JOBS_PER_USER",
            "MAX_QUEUED_JOBS_PER_ENVIRONMENT",
        ):
            if (v := get(key)) is not None:
                values[key.lower()] = _int(key, v)
        for key in ("WORKER_POLL_S", "JOB_TIMEOUT_S", "JOB_RETRY_S"):
            if (v := get(key)) is not None:
                try:
                    values[key.lower()] = float(v)
                except ValueError:
                    raise ValueError(f"VF_HUB_{key} must be a number, not {v!r}") from None
        if (v := get("MAX_COMPRESSION_RATIO")) is not None:
            values["max_compression_ratio"] = float(v)
        if (v := get("AUTO_MIGRATE")) is not None:
            values["auto_migrate"] = v.lower() not in ("0", "false", "no")
        if values.get("s3_bucket") and "storage" not in values:
            values["storage"] = "s3"
        values.update({k: v for k, v in overrides.items() if v is not None})
        settings = cls(**values)
        settings.validate()
        return settings

    def with_(self, **changes: Any) -> Settings:
        return replace(self, **changes)

    def validate(self) -> None:
        if self.storage not in ("local", "s3"):
            raise ValueError(f"VF_HUB_STORAGE must be 'local' or 's3', not {self.storage!r}")
        if self.storage == "s3" and not self.s3_bucket:
            raise ValueError("VF_HUB_STORAGE=s3 needs VF_HUB_S3_BUCKET")

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'hub.db'}"

    @property
    def resolved_storage_dir(self) -> Path:
        return self.storage_dir or self.data_dir / "blobs"


def _int(key: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"VF_HUB_{key} must be an integer, not {value!r}") from None
