"""The cyclic garbage collector, set for an operator's heap.

Almost everything sro holds is long-lived and free of reference cycles: cached
projections of thousands of nodes and pods, replaced whole when they change and freed by
reference counting the moment they are. CPython's default thresholds start a young
collection every 700 net allocations, hundreds of times during one plan at a thousand
nodes, and the older generations' collections traverse every cached object again each
time: measured on a plan at 1,000 nodes, about a third of its time went to collections
that found nothing.

So young collections wait for ``YOUNG`` allocations, and once the caches have listed,
everything they hold is frozen (``gc.freeze``: never traversed again, still freed by
reference counting when replaced). A cycle among frozen objects would be kept; the caches
make none. The cost is at most ``YOUNG`` objects of cyclic garbage waiting a little longer.

A middle collection walks every object that survived the young collections since the
last one, and holds the process (the event loop included) while it does: with 20 young
collections between two middle ones, a converging fleet of 5,000 nodes kept the loop
waiting 1.6 and 1.8 s (``sro.observe.gcpause``). Each surviving object is walked by one
middle collection whatever their spacing, so more frequent ones cost no more in all and
each holds the loop a quarter as long; ``OLD`` grows to match, so full collections come
no more often than before.
"""

from __future__ import annotations

import gc

YOUNG = 50_000
"""Net allocations between two young collections (CPython: 700)."""
MIDDLE = 5
"""Young collections between two of the middle generation (CPython: 10): at most
``YOUNG * MIDDLE`` objects walked while the loop waits."""
OLD = 40
"""Middle collections between two full ones (CPython: 10; a full one also waits until a
quarter of the long-lived objects are new): ``YOUNG * MIDDLE * OLD`` allocations apart."""


def settle() -> None:
    """Set the thresholds and freeze what is alive now (call once the caches have listed)."""
    gc.set_threshold(YOUNG, MIDDLE, OLD)
    gc.collect()  # what listing left behind, before the rest is frozen
    gc.freeze()
