"""Plain data every layer shares: the records, not the rules that act on them.

What belongs here: the parsed SpecialResource (``specialresource``), object references
and the ``DesiredState`` a render produces (``desired``), the trimmed views of Nodes and
Pods the caches keep (``views``), kernel and OS groups (``kernels``), the per-node
progress vocabulary the planner and the status share (``progress``), names and label
syntax (``names``), node inventories (``inventory``, the one parser of the format, which
``hack/cluster`` uses too) and node selection (``selection``). What does not:
anything that decides what to write (``sro.plan``), renders (``sro.render``) or talks to
the API server. Pure: nothing here performs I/O or imports an HTTP client.
"""
