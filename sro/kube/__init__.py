"""The only door to the API server.

``config`` loads the configuration (kubeconfig or in-cluster) and bearer tokens;
``http`` sends raw JSON requests and watch streams over the authenticated aiohttp
session, with timeouts and retries of transient failures; ``errors`` turns answers
into the typed errors of ``sro.errors``; ``discovery`` maps apiVersion/kind to
resources; ``lease`` is leader election. Every other package that needs the API goes
through here; nothing here knows about SpecialResources, caches or queues.
"""
