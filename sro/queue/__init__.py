"""The work queue between watch and reconcile, with client-go's semantics.

Pure asyncio primitives: a key is never processed twice at once, bursts collapse,
delays and per-key backoff. The clock is injected.
"""
