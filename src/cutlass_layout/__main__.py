"""``python -m cutlass_layout``: the ``cutlass-layout`` command (the same entry point, the same
exit codes)."""

import sys

from cutlass_layout.cli import main

if __name__ == "__main__":
    sys.exit(main())
