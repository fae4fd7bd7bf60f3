"""``python -m theorycheck``: the command line (:mod:`theorycheck.cli`)."""
from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
