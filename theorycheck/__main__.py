"""``python -m theorycheck``: the command line (:mod:`theorycheck.cli`)."""
from .cli import main

raise SystemExit(main())
