"""The journal: a serial for every change (it feeds index ETags) and the admins' audit log."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from hub_server import models as m
from hub_server.auth import Principal
from hub_server.errors import BadRequest, Forbidden
from hub_server.services.context import Part
from verifiers.hub import schemas as s


def record(db: Session, action: str, **fields: str | None) -> None:
    """Add a journal entry for a change; it commits with the change."""
    db.add(m.JournalEntry(action=action, **fields))


class JournalService(Part):
    def last_serial(self) -> int:
        with self.session() as db:
            return db.scalar(select(func.max(m.JournalEntry.id))) or 0

    def entries(
        self, principal: Principal, since: int = 0, limit: int = 100
    ) -> list[s.JournalEntryOut]:
        """The audit log: every change with its serial, oldest first (admins only)."""
        principal.require_scope("admin")
        if not principal.is_admin:
            raise Forbidden("only hub admins can read the journal")
        if not 1 <= limit <= 1000:
            raise BadRequest("limit must be between 1 and 1000")
        with self.session() as db:
            rows = db.scalars(
                select(m.JournalEntry)
                .where(m.JournalEntry.id > since)
                .order_by(m.JournalEntry.id)
                .limit(limit)
            ).all()
            return [
                s.JournalEntryOut(
                    serial=r.id,
                    action=r.action,
                    project=r.project,
                    version=r.version,
                    filename=r.filename,
                    actor=r.actor,
                    created_at=r.created_at,
                )
                for r in rows
            ]
