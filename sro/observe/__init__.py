"""Logs, metrics and health endpoints: beside the data path, never inside it."""
