"""minikafka's Python client (the public names are re-exported by ``minikafka``)."""

import logging

# A library logs and lets the application decide where logs go: without this handler, Python
# would print WARNING events of an unconfigured application on stderr (logging.lastResort).
logging.getLogger(__name__).addHandler(logging.NullHandler())
