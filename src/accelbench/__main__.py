"""`python -m accelbench`, the same as the `accelbench` command."""

import sys

from .cli import main

sys.exit(main())
