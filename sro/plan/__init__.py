"""The pure planner: everything a reconcile decides, and nothing it does.

From the rendered ``DesiredState`` and the ``Observed`` record the engine read from its
caches, the planner decides every write (objects to apply, to delete, pods to replace,
node labels, annotations and taints), which states a refused write blocks, the status and
its Events, and when to look again. The engine executes; ``finish`` folds what the writes
reported back into the final status. No I/O, no clock, no cache: every branch of a
reconcile is a function of plain values, tested without a cluster (the import contract
forbids ``sro.kube``, ``aiohttp`` and ``kubernetes_asyncio`` here).
"""
