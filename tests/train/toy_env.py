"""The toy environment of the trainer tests: answer with the letter A (see
:func:`verifiers.train.tiny.letter_environment`)."""

from __future__ import annotations

from verifiers.train.tiny import letter_environment as load_environment

__all__ = ["load_environment"]
