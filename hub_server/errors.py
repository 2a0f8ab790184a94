"""Domain errors raised by the service layer; one handler in the app maps them to HTTP."""

from __future__ import annotations


class HubError(Exception):
    status = 400
    code = "bad_request"

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


class BadRequest(HubError):
    status = 400
    code = "bad_request"


class InvalidUpload(HubError):
    status = 400
    code = "invalid_upload"


class TooLarge(HubError):
    status = 413
    code = "too_large"


class Unauthorized(HubError):
    """Missing or unusable credentials; answered with ``WWW-Authenticate``."""

    status = 401
    code = "unauthorized"


class Forbidden(HubError):
    status = 403
    code = "forbidden"


class NotFound(HubError):
    status = 404
    code = "not_found"


class Conflict(HubError):
    status = 409
    code = "conflict"


class Unavailable(HubError):
    """A backing service (database, blob storage) failed; retrying later may work."""

    status = 503
    code = "unavailable"
