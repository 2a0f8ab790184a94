"""The ``vf`` and ``vf-eval`` command-line interface."""
