"""The work queue between watch and reconcile, with client-go's semantics.

Pure asyncio primitives: ``workqueue`` (a key is never processed twice at once,
bursts collapse, delays, shutdown), ``delaying`` (earliest ready time wins),
``ratelimit`` (per-key backoff), ``clock`` (injected time). No I/O.
"""
