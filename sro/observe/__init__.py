"""Logs, metrics and health endpoints: beside the data path, never inside it.

``metrics`` (a registry per manager, implementing the small metrics protocols of the
queue, API client, reflector and controller), ``logs`` (structlog setup and the
per-reconcile context), ``health`` (/healthz, /readyz, /metrics), ``looplag`` (how long
the event loop was kept from running), ``gcpause`` (how long the garbage collector held it).
"""
