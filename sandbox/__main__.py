"""``python -m sandbox``: see :mod:`sandbox.cli`."""

import sys

from sandbox.cli import main

if __name__ == "__main__":
    sys.exit(main())
