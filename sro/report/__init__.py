"""What an administrator reads about SpecialResources on a live cluster: ``sro status`` and
``sro diff``.

``table`` is pure (node metadata and a status in, rows and text out) and unit-tested;
``status`` and ``diff`` read the cluster through ``sro.kube`` and never write to it. The
operator itself never imports this package.
"""
