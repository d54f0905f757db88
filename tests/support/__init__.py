"""Test harness shared by integration and end-to-end tests: a real local cluster and waiting helpers.

Import as ``from support import cluster, waiting`` (``tests/`` is on ``sys.path`` through
``tests/conftest.py``); ``from tests.support import ...`` works too.
"""
