"""Plain data: typed raw API bodies, object keys and the parsed SpecialResource.

Pure. Nothing here performs I/O or imports an HTTP client.
"""
