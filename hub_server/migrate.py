"""Run the Alembic migrations shipped inside this package (works from a wheel install)."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine

MIGRATIONS_DIR = Path(__file__).with_name("migrations")


def _config(engine: Engine) -> object:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False))
    cfg.attributes["engine"] = engine
    return cfg


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to ``revision`` (idempotent)."""
    from alembic import command

    command.upgrade(_config(engine), revision)  # type: ignore[arg-type]


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()
