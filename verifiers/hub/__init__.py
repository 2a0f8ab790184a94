"""Wire schemas shared by the hub server and its clients, so the two cannot drift.

Only pydantic models and small pure helpers live here; no server or CLI dependency.
"""

from __future__ import annotations

from verifiers.hub.schemas import (
    SCOPES,
    ErrorBody,
    EvalResultIn,
    EvalResultOut,
    FileOut,
    JournalEntryOut,
    MemberAdd,
    ProjectList,
    ProjectOut,
    ReleaseOut,
    TokenCreate,
    TokenCreated,
    TokenOut,
    UploadResult,
    UserCreate,
    UserCreated,
    WhoAmI,
    YankRequest,
)

__all__ = [
    "SCOPES",
    "ErrorBody",
    "EvalResultIn",
    "EvalResultOut",
    "FileOut",
    "JournalEntryOut",
    "MemberAdd",
    "ProjectList",
    "ProjectOut",
    "ReleaseOut",
    "TokenCreate",
    "TokenCreated",
    "TokenOut",
    "UploadResult",
    "UserCreate",
    "UserCreated",
    "WhoAmI",
    "YankRequest",
]
