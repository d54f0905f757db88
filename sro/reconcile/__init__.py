"""Turning a key into actions.

``plan`` is pure: cache snapshot + recipe -> desired objects and status.
``controller`` runs workers and is the only code that acts on a plan; ``result`` is
what a reconcile returns and the one outcome policy; ``handlers`` turns cache changes
into queue keys.
"""
