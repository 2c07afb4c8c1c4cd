"""``python -m lakefs_mirror_dagster.cli``: the same as the ``lakefs-mirror`` script."""

import sys

from .run import main

sys.exit(main())
