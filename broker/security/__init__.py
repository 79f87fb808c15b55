"""Who is asking, and what they may do: the broker's security model, as Kafka's.

principal  KafkaPrincipal ("User:alice") and the Session a request carries on either door
acl        Kafka's ACL value types (resource types, pattern types, operations, permission
           types, bindings) and the Authorizer seam the core calls for every API

Plain values and plain Python: no grpc, no front door. The server layer authenticates a
connection (TLS, SASL) and hands the core a Session; the core asks the Authorizer.
"""
