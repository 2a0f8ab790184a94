"""Internal helpers."""

# names 0.3.x's version of this module imports, served on first use (verifiers.extension_points)
from verifiers.extension_points import forwarder as _forwarder

__getattr__ = _forwarder(__name__)
