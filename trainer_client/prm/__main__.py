"""``python -m trainer_client.prm make-steps|train-prm ...`` (the same subcommands as ``trainer-client``)."""

import sys

from trainer_client.cli import main

if __name__ == "__main__":
    sys.exit(main())
