"""SASL on the broker: server-side mechanisms, SCRAM credentials, and JAAS config values.

plain   SASL/PLAIN (RFC 4616) against the listener's JAAS ``user_<name>`` options
scram   SCRAM-SHA-256/512 (RFC 5802/7677): the server and client exchanges, and the stored
        credential Kafka writes in /config/users/<user>
jaas    the ``sasl.jaas.config`` value parser
server  a listener's enabled mechanisms and the per-connection exchange they create
errors  a failure's log reason and what the client is told

Plain Python, no I/O: the Kafka door (broker/server/kafka) and the gRPC door drive these with
the tokens they read, and build the Session from the authorization id.
"""
