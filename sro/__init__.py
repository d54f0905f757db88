"""sro: a Special Resource Operator.

The package is laid out along the data path: ``watch`` -> ``cache`` -> ``queue`` ->
``runtime`` (workers) -> ``engine`` (one reconcile) -> ``render`` -> ``hooks`` -> ``plan``
-> ``apply``, with ``status`` and ``observe`` beside it. ``model``, ``cache``, ``queue``,
``render``, ``hooks``, ``plan``, ``apply.diff`` and the status builders are pure: they
never touch the network, which is what lets ``sro render`` print exactly what ``sro run``
would apply. ``.importlinter`` holds the layers and the purity rule.
"""

__version__ = "0.1.0"
