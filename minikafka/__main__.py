import sys

from minikafka.cli import main

sys.exit(main())
