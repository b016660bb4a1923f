import sys

from pudev.cli import main

sys.exit(main())
