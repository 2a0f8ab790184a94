"""sealed versions (one wheel per release) and burned filenames in normalised form

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from hub_server.names import normalised_filename

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_burned = sa.table(
    "burned_filenames",
    sa.column("filename", sa.String(300)),
    sa.column("burned_at", sa.DateTime(timezone=True)),
)


def upgrade() -> None:
    op.add_column("files", sa.Column("wheel_slot", sa.Integer(), nullable=True))
    op.create_index("uq_files_release_wheel", "files", ["release_id", "wheel_slot"], unique=True)
    conn = op.get_bind()
    rows = conn.execute(sa.select(_burned.c.filename, _burned.c.burned_at)).all()
    have = {r[0] for r in rows}
    for filename, burned_at in rows:
        norm = normalised_filename(filename)
        if norm not in have:
            have.add(norm)
            conn.execute(sa.insert(_burned).values(filename=norm, burned_at=burned_at))


def downgrade() -> None:  # the extra burned rows only make the check stricter: kept
    op.drop_index("uq_files_release_wheel", table_name="files")
    with op.batch_alter_table("files") as batch:
        batch.drop_column("wheel_slot")
