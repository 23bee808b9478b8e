import sys

from capkit.cli import main

sys.exit(main())
