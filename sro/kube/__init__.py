"""The only door to the API server.

Configuration loading (kubeconfig or in-cluster), the authenticated aiohttp session,
raw requests with retries and timeouts, discovery of kinds, typed errors and the Lease
used for leader election. Every other package that needs the API goes through here.
"""
