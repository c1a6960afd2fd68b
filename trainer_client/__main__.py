"""``python -m trainer_client ...``: the ``trainer-client`` command line."""

import sys

from trainer_client.cli import main

sys.exit(main())
