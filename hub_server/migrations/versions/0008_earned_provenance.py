"""earned provenance: jobs know who pushed and which environment (quotas, fair claims); gold
and re-scored are recomputed under the rules of 0.4 (every record, gold earned by the worker)

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("hub_jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("user_id", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("environment_id", sa.Integer(), nullable=True))
        batch_op.create_index("ix_hub_jobs_user", ["user_id", "status"])
        batch_op.create_index("ix_hub_jobs_environment", ["environment_id", "status"])
    # gold was the pusher's claim (the model name) and an earlier re-score skipped errored
    # records: neither is believed any more. The runs read as self-reported until a worker
    # re-scores them (`vf hub jobs --backfill` queues that). A mismatch stays one: the
    # records it found different still are.
    op.execute(sa.text("UPDATE eval_results SET gold = false"))
    op.execute(
        sa.text(
            "UPDATE eval_results SET rescore_status = NULL, rescore_detail = NULL "
            "WHERE rescore_status IN ('agree', 'failed')"
        )
    )


def downgrade() -> None:
    with op.batch_alter_table("hub_jobs", schema=None) as batch_op:
        batch_op.drop_index("ix_hub_jobs_environment")
        batch_op.drop_index("ix_hub_jobs_user")
        batch_op.drop_column("environment_id")
        batch_op.drop_column("user_id")
