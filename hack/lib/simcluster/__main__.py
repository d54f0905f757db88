"""Entry point for ``python -m simcluster`` (what ``hack/cluster`` runs)."""

import sys

from simcluster import cli

sys.exit(cli.main(sys.argv[1:]))
