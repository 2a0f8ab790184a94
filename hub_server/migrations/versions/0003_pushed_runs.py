"""pushed eval runs: run id, results blob, verified flag

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("eval_results", schema=None) as batch_op:
        batch_op.add_column(sa.Column("run_id", sa.String(length=64), nullable=True))
        batch_op.add_column(
            sa.Column("verified", sa.Boolean(), nullable=False, server_default=sa.true())
        )
        batch_op.add_column(sa.Column("results_key", sa.String(length=300), nullable=True))
        batch_op.add_column(sa.Column("results_sha256", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("results_size", sa.BigInteger(), nullable=True))
        batch_op.create_unique_constraint("uq_eval_results_run_id", ["run_id"])


def downgrade() -> None:
    with op.batch_alter_table("eval_results", schema=None) as batch_op:
        batch_op.drop_constraint("uq_eval_results_run_id", type_="unique")
        for col in ("results_size", "results_sha256", "results_key", "verified", "run_id"):
            batch_op.drop_column(col)
