"""The SpecialResource engine: the thin shell that runs one reconcile.

It reads the caches (``ports.Reader``), loads the recipe, renders (``sro.hooks.pipeline``),
asks the planner (``sro.plan``) what to do, executes the plan's writes through the typed
verbs of ``ports.Writer``, and writes the status ``sro.plan.finish`` settles on. It makes
no decision of its own: anything that chooses belongs in ``sro.plan``.
"""
