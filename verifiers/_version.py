"""The version of this verifiers (``verifiers.__version__``)."""

__version__ = "0.9.0"
