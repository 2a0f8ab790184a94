"""Model clients: the Client interface and its implementations."""
