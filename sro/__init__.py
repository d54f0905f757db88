"""sro: a Special Resource Operator.

The package is laid out along the data path: ``watch`` -> ``cache`` -> ``queue`` ->
``reconcile`` -> ``render`` -> ``hooks`` -> ``apply``, with ``status`` and ``observe``
beside it. ``model``, ``cache``, ``queue``, ``render``, ``hooks``, ``reconcile.plan``,
``apply.diff`` and ``status.conditions`` are pure: they never touch the network, which is
what lets ``sro render`` print exactly what ``sro run`` would apply.
"""

__version__ = "0.1.0"
