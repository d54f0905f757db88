"""Hooks applied to rendered objects, and the pure entry point that runs them.

Pure: nothing here does I/O; cluster facts (served kinds, scopes, nodes) arrive as
arguments. One module per annotation hook (``kernel_affine``, ``per_node``, ``optional``,
``proxy``, ``wait``, ``wait_for_logs``) plus the two the operator always applies
(``ownership``, ``placement``); ``registry`` lists them in order. Adding a hook is one
module and one line in the registry.

``pipeline.render_desired`` lives here, above ``sro.render`` in the layering, because it
is the one place that composes rendering and hooks into a ``DesiredState``; ``offline``
is its use by ``sro lint``. ``keys`` (annotation keys and aliases), ``podspec`` (where pod
templates live) and ``base`` (the hook type and context) serve the hooks.
"""
