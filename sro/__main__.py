"""``python -m sro``: the same as the ``sro`` command."""

from sro.cli import main

raise SystemExit(main())
