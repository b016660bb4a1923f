import sys

from pudev.image.cli import main

sys.exit(main())
