"""``python -m reward_service`` runs the same CLI as ``reward-service``."""

import sys

from reward_service.cli import main

if __name__ == "__main__":
    sys.exit(main())
