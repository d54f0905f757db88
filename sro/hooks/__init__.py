"""Annotation hooks applied to rendered objects.

Pure. One module per annotation; ``registry`` lists them in order. Adding a hook is
one module and one line in the registry.
"""
