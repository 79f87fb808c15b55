"""The Kafka wire protocol: a second front door on the same core (docs/design.md, "Front doors").

listener.py    an asyncio server per ``kafka.listeners`` entry
connection.py  framing, headers, ordering, bad input (one connection)
registry.py    API key -> handler and versions (what ApiVersions advertises)
schema.py      Kafka's message types through kio, and ``build`` for any version
broker.py      the core the handlers call (the gRPC servicers' own)
handlers/      one module per API family
"""
