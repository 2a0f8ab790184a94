"""Causal chains of exceptions (``raise X from Y``), as classic (0.3.x) code reads them.

:class:`ErrorChain` names a failure by the types along its ``__cause__`` links, so failures can
be counted by kind (``Counter(ErrorChain(e) for e in errors)``) and asked whether a type is in
them (``ModelError in chain``). :func:`error_data` turns an exception into the JSON-safe record
saved with a rollout; :func:`error_from_data` reads one back as the closest verifiers error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeGuard

from verifiers.classic.types import ErrorData
from verifiers.errors import (
    BrowserSandboxError,
    EmptyModelResponseError,
    Error,
    InfraError,
    InvalidModelResponseError,
    ModelError,
    OverlongPromptError,
    SandboxError,
    ToolCallError,
    ToolError,
    ToolParseError,
    TunnelError,
)

__all__ = [
    "ErrorChain",
    "error_data",
    "error_data_to_exception",
    "error_from_data",
    "get_error_chain",
    "get_vf_error_chain",
    "is_error_data",
    "validate_error_data",
    "vf_error_types",
]

_ERROR_DATA_KEYS = frozenset({"error", "message", "error_chain_repr", "error_chain_str"})


def get_error_chain(
    error: BaseException | None, parent_type: type[BaseException] | None = None
) -> list[BaseException]:
    """``error`` and the exceptions it was raised from (``__cause__``), outermost first.

    With ``parent_type`` the chain ends before the first link that is not an instance of it.
    """
    chain: list[BaseException] = []
    current = error
    while current is not None and (parent_type is None or isinstance(current, parent_type)):
        chain.append(current)
        current = current.__cause__
    return chain


def get_vf_error_chain(error: BaseException) -> list[BaseException]:
    """The leading run of verifiers errors (:class:`verifiers.Error`) of ``error``'s chain."""
    return get_error_chain(error, Error)


class ErrorChain:
    """An exception's causal chain, compared and hashed by the type names along it."""

    def __init__(
        self,
        error: BaseException,
        build_error_chain: Callable[[BaseException], list[BaseException]] = get_error_chain,
    ) -> None:
        self.root_error = error
        self.chain = build_error_chain(error)

    def _names(self) -> tuple[str, ...]:
        return tuple(type(e).__name__ for e in self.chain)

    def __hash__(self) -> int:
        return hash(self._names())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ErrorChain):
            return NotImplemented
        return self._names() == other._names()

    def __contains__(self, error_cls: type[BaseException]) -> bool:
        return any(isinstance(e, error_cls) for e in self.chain)

    def __str__(self) -> str:
        return " -> ".join(self._names())

    def __repr__(self) -> str:
        return " -> ".join(repr(e) for e in self.chain)


def error_data(error: BaseException) -> ErrorData:
    """The JSON-safe record of ``error`` saved with a rollout."""
    chain = ErrorChain(error)
    return ErrorData(
        error=type(error).__name__,
        message=str(error) or type(error).__name__,
        error_chain_repr=repr(chain),
        error_chain_str=str(chain),
    )


def is_error_data(value: object) -> TypeGuard[ErrorData]:
    """Whether ``value`` is exactly an :func:`error_data` record (four string fields)."""
    return (
        isinstance(value, dict)
        and set(value) == _ERROR_DATA_KEYS
        and all(isinstance(value[k], str) for k in _ERROR_DATA_KEYS)
    )


def validate_error_data(value: object) -> ErrorData:
    if not is_error_data(value):
        raise TypeError(
            "an error record needs exactly the string fields error, message, "
            f"error_chain_repr and error_chain_str; got {value!r}"
        )
    return value


def vf_error_types() -> tuple[type[Error], ...]:
    """verifiers' error types, most specific first (the order records are matched in)."""
    return (
        BrowserSandboxError,
        SandboxError,
        TunnelError,
        InfraError,
        EmptyModelResponseError,
        InvalidModelResponseError,
        ModelError,
        ToolParseError,
        ToolCallError,
        ToolError,
        OverlongPromptError,
        Error,
    )


def error_data_to_exception(
    error: ErrorData, error_types: tuple[type[Exception], ...]
) -> Exception | None:
    """An instance of the first of ``error_types`` named in the record's chain, else ``None``."""
    names = error["error_chain_str"] or error["error"]
    detail = error["error_chain_repr"] or error["error"]
    for error_type in error_types:
        if error_type.__name__ in names:
            return error_type(detail)
    return None


def error_from_data(error: ErrorData) -> Error:
    """The verifiers error a saved record describes (a plain :class:`verifiers.Error` when the
    record names none)."""
    found: Any = error_data_to_exception(error, vf_error_types())
    if isinstance(found, Error):
        return found
    return Error(error["error_chain_repr"] or error["error"])


# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder  # noqa: E402

__getattr__ = _forwarder(__name__)
