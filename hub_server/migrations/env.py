"""Alembic environment: uses the engine handed over by ``hub_server.migrate``."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Engine

from hub_server.db import make_engine
from hub_server.models import Base

config = context.config
target_metadata = Base.metadata


def run() -> None:
    engine = config.attributes.get("engine")
    if not isinstance(engine, Engine):
        engine = make_engine(config.get_main_option("sqlalchemy.url") or "")
    with engine.begin() as connection:
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            render_as_batch=connection.dialect.name == "sqlite",
        )
        context.run_migrations()


run()
