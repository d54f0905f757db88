"""In-memory stores of the objects reconciles read.

Pure. A store keeps trimmed projections, indexes them, and reports the deletions a
relist implies. No I/O.
"""
