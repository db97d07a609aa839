"""``python -m segapp``: the command line (and the app when run without a command)."""
import sys

from segapp.cli import main

if __name__ == "__main__":
    sys.exit(main())
