"""`python -m accelbench`, the same as the `accelbench` command."""

import sys

from .cli.main import main

# Guarded: spawned worker processes import the main module again and must not rerun the CLI.
if __name__ == "__main__":
    sys.exit(main())
