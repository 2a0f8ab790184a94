"""Helpers for harnesses that talk to the model with the ``openai`` SDK."""
