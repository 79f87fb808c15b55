"""The broker's request handling on plain values, which both front doors adapt.

The gRPC servicers (``broker/server/*_service.py``) and the Kafka listener
(``broker/server/kafka/``) decode their own wire format, call these classes with dataclasses and
plain values, and encode what comes back. Nothing here imports grpc or the generated protobuf
modules (``.importlinter`` enforces it), so a third front door would adapt the same calls.
"""
