"""Environment classes."""
