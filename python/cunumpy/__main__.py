"""``python -m cunumpy``: the command line (see ``cunumpy._cli``)."""

from cunumpy._cli import main

raise SystemExit(main())
