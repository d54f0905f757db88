"""In-memory stores of the objects reconciles read.

Pure. ``store`` keeps projections keyed by namespace/name, indexes them and reports
the deletions a relist implies; ``projections`` says what is kept of each kind;
``indexes`` names the lookups (pods by node, objects by owner). No I/O.
"""
