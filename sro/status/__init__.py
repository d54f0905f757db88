"""The SpecialResource's status body, its conditions and its Events, as pure values.

``summary`` builds the whole status from a walk (or for an error, ``Unmanaged``,
``Removed``, no nodes) and tells whether it changed, with ``rows`` for its per-state and
per-kernel rows; ``conditions`` keeps transition times
moving only on a flip; ``events`` finds the transitions worth an Event and builds the
Event body. Nothing here writes: ``sro.engine.status_writes`` sends what these build, and
``sro.plan`` decides which of them a pass ends with.
"""
