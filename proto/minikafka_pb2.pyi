from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ScramMechanism(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SCRAM_MECHANISM_UNKNOWN: _ClassVar[ScramMechanism]
    SCRAM_MECHANISM_SCRAM_SHA_256: _ClassVar[ScramMechanism]
    SCRAM_MECHANISM_SCRAM_SHA_512: _ClassVar[ScramMechanism]

class ConfigResourceType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONFIG_RESOURCE_TYPE_UNKNOWN: _ClassVar[ConfigResourceType]
    CONFIG_RESOURCE_TYPE_TOPIC: _ClassVar[ConfigResourceType]
    CONFIG_RESOURCE_TYPE_BROKER: _ClassVar[ConfigResourceType]

class ConfigSource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONFIG_SOURCE_UNKNOWN: _ClassVar[ConfigSource]
    CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG: _ClassVar[ConfigSource]
    CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG: _ClassVar[ConfigSource]
    CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG: _ClassVar[ConfigSource]
    CONFIG_SOURCE_STATIC_BROKER_CONFIG: _ClassVar[ConfigSource]
    CONFIG_SOURCE_DEFAULT_CONFIG: _ClassVar[ConfigSource]

class ElectionType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ELECTION_TYPE_PREFERRED: _ClassVar[ElectionType]
    ELECTION_TYPE_UNCLEAN: _ClassVar[ElectionType]

class ConfigOperation(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONFIG_OPERATION_SET: _ClassVar[ConfigOperation]
    CONFIG_OPERATION_DELETE: _ClassVar[ConfigOperation]
    CONFIG_OPERATION_APPEND: _ClassVar[ConfigOperation]
    CONFIG_OPERATION_SUBTRACT: _ClassVar[ConfigOperation]
SCRAM_MECHANISM_UNKNOWN: ScramMechanism
SCRAM_MECHANISM_SCRAM_SHA_256: ScramMechanism
SCRAM_MECHANISM_SCRAM_SHA_512: ScramMechanism
CONFIG_RESOURCE_TYPE_UNKNOWN: ConfigResourceType
CONFIG_RESOURCE_TYPE_TOPIC: ConfigResourceType
CONFIG_RESOURCE_TYPE_BROKER: ConfigResourceType
CONFIG_SOURCE_UNKNOWN: ConfigSource
CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG: ConfigSource
CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG: ConfigSource
CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG: ConfigSource
CONFIG_SOURCE_STATIC_BROKER_CONFIG: ConfigSource
CONFIG_SOURCE_DEFAULT_CONFIG: ConfigSource
ELECTION_TYPE_PREFERRED: ElectionType
ELECTION_TYPE_UNCLEAN: ElectionType
CONFIG_OPERATION_SET: ConfigOperation
CONFIG_OPERATION_DELETE: ConfigOperation
CONFIG_OPERATION_APPEND: ConfigOperation
CONFIG_OPERATION_SUBTRACT: ConfigOperation

class InitProducerIdRequest(_message.Message):
    __slots__ = ("transactional_id", "transaction_timeout_ms", "producer_id", "producer_epoch")
    TRANSACTIONAL_ID_FIELD_NUMBER: _ClassVar[int]
    TRANSACTION_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    transactional_id: str
    transaction_timeout_ms: int
    producer_id: int
    producer_epoch: int
    def __init__(self, transactional_id: _Optional[str] = ..., transaction_timeout_ms: _Optional[int] = ..., producer_id: _Optional[int] = ..., producer_epoch: _Optional[int] = ...) -> None: ...

class InitProducerIdResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "producer_id", "producer_epoch")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    producer_id: int
    producer_epoch: int
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., producer_id: _Optional[int] = ..., producer_epoch: _Optional[int] = ...) -> None: ...

class ProduceRequest(_message.Message):
    __slots__ = ("acks", "timeout_ms", "topic_data", "transactional_id")
    class PartitionProduceData(_message.Message):
        __slots__ = ("index", "records")
        INDEX_FIELD_NUMBER: _ClassVar[int]
        RECORDS_FIELD_NUMBER: _ClassVar[int]
        index: int
        records: bytes
        def __init__(self, index: _Optional[int] = ..., records: _Optional[bytes] = ...) -> None: ...
    class TopicProduceData(_message.Message):
        __slots__ = ("name", "partition_data")
        NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITION_DATA_FIELD_NUMBER: _ClassVar[int]
        name: str
        partition_data: _containers.RepeatedCompositeFieldContainer[ProduceRequest.PartitionProduceData]
        def __init__(self, name: _Optional[str] = ..., partition_data: _Optional[_Iterable[_Union[ProduceRequest.PartitionProduceData, _Mapping]]] = ...) -> None: ...
    ACKS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    TOPIC_DATA_FIELD_NUMBER: _ClassVar[int]
    TRANSACTIONAL_ID_FIELD_NUMBER: _ClassVar[int]
    acks: int
    timeout_ms: int
    topic_data: _containers.RepeatedCompositeFieldContainer[ProduceRequest.TopicProduceData]
    transactional_id: str
    def __init__(self, acks: _Optional[int] = ..., timeout_ms: _Optional[int] = ..., topic_data: _Optional[_Iterable[_Union[ProduceRequest.TopicProduceData, _Mapping]]] = ..., transactional_id: _Optional[str] = ...) -> None: ...

class ProduceResponse(_message.Message):
    __slots__ = ("responses", "throttle_time_ms")
    class PartitionProduceResponse(_message.Message):
        __slots__ = ("index", "error_code", "error_message", "base_offset", "log_append_time_ms", "log_start_offset")
        INDEX_FIELD_NUMBER: _ClassVar[int]
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        BASE_OFFSET_FIELD_NUMBER: _ClassVar[int]
        LOG_APPEND_TIME_MS_FIELD_NUMBER: _ClassVar[int]
        LOG_START_OFFSET_FIELD_NUMBER: _ClassVar[int]
        index: int
        error_code: int
        error_message: str
        base_offset: int
        log_append_time_ms: int
        log_start_offset: int
        def __init__(self, index: _Optional[int] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., base_offset: _Optional[int] = ..., log_append_time_ms: _Optional[int] = ..., log_start_offset: _Optional[int] = ...) -> None: ...
    class TopicProduceResponse(_message.Message):
        __slots__ = ("name", "partition_responses")
        NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITION_RESPONSES_FIELD_NUMBER: _ClassVar[int]
        name: str
        partition_responses: _containers.RepeatedCompositeFieldContainer[ProduceResponse.PartitionProduceResponse]
        def __init__(self, name: _Optional[str] = ..., partition_responses: _Optional[_Iterable[_Union[ProduceResponse.PartitionProduceResponse, _Mapping]]] = ...) -> None: ...
    RESPONSES_FIELD_NUMBER: _ClassVar[int]
    THROTTLE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    responses: _containers.RepeatedCompositeFieldContainer[ProduceResponse.TopicProduceResponse]
    throttle_time_ms: int
    def __init__(self, responses: _Optional[_Iterable[_Union[ProduceResponse.TopicProduceResponse, _Mapping]]] = ..., throttle_time_ms: _Optional[int] = ...) -> None: ...

class FetchRequest(_message.Message):
    __slots__ = ("replica_id", "replica_epoch", "max_wait_ms", "min_bytes", "max_bytes", "topics", "session_id", "session_epoch", "forgotten_topics_data", "isolation_level", "rack_id")
    class FetchPartition(_message.Message):
        __slots__ = ("partition", "current_leader_epoch", "fetch_offset", "last_fetched_epoch", "log_start_offset", "partition_max_bytes")
        PARTITION_FIELD_NUMBER: _ClassVar[int]
        CURRENT_LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
        FETCH_OFFSET_FIELD_NUMBER: _ClassVar[int]
        LAST_FETCHED_EPOCH_FIELD_NUMBER: _ClassVar[int]
        LOG_START_OFFSET_FIELD_NUMBER: _ClassVar[int]
        PARTITION_MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
        partition: int
        current_leader_epoch: int
        fetch_offset: int
        last_fetched_epoch: int
        log_start_offset: int
        partition_max_bytes: int
        def __init__(self, partition: _Optional[int] = ..., current_leader_epoch: _Optional[int] = ..., fetch_offset: _Optional[int] = ..., last_fetched_epoch: _Optional[int] = ..., log_start_offset: _Optional[int] = ..., partition_max_bytes: _Optional[int] = ...) -> None: ...
    class FetchTopic(_message.Message):
        __slots__ = ("topic", "partitions")
        TOPIC_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        topic: str
        partitions: _containers.RepeatedCompositeFieldContainer[FetchRequest.FetchPartition]
        def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[FetchRequest.FetchPartition, _Mapping]]] = ...) -> None: ...
    class ForgottenTopic(_message.Message):
        __slots__ = ("topic", "partitions")
        TOPIC_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        topic: str
        partitions: _containers.RepeatedScalarFieldContainer[int]
        def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[int]] = ...) -> None: ...
    REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    REPLICA_EPOCH_FIELD_NUMBER: _ClassVar[int]
    MAX_WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    MIN_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_EPOCH_FIELD_NUMBER: _ClassVar[int]
    FORGOTTEN_TOPICS_DATA_FIELD_NUMBER: _ClassVar[int]
    ISOLATION_LEVEL_FIELD_NUMBER: _ClassVar[int]
    RACK_ID_FIELD_NUMBER: _ClassVar[int]
    replica_id: int
    replica_epoch: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    topics: _containers.RepeatedCompositeFieldContainer[FetchRequest.FetchTopic]
    session_id: int
    session_epoch: int
    forgotten_topics_data: _containers.RepeatedCompositeFieldContainer[FetchRequest.ForgottenTopic]
    isolation_level: int
    rack_id: str
    def __init__(self, replica_id: _Optional[int] = ..., replica_epoch: _Optional[int] = ..., max_wait_ms: _Optional[int] = ..., min_bytes: _Optional[int] = ..., max_bytes: _Optional[int] = ..., topics: _Optional[_Iterable[_Union[FetchRequest.FetchTopic, _Mapping]]] = ..., session_id: _Optional[int] = ..., session_epoch: _Optional[int] = ..., forgotten_topics_data: _Optional[_Iterable[_Union[FetchRequest.ForgottenTopic, _Mapping]]] = ..., isolation_level: _Optional[int] = ..., rack_id: _Optional[str] = ...) -> None: ...

class FetchResponse(_message.Message):
    __slots__ = ("error_code", "responses", "session_id", "throttle_time_ms")
    class EpochEndOffset(_message.Message):
        __slots__ = ("epoch", "end_offset")
        EPOCH_FIELD_NUMBER: _ClassVar[int]
        END_OFFSET_FIELD_NUMBER: _ClassVar[int]
        epoch: int
        end_offset: int
        def __init__(self, epoch: _Optional[int] = ..., end_offset: _Optional[int] = ...) -> None: ...
    class PartitionData(_message.Message):
        __slots__ = ("partition_index", "error_code", "error_message", "high_watermark", "last_stable_offset", "log_start_offset", "diverging_epoch", "records", "aborted_transactions", "preferred_read_replica")
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
        LAST_STABLE_OFFSET_FIELD_NUMBER: _ClassVar[int]
        LOG_START_OFFSET_FIELD_NUMBER: _ClassVar[int]
        DIVERGING_EPOCH_FIELD_NUMBER: _ClassVar[int]
        RECORDS_FIELD_NUMBER: _ClassVar[int]
        ABORTED_TRANSACTIONS_FIELD_NUMBER: _ClassVar[int]
        PREFERRED_READ_REPLICA_FIELD_NUMBER: _ClassVar[int]
        partition_index: int
        error_code: int
        error_message: str
        high_watermark: int
        last_stable_offset: int
        log_start_offset: int
        diverging_epoch: FetchResponse.EpochEndOffset
        records: bytes
        aborted_transactions: _containers.RepeatedCompositeFieldContainer[FetchResponse.AbortedTransaction]
        preferred_read_replica: int
        def __init__(self, partition_index: _Optional[int] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., high_watermark: _Optional[int] = ..., last_stable_offset: _Optional[int] = ..., log_start_offset: _Optional[int] = ..., diverging_epoch: _Optional[_Union[FetchResponse.EpochEndOffset, _Mapping]] = ..., records: _Optional[bytes] = ..., aborted_transactions: _Optional[_Iterable[_Union[FetchResponse.AbortedTransaction, _Mapping]]] = ..., preferred_read_replica: _Optional[int] = ...) -> None: ...
    class AbortedTransaction(_message.Message):
        __slots__ = ("producer_id", "first_offset")
        PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
        FIRST_OFFSET_FIELD_NUMBER: _ClassVar[int]
        producer_id: int
        first_offset: int
        def __init__(self, producer_id: _Optional[int] = ..., first_offset: _Optional[int] = ...) -> None: ...
    class FetchableTopicResponse(_message.Message):
        __slots__ = ("topic", "partitions")
        TOPIC_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        topic: str
        partitions: _containers.RepeatedCompositeFieldContainer[FetchResponse.PartitionData]
        def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[FetchResponse.PartitionData, _Mapping]]] = ...) -> None: ...
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    RESPONSES_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    THROTTLE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    responses: _containers.RepeatedCompositeFieldContainer[FetchResponse.FetchableTopicResponse]
    session_id: int
    throttle_time_ms: int
    def __init__(self, error_code: _Optional[int] = ..., responses: _Optional[_Iterable[_Union[FetchResponse.FetchableTopicResponse, _Mapping]]] = ..., session_id: _Optional[int] = ..., throttle_time_ms: _Optional[int] = ...) -> None: ...

class ListOffsetsRequest(_message.Message):
    __slots__ = ("replica_id", "topics", "isolation_level")
    class ListOffsetsPartition(_message.Message):
        __slots__ = ("partition_index", "current_leader_epoch", "timestamp")
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        CURRENT_LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
        TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
        partition_index: int
        current_leader_epoch: int
        timestamp: int
        def __init__(self, partition_index: _Optional[int] = ..., current_leader_epoch: _Optional[int] = ..., timestamp: _Optional[int] = ...) -> None: ...
    class ListOffsetsTopic(_message.Message):
        __slots__ = ("name", "partitions")
        NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        name: str
        partitions: _containers.RepeatedCompositeFieldContainer[ListOffsetsRequest.ListOffsetsPartition]
        def __init__(self, name: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[ListOffsetsRequest.ListOffsetsPartition, _Mapping]]] = ...) -> None: ...
    REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    ISOLATION_LEVEL_FIELD_NUMBER: _ClassVar[int]
    replica_id: int
    topics: _containers.RepeatedCompositeFieldContainer[ListOffsetsRequest.ListOffsetsTopic]
    isolation_level: int
    def __init__(self, replica_id: _Optional[int] = ..., topics: _Optional[_Iterable[_Union[ListOffsetsRequest.ListOffsetsTopic, _Mapping]]] = ..., isolation_level: _Optional[int] = ...) -> None: ...

class ListOffsetsResponse(_message.Message):
    __slots__ = ("topics",)
    class ListOffsetsPartitionResponse(_message.Message):
        __slots__ = ("partition_index", "error_code", "error_message", "timestamp", "offset", "leader_epoch")
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
        OFFSET_FIELD_NUMBER: _ClassVar[int]
        LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
        partition_index: int
        error_code: int
        error_message: str
        timestamp: int
        offset: int
        leader_epoch: int
        def __init__(self, partition_index: _Optional[int] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., timestamp: _Optional[int] = ..., offset: _Optional[int] = ..., leader_epoch: _Optional[int] = ...) -> None: ...
    class ListOffsetsTopicResponse(_message.Message):
        __slots__ = ("name", "partitions")
        NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        name: str
        partitions: _containers.RepeatedCompositeFieldContainer[ListOffsetsResponse.ListOffsetsPartitionResponse]
        def __init__(self, name: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[ListOffsetsResponse.ListOffsetsPartitionResponse, _Mapping]]] = ...) -> None: ...
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[ListOffsetsResponse.ListOffsetsTopicResponse]
    def __init__(self, topics: _Optional[_Iterable[_Union[ListOffsetsResponse.ListOffsetsTopicResponse, _Mapping]]] = ...) -> None: ...

class OffsetsForLeaderEpochRequest(_message.Message):
    __slots__ = ("replica_id", "topics")
    class OffsetForLeaderPartition(_message.Message):
        __slots__ = ("partition", "current_leader_epoch", "leader_epoch")
        PARTITION_FIELD_NUMBER: _ClassVar[int]
        CURRENT_LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
        LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
        partition: int
        current_leader_epoch: int
        leader_epoch: int
        def __init__(self, partition: _Optional[int] = ..., current_leader_epoch: _Optional[int] = ..., leader_epoch: _Optional[int] = ...) -> None: ...
    class OffsetForLeaderTopic(_message.Message):
        __slots__ = ("topic", "partitions")
        TOPIC_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        topic: str
        partitions: _containers.RepeatedCompositeFieldContainer[OffsetsForLeaderEpochRequest.OffsetForLeaderPartition]
        def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[OffsetsForLeaderEpochRequest.OffsetForLeaderPartition, _Mapping]]] = ...) -> None: ...
    REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    replica_id: int
    topics: _containers.RepeatedCompositeFieldContainer[OffsetsForLeaderEpochRequest.OffsetForLeaderTopic]
    def __init__(self, replica_id: _Optional[int] = ..., topics: _Optional[_Iterable[_Union[OffsetsForLeaderEpochRequest.OffsetForLeaderTopic, _Mapping]]] = ...) -> None: ...

class OffsetsForLeaderEpochResponse(_message.Message):
    __slots__ = ("topics",)
    class EpochEndOffset(_message.Message):
        __slots__ = ("error_code", "error_message", "partition", "leader_epoch", "end_offset")
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        PARTITION_FIELD_NUMBER: _ClassVar[int]
        LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
        END_OFFSET_FIELD_NUMBER: _ClassVar[int]
        error_code: int
        error_message: str
        partition: int
        leader_epoch: int
        end_offset: int
        def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., partition: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., end_offset: _Optional[int] = ...) -> None: ...
    class OffsetForLeaderTopicResult(_message.Message):
        __slots__ = ("topic", "partitions")
        TOPIC_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        topic: str
        partitions: _containers.RepeatedCompositeFieldContainer[OffsetsForLeaderEpochResponse.EpochEndOffset]
        def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[OffsetsForLeaderEpochResponse.EpochEndOffset, _Mapping]]] = ...) -> None: ...
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[OffsetsForLeaderEpochResponse.OffsetForLeaderTopicResult]
    def __init__(self, topics: _Optional[_Iterable[_Union[OffsetsForLeaderEpochResponse.OffsetForLeaderTopicResult, _Mapping]]] = ...) -> None: ...

class MetadataRequest(_message.Message):
    __slots__ = ("topics", "allow_auto_topic_creation")
    class MetadataRequestTopic(_message.Message):
        __slots__ = ("name",)
        NAME_FIELD_NUMBER: _ClassVar[int]
        name: str
        def __init__(self, name: _Optional[str] = ...) -> None: ...
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    ALLOW_AUTO_TOPIC_CREATION_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[MetadataRequest.MetadataRequestTopic]
    allow_auto_topic_creation: bool
    def __init__(self, topics: _Optional[_Iterable[_Union[MetadataRequest.MetadataRequestTopic, _Mapping]]] = ..., allow_auto_topic_creation: _Optional[bool] = ...) -> None: ...

class MetadataResponse(_message.Message):
    __slots__ = ("brokers", "cluster_id", "controller_id", "topics")
    class MetadataResponseBroker(_message.Message):
        __slots__ = ("node_id", "host", "port", "rack")
        NODE_ID_FIELD_NUMBER: _ClassVar[int]
        HOST_FIELD_NUMBER: _ClassVar[int]
        PORT_FIELD_NUMBER: _ClassVar[int]
        RACK_FIELD_NUMBER: _ClassVar[int]
        node_id: int
        host: str
        port: int
        rack: str
        def __init__(self, node_id: _Optional[int] = ..., host: _Optional[str] = ..., port: _Optional[int] = ..., rack: _Optional[str] = ...) -> None: ...
    class MetadataResponsePartition(_message.Message):
        __slots__ = ("error_code", "error_message", "partition_index", "leader_id", "leader_epoch", "replica_nodes", "isr_nodes", "offline_replicas")
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        LEADER_ID_FIELD_NUMBER: _ClassVar[int]
        LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
        REPLICA_NODES_FIELD_NUMBER: _ClassVar[int]
        ISR_NODES_FIELD_NUMBER: _ClassVar[int]
        OFFLINE_REPLICAS_FIELD_NUMBER: _ClassVar[int]
        error_code: int
        error_message: str
        partition_index: int
        leader_id: int
        leader_epoch: int
        replica_nodes: _containers.RepeatedScalarFieldContainer[int]
        isr_nodes: _containers.RepeatedScalarFieldContainer[int]
        offline_replicas: _containers.RepeatedScalarFieldContainer[int]
        def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., partition_index: _Optional[int] = ..., leader_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., replica_nodes: _Optional[_Iterable[int]] = ..., isr_nodes: _Optional[_Iterable[int]] = ..., offline_replicas: _Optional[_Iterable[int]] = ...) -> None: ...
    class MetadataResponseTopic(_message.Message):
        __slots__ = ("error_code", "error_message", "name", "topic_id", "is_internal", "partitions")
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        NAME_FIELD_NUMBER: _ClassVar[int]
        TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
        IS_INTERNAL_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        error_code: int
        error_message: str
        name: str
        topic_id: str
        is_internal: bool
        partitions: _containers.RepeatedCompositeFieldContainer[MetadataResponse.MetadataResponsePartition]
        def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., name: _Optional[str] = ..., topic_id: _Optional[str] = ..., is_internal: _Optional[bool] = ..., partitions: _Optional[_Iterable[_Union[MetadataResponse.MetadataResponsePartition, _Mapping]]] = ...) -> None: ...
    BROKERS_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_ID_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    brokers: _containers.RepeatedCompositeFieldContainer[MetadataResponse.MetadataResponseBroker]
    cluster_id: str
    controller_id: int
    topics: _containers.RepeatedCompositeFieldContainer[MetadataResponse.MetadataResponseTopic]
    def __init__(self, brokers: _Optional[_Iterable[_Union[MetadataResponse.MetadataResponseBroker, _Mapping]]] = ..., cluster_id: _Optional[str] = ..., controller_id: _Optional[int] = ..., topics: _Optional[_Iterable[_Union[MetadataResponse.MetadataResponseTopic, _Mapping]]] = ...) -> None: ...

class DescribeClusterRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DescribeClusterResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "cluster_id", "controller_id", "brokers")
    class DescribeClusterBroker(_message.Message):
        __slots__ = ("broker_id", "host", "port", "rack")
        BROKER_ID_FIELD_NUMBER: _ClassVar[int]
        HOST_FIELD_NUMBER: _ClassVar[int]
        PORT_FIELD_NUMBER: _ClassVar[int]
        RACK_FIELD_NUMBER: _ClassVar[int]
        broker_id: int
        host: str
        port: int
        rack: str
        def __init__(self, broker_id: _Optional[int] = ..., host: _Optional[str] = ..., port: _Optional[int] = ..., rack: _Optional[str] = ...) -> None: ...
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKERS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    cluster_id: str
    controller_id: int
    brokers: _containers.RepeatedCompositeFieldContainer[DescribeClusterResponse.DescribeClusterBroker]
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., cluster_id: _Optional[str] = ..., controller_id: _Optional[int] = ..., brokers: _Optional[_Iterable[_Union[DescribeClusterResponse.DescribeClusterBroker, _Mapping]]] = ...) -> None: ...

class DescribeProducersRequest(_message.Message):
    __slots__ = ("topics",)
    class TopicRequest(_message.Message):
        __slots__ = ("name", "partition_indexes")
        NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITION_INDEXES_FIELD_NUMBER: _ClassVar[int]
        name: str
        partition_indexes: _containers.RepeatedScalarFieldContainer[int]
        def __init__(self, name: _Optional[str] = ..., partition_indexes: _Optional[_Iterable[int]] = ...) -> None: ...
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[DescribeProducersRequest.TopicRequest]
    def __init__(self, topics: _Optional[_Iterable[_Union[DescribeProducersRequest.TopicRequest, _Mapping]]] = ...) -> None: ...

class DescribeProducersResponse(_message.Message):
    __slots__ = ("topics",)
    class ProducerState(_message.Message):
        __slots__ = ("producer_id", "producer_epoch", "last_sequence", "last_timestamp", "coordinator_epoch", "current_txn_start_offset")
        PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
        PRODUCER_EPOCH_FIELD_NUMBER: _ClassVar[int]
        LAST_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
        LAST_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
        COORDINATOR_EPOCH_FIELD_NUMBER: _ClassVar[int]
        CURRENT_TXN_START_OFFSET_FIELD_NUMBER: _ClassVar[int]
        producer_id: int
        producer_epoch: int
        last_sequence: int
        last_timestamp: int
        coordinator_epoch: int
        current_txn_start_offset: int
        def __init__(self, producer_id: _Optional[int] = ..., producer_epoch: _Optional[int] = ..., last_sequence: _Optional[int] = ..., last_timestamp: _Optional[int] = ..., coordinator_epoch: _Optional[int] = ..., current_txn_start_offset: _Optional[int] = ...) -> None: ...
    class PartitionResponse(_message.Message):
        __slots__ = ("partition_index", "error_code", "error_message", "active_producers")
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        ACTIVE_PRODUCERS_FIELD_NUMBER: _ClassVar[int]
        partition_index: int
        error_code: int
        error_message: str
        active_producers: _containers.RepeatedCompositeFieldContainer[DescribeProducersResponse.ProducerState]
        def __init__(self, partition_index: _Optional[int] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., active_producers: _Optional[_Iterable[_Union[DescribeProducersResponse.ProducerState, _Mapping]]] = ...) -> None: ...
    class TopicResponse(_message.Message):
        __slots__ = ("name", "partitions")
        NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        name: str
        partitions: _containers.RepeatedCompositeFieldContainer[DescribeProducersResponse.PartitionResponse]
        def __init__(self, name: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[DescribeProducersResponse.PartitionResponse, _Mapping]]] = ...) -> None: ...
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[DescribeProducersResponse.TopicResponse]
    def __init__(self, topics: _Optional[_Iterable[_Union[DescribeProducersResponse.TopicResponse, _Mapping]]] = ...) -> None: ...

class AclBinding(_message.Message):
    __slots__ = ("resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission_type")
    RESOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    PATTERN_TYPE_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_TYPE_FIELD_NUMBER: _ClassVar[int]
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int
    def __init__(self, resource_type: _Optional[int] = ..., resource_name: _Optional[str] = ..., pattern_type: _Optional[int] = ..., principal: _Optional[str] = ..., host: _Optional[str] = ..., operation: _Optional[int] = ..., permission_type: _Optional[int] = ...) -> None: ...

class AclBindingFilter(_message.Message):
    __slots__ = ("resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission_type")
    RESOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    PATTERN_TYPE_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_TYPE_FIELD_NUMBER: _ClassVar[int]
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int
    def __init__(self, resource_type: _Optional[int] = ..., resource_name: _Optional[str] = ..., pattern_type: _Optional[int] = ..., principal: _Optional[str] = ..., host: _Optional[str] = ..., operation: _Optional[int] = ..., permission_type: _Optional[int] = ...) -> None: ...

class DescribeAclsRequest(_message.Message):
    __slots__ = ("filter",)
    FILTER_FIELD_NUMBER: _ClassVar[int]
    filter: AclBindingFilter
    def __init__(self, filter: _Optional[_Union[AclBindingFilter, _Mapping]] = ...) -> None: ...

class DescribeAclsResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "acls")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ACLS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    acls: _containers.RepeatedCompositeFieldContainer[AclBinding]
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., acls: _Optional[_Iterable[_Union[AclBinding, _Mapping]]] = ...) -> None: ...

class CreateAclsRequest(_message.Message):
    __slots__ = ("creations",)
    CREATIONS_FIELD_NUMBER: _ClassVar[int]
    creations: _containers.RepeatedCompositeFieldContainer[AclBinding]
    def __init__(self, creations: _Optional[_Iterable[_Union[AclBinding, _Mapping]]] = ...) -> None: ...

class CreateAclsResponse(_message.Message):
    __slots__ = ("results",)
    class AclCreationResult(_message.Message):
        __slots__ = ("error_code", "error_message")
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        error_code: int
        error_message: str
        def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[CreateAclsResponse.AclCreationResult]
    def __init__(self, results: _Optional[_Iterable[_Union[CreateAclsResponse.AclCreationResult, _Mapping]]] = ...) -> None: ...

class DeleteAclsRequest(_message.Message):
    __slots__ = ("filters",)
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    filters: _containers.RepeatedCompositeFieldContainer[AclBindingFilter]
    def __init__(self, filters: _Optional[_Iterable[_Union[AclBindingFilter, _Mapping]]] = ...) -> None: ...

class DeleteAclsResponse(_message.Message):
    __slots__ = ("filter_results",)
    class DeleteAclsMatchingAcl(_message.Message):
        __slots__ = ("error_code", "error_message", "acl")
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        ACL_FIELD_NUMBER: _ClassVar[int]
        error_code: int
        error_message: str
        acl: AclBinding
        def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., acl: _Optional[_Union[AclBinding, _Mapping]] = ...) -> None: ...
    class DeleteAclsFilterResult(_message.Message):
        __slots__ = ("error_code", "error_message", "matching_acls")
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        MATCHING_ACLS_FIELD_NUMBER: _ClassVar[int]
        error_code: int
        error_message: str
        matching_acls: _containers.RepeatedCompositeFieldContainer[DeleteAclsResponse.DeleteAclsMatchingAcl]
        def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., matching_acls: _Optional[_Iterable[_Union[DeleteAclsResponse.DeleteAclsMatchingAcl, _Mapping]]] = ...) -> None: ...
    FILTER_RESULTS_FIELD_NUMBER: _ClassVar[int]
    filter_results: _containers.RepeatedCompositeFieldContainer[DeleteAclsResponse.DeleteAclsFilterResult]
    def __init__(self, filter_results: _Optional[_Iterable[_Union[DeleteAclsResponse.DeleteAclsFilterResult, _Mapping]]] = ...) -> None: ...

class DescribeUserScramCredentialsRequest(_message.Message):
    __slots__ = ("users",)
    USERS_FIELD_NUMBER: _ClassVar[int]
    users: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, users: _Optional[_Iterable[str]] = ...) -> None: ...

class DescribeUserScramCredentialsResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "results")
    class CredentialInfo(_message.Message):
        __slots__ = ("mechanism", "iterations")
        MECHANISM_FIELD_NUMBER: _ClassVar[int]
        ITERATIONS_FIELD_NUMBER: _ClassVar[int]
        mechanism: ScramMechanism
        iterations: int
        def __init__(self, mechanism: _Optional[_Union[ScramMechanism, str]] = ..., iterations: _Optional[int] = ...) -> None: ...
    class DescribeUserScramCredentialsResult(_message.Message):
        __slots__ = ("user", "error_code", "error_message", "credential_infos")
        USER_FIELD_NUMBER: _ClassVar[int]
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        CREDENTIAL_INFOS_FIELD_NUMBER: _ClassVar[int]
        user: str
        error_code: int
        error_message: str
        credential_infos: _containers.RepeatedCompositeFieldContainer[DescribeUserScramCredentialsResponse.CredentialInfo]
        def __init__(self, user: _Optional[str] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., credential_infos: _Optional[_Iterable[_Union[DescribeUserScramCredentialsResponse.CredentialInfo, _Mapping]]] = ...) -> None: ...
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    results: _containers.RepeatedCompositeFieldContainer[DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult]
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., results: _Optional[_Iterable[_Union[DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult, _Mapping]]] = ...) -> None: ...

class AlterUserScramCredentialsRequest(_message.Message):
    __slots__ = ("deletions", "upsertions")
    class ScramCredentialDeletion(_message.Message):
        __slots__ = ("name", "mechanism")
        NAME_FIELD_NUMBER: _ClassVar[int]
        MECHANISM_FIELD_NUMBER: _ClassVar[int]
        name: str
        mechanism: ScramMechanism
        def __init__(self, name: _Optional[str] = ..., mechanism: _Optional[_Union[ScramMechanism, str]] = ...) -> None: ...
    class ScramCredentialUpsertion(_message.Message):
        __slots__ = ("name", "mechanism", "iterations", "salt", "salted_password")
        NAME_FIELD_NUMBER: _ClassVar[int]
        MECHANISM_FIELD_NUMBER: _ClassVar[int]
        ITERATIONS_FIELD_NUMBER: _ClassVar[int]
        SALT_FIELD_NUMBER: _ClassVar[int]
        SALTED_PASSWORD_FIELD_NUMBER: _ClassVar[int]
        name: str
        mechanism: ScramMechanism
        iterations: int
        salt: bytes
        salted_password: bytes
        def __init__(self, name: _Optional[str] = ..., mechanism: _Optional[_Union[ScramMechanism, str]] = ..., iterations: _Optional[int] = ..., salt: _Optional[bytes] = ..., salted_password: _Optional[bytes] = ...) -> None: ...
    DELETIONS_FIELD_NUMBER: _ClassVar[int]
    UPSERTIONS_FIELD_NUMBER: _ClassVar[int]
    deletions: _containers.RepeatedCompositeFieldContainer[AlterUserScramCredentialsRequest.ScramCredentialDeletion]
    upsertions: _containers.RepeatedCompositeFieldContainer[AlterUserScramCredentialsRequest.ScramCredentialUpsertion]
    def __init__(self, deletions: _Optional[_Iterable[_Union[AlterUserScramCredentialsRequest.ScramCredentialDeletion, _Mapping]]] = ..., upsertions: _Optional[_Iterable[_Union[AlterUserScramCredentialsRequest.ScramCredentialUpsertion, _Mapping]]] = ...) -> None: ...

class QuotaEntityComponent(_message.Message):
    __slots__ = ("entity_type", "name")
    ENTITY_TYPE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    entity_type: str
    name: str
    def __init__(self, entity_type: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class DescribeClientQuotasRequest(_message.Message):
    __slots__ = ("components", "strict")
    class Component(_message.Message):
        __slots__ = ("entity_type", "match_type", "match")
        ENTITY_TYPE_FIELD_NUMBER: _ClassVar[int]
        MATCH_TYPE_FIELD_NUMBER: _ClassVar[int]
        MATCH_FIELD_NUMBER: _ClassVar[int]
        entity_type: str
        match_type: int
        match: str
        def __init__(self, entity_type: _Optional[str] = ..., match_type: _Optional[int] = ..., match: _Optional[str] = ...) -> None: ...
    COMPONENTS_FIELD_NUMBER: _ClassVar[int]
    STRICT_FIELD_NUMBER: _ClassVar[int]
    components: _containers.RepeatedCompositeFieldContainer[DescribeClientQuotasRequest.Component]
    strict: bool
    def __init__(self, components: _Optional[_Iterable[_Union[DescribeClientQuotasRequest.Component, _Mapping]]] = ..., strict: _Optional[bool] = ...) -> None: ...

class DescribeClientQuotasResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "entries")
    class Entry(_message.Message):
        __slots__ = ("entity", "values")
        class ValuesEntry(_message.Message):
            __slots__ = ("key", "value")
            KEY_FIELD_NUMBER: _ClassVar[int]
            VALUE_FIELD_NUMBER: _ClassVar[int]
            key: str
            value: float
            def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
        ENTITY_FIELD_NUMBER: _ClassVar[int]
        VALUES_FIELD_NUMBER: _ClassVar[int]
        entity: _containers.RepeatedCompositeFieldContainer[QuotaEntityComponent]
        values: _containers.ScalarMap[str, float]
        def __init__(self, entity: _Optional[_Iterable[_Union[QuotaEntityComponent, _Mapping]]] = ..., values: _Optional[_Mapping[str, float]] = ...) -> None: ...
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    entries: _containers.RepeatedCompositeFieldContainer[DescribeClientQuotasResponse.Entry]
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., entries: _Optional[_Iterable[_Union[DescribeClientQuotasResponse.Entry, _Mapping]]] = ...) -> None: ...

class AlterClientQuotasRequest(_message.Message):
    __slots__ = ("entries", "validate_only")
    class Op(_message.Message):
        __slots__ = ("key", "value", "remove")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        REMOVE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        remove: bool
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ..., remove: _Optional[bool] = ...) -> None: ...
    class Entry(_message.Message):
        __slots__ = ("entity", "ops")
        ENTITY_FIELD_NUMBER: _ClassVar[int]
        OPS_FIELD_NUMBER: _ClassVar[int]
        entity: _containers.RepeatedCompositeFieldContainer[QuotaEntityComponent]
        ops: _containers.RepeatedCompositeFieldContainer[AlterClientQuotasRequest.Op]
        def __init__(self, entity: _Optional[_Iterable[_Union[QuotaEntityComponent, _Mapping]]] = ..., ops: _Optional[_Iterable[_Union[AlterClientQuotasRequest.Op, _Mapping]]] = ...) -> None: ...
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    VALIDATE_ONLY_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[AlterClientQuotasRequest.Entry]
    validate_only: bool
    def __init__(self, entries: _Optional[_Iterable[_Union[AlterClientQuotasRequest.Entry, _Mapping]]] = ..., validate_only: _Optional[bool] = ...) -> None: ...

class AlterClientQuotasResponse(_message.Message):
    __slots__ = ("results",)
    class Result(_message.Message):
        __slots__ = ("entity", "error_code", "error_message")
        ENTITY_FIELD_NUMBER: _ClassVar[int]
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        entity: _containers.RepeatedCompositeFieldContainer[QuotaEntityComponent]
        error_code: int
        error_message: str
        def __init__(self, entity: _Optional[_Iterable[_Union[QuotaEntityComponent, _Mapping]]] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[AlterClientQuotasResponse.Result]
    def __init__(self, results: _Optional[_Iterable[_Union[AlterClientQuotasResponse.Result, _Mapping]]] = ...) -> None: ...

class AlterUserScramCredentialsResponse(_message.Message):
    __slots__ = ("results",)
    class AlterUserScramCredentialsResult(_message.Message):
        __slots__ = ("user", "error_code", "error_message")
        USER_FIELD_NUMBER: _ClassVar[int]
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        user: str
        error_code: int
        error_message: str
        def __init__(self, user: _Optional[str] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult]
    def __init__(self, results: _Optional[_Iterable[_Union[AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult, _Mapping]]] = ...) -> None: ...

class CreateTopicsRequest(_message.Message):
    __slots__ = ("topics", "timeout_ms", "validate_only")
    class CreatableReplicaAssignment(_message.Message):
        __slots__ = ("partition_index", "broker_ids")
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        BROKER_IDS_FIELD_NUMBER: _ClassVar[int]
        partition_index: int
        broker_ids: _containers.RepeatedScalarFieldContainer[int]
        def __init__(self, partition_index: _Optional[int] = ..., broker_ids: _Optional[_Iterable[int]] = ...) -> None: ...
    class CreatableTopic(_message.Message):
        __slots__ = ("name", "num_partitions", "replication_factor", "assignments", "configs")
        class ConfigsEntry(_message.Message):
            __slots__ = ("key", "value")
            KEY_FIELD_NUMBER: _ClassVar[int]
            VALUE_FIELD_NUMBER: _ClassVar[int]
            key: str
            value: str
            def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
        NAME_FIELD_NUMBER: _ClassVar[int]
        NUM_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        REPLICATION_FACTOR_FIELD_NUMBER: _ClassVar[int]
        ASSIGNMENTS_FIELD_NUMBER: _ClassVar[int]
        CONFIGS_FIELD_NUMBER: _ClassVar[int]
        name: str
        num_partitions: int
        replication_factor: int
        assignments: _containers.RepeatedCompositeFieldContainer[CreateTopicsRequest.CreatableReplicaAssignment]
        configs: _containers.ScalarMap[str, str]
        def __init__(self, name: _Optional[str] = ..., num_partitions: _Optional[int] = ..., replication_factor: _Optional[int] = ..., assignments: _Optional[_Iterable[_Union[CreateTopicsRequest.CreatableReplicaAssignment, _Mapping]]] = ..., configs: _Optional[_Mapping[str, str]] = ...) -> None: ...
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    VALIDATE_ONLY_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[CreateTopicsRequest.CreatableTopic]
    timeout_ms: int
    validate_only: bool
    def __init__(self, topics: _Optional[_Iterable[_Union[CreateTopicsRequest.CreatableTopic, _Mapping]]] = ..., timeout_ms: _Optional[int] = ..., validate_only: _Optional[bool] = ...) -> None: ...

class CreateTopicsResponse(_message.Message):
    __slots__ = ("topics",)
    class CreatableTopicConfigs(_message.Message):
        __slots__ = ("name", "value", "read_only", "config_source", "is_sensitive")
        NAME_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        READ_ONLY_FIELD_NUMBER: _ClassVar[int]
        CONFIG_SOURCE_FIELD_NUMBER: _ClassVar[int]
        IS_SENSITIVE_FIELD_NUMBER: _ClassVar[int]
        name: str
        value: str
        read_only: bool
        config_source: ConfigSource
        is_sensitive: bool
        def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ..., read_only: _Optional[bool] = ..., config_source: _Optional[_Union[ConfigSource, str]] = ..., is_sensitive: _Optional[bool] = ...) -> None: ...
    class CreatableTopicResult(_message.Message):
        __slots__ = ("name", "topic_id", "error_code", "error_message", "num_partitions", "replication_factor", "configs")
        NAME_FIELD_NUMBER: _ClassVar[int]
        TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        NUM_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        REPLICATION_FACTOR_FIELD_NUMBER: _ClassVar[int]
        CONFIGS_FIELD_NUMBER: _ClassVar[int]
        name: str
        topic_id: str
        error_code: int
        error_message: str
        num_partitions: int
        replication_factor: int
        configs: _containers.RepeatedCompositeFieldContainer[CreateTopicsResponse.CreatableTopicConfigs]
        def __init__(self, name: _Optional[str] = ..., topic_id: _Optional[str] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., num_partitions: _Optional[int] = ..., replication_factor: _Optional[int] = ..., configs: _Optional[_Iterable[_Union[CreateTopicsResponse.CreatableTopicConfigs, _Mapping]]] = ...) -> None: ...
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[CreateTopicsResponse.CreatableTopicResult]
    def __init__(self, topics: _Optional[_Iterable[_Union[CreateTopicsResponse.CreatableTopicResult, _Mapping]]] = ...) -> None: ...

class DeleteTopicsRequest(_message.Message):
    __slots__ = ("topic_names", "timeout_ms")
    TOPIC_NAMES_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    topic_names: _containers.RepeatedScalarFieldContainer[str]
    timeout_ms: int
    def __init__(self, topic_names: _Optional[_Iterable[str]] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class DeleteTopicsResponse(_message.Message):
    __slots__ = ("responses",)
    class DeletableTopicResult(_message.Message):
        __slots__ = ("name", "topic_id", "error_code", "error_message")
        NAME_FIELD_NUMBER: _ClassVar[int]
        TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        name: str
        topic_id: str
        error_code: int
        error_message: str
        def __init__(self, name: _Optional[str] = ..., topic_id: _Optional[str] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...
    RESPONSES_FIELD_NUMBER: _ClassVar[int]
    responses: _containers.RepeatedCompositeFieldContainer[DeleteTopicsResponse.DeletableTopicResult]
    def __init__(self, responses: _Optional[_Iterable[_Union[DeleteTopicsResponse.DeletableTopicResult, _Mapping]]] = ...) -> None: ...

class CreatePartitionsRequest(_message.Message):
    __slots__ = ("topics", "timeout_ms", "validate_only")
    class CreatePartitionsAssignment(_message.Message):
        __slots__ = ("broker_ids",)
        BROKER_IDS_FIELD_NUMBER: _ClassVar[int]
        broker_ids: _containers.RepeatedScalarFieldContainer[int]
        def __init__(self, broker_ids: _Optional[_Iterable[int]] = ...) -> None: ...
    class CreatePartitionsTopic(_message.Message):
        __slots__ = ("name", "count", "assignments")
        NAME_FIELD_NUMBER: _ClassVar[int]
        COUNT_FIELD_NUMBER: _ClassVar[int]
        ASSIGNMENTS_FIELD_NUMBER: _ClassVar[int]
        name: str
        count: int
        assignments: _containers.RepeatedCompositeFieldContainer[CreatePartitionsRequest.CreatePartitionsAssignment]
        def __init__(self, name: _Optional[str] = ..., count: _Optional[int] = ..., assignments: _Optional[_Iterable[_Union[CreatePartitionsRequest.CreatePartitionsAssignment, _Mapping]]] = ...) -> None: ...
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    VALIDATE_ONLY_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[CreatePartitionsRequest.CreatePartitionsTopic]
    timeout_ms: int
    validate_only: bool
    def __init__(self, topics: _Optional[_Iterable[_Union[CreatePartitionsRequest.CreatePartitionsTopic, _Mapping]]] = ..., timeout_ms: _Optional[int] = ..., validate_only: _Optional[bool] = ...) -> None: ...

class CreatePartitionsResponse(_message.Message):
    __slots__ = ("results",)
    class CreatePartitionsTopicResult(_message.Message):
        __slots__ = ("name", "error_code", "error_message")
        NAME_FIELD_NUMBER: _ClassVar[int]
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        name: str
        error_code: int
        error_message: str
        def __init__(self, name: _Optional[str] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[CreatePartitionsResponse.CreatePartitionsTopicResult]
    def __init__(self, results: _Optional[_Iterable[_Union[CreatePartitionsResponse.CreatePartitionsTopicResult, _Mapping]]] = ...) -> None: ...

class ElectLeadersRequest(_message.Message):
    __slots__ = ("election_type", "topic_partitions", "timeout_ms")
    class TopicPartitions(_message.Message):
        __slots__ = ("topic", "partitions")
        TOPIC_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        topic: str
        partitions: _containers.RepeatedScalarFieldContainer[int]
        def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[int]] = ...) -> None: ...
    ELECTION_TYPE_FIELD_NUMBER: _ClassVar[int]
    TOPIC_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    election_type: ElectionType
    topic_partitions: _containers.RepeatedCompositeFieldContainer[ElectLeadersRequest.TopicPartitions]
    timeout_ms: int
    def __init__(self, election_type: _Optional[_Union[ElectionType, str]] = ..., topic_partitions: _Optional[_Iterable[_Union[ElectLeadersRequest.TopicPartitions, _Mapping]]] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class ElectLeadersResponse(_message.Message):
    __slots__ = ("error_code", "replica_election_results")
    class PartitionResult(_message.Message):
        __slots__ = ("partition_id", "error_code", "error_message")
        PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        partition_id: int
        error_code: int
        error_message: str
        def __init__(self, partition_id: _Optional[int] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...
    class ReplicaElectionResult(_message.Message):
        __slots__ = ("topic", "partition_result")
        TOPIC_FIELD_NUMBER: _ClassVar[int]
        PARTITION_RESULT_FIELD_NUMBER: _ClassVar[int]
        topic: str
        partition_result: _containers.RepeatedCompositeFieldContainer[ElectLeadersResponse.PartitionResult]
        def __init__(self, topic: _Optional[str] = ..., partition_result: _Optional[_Iterable[_Union[ElectLeadersResponse.PartitionResult, _Mapping]]] = ...) -> None: ...
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    REPLICA_ELECTION_RESULTS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    replica_election_results: _containers.RepeatedCompositeFieldContainer[ElectLeadersResponse.ReplicaElectionResult]
    def __init__(self, error_code: _Optional[int] = ..., replica_election_results: _Optional[_Iterable[_Union[ElectLeadersResponse.ReplicaElectionResult, _Mapping]]] = ...) -> None: ...

class AlterPartitionReassignmentsRequest(_message.Message):
    __slots__ = ("topics", "timeout_ms")
    class ReassignablePartition(_message.Message):
        __slots__ = ("partition_index", "replicas", "cancel")
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        REPLICAS_FIELD_NUMBER: _ClassVar[int]
        CANCEL_FIELD_NUMBER: _ClassVar[int]
        partition_index: int
        replicas: _containers.RepeatedScalarFieldContainer[int]
        cancel: bool
        def __init__(self, partition_index: _Optional[int] = ..., replicas: _Optional[_Iterable[int]] = ..., cancel: _Optional[bool] = ...) -> None: ...
    class ReassignableTopic(_message.Message):
        __slots__ = ("name", "partitions")
        NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        name: str
        partitions: _containers.RepeatedCompositeFieldContainer[AlterPartitionReassignmentsRequest.ReassignablePartition]
        def __init__(self, name: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[AlterPartitionReassignmentsRequest.ReassignablePartition, _Mapping]]] = ...) -> None: ...
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[AlterPartitionReassignmentsRequest.ReassignableTopic]
    timeout_ms: int
    def __init__(self, topics: _Optional[_Iterable[_Union[AlterPartitionReassignmentsRequest.ReassignableTopic, _Mapping]]] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class AlterPartitionReassignmentsResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "responses")
    class ReassignablePartitionResponse(_message.Message):
        __slots__ = ("partition_index", "error_code", "error_message")
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        partition_index: int
        error_code: int
        error_message: str
        def __init__(self, partition_index: _Optional[int] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...
    class ReassignableTopicResponse(_message.Message):
        __slots__ = ("name", "partitions")
        NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        name: str
        partitions: _containers.RepeatedCompositeFieldContainer[AlterPartitionReassignmentsResponse.ReassignablePartitionResponse]
        def __init__(self, name: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[AlterPartitionReassignmentsResponse.ReassignablePartitionResponse, _Mapping]]] = ...) -> None: ...
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RESPONSES_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    responses: _containers.RepeatedCompositeFieldContainer[AlterPartitionReassignmentsResponse.ReassignableTopicResponse]
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., responses: _Optional[_Iterable[_Union[AlterPartitionReassignmentsResponse.ReassignableTopicResponse, _Mapping]]] = ...) -> None: ...

class ListPartitionReassignmentsRequest(_message.Message):
    __slots__ = ("topics", "timeout_ms")
    class ListPartitionReassignmentsTopics(_message.Message):
        __slots__ = ("name", "partition_indexes")
        NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITION_INDEXES_FIELD_NUMBER: _ClassVar[int]
        name: str
        partition_indexes: _containers.RepeatedScalarFieldContainer[int]
        def __init__(self, name: _Optional[str] = ..., partition_indexes: _Optional[_Iterable[int]] = ...) -> None: ...
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[ListPartitionReassignmentsRequest.ListPartitionReassignmentsTopics]
    timeout_ms: int
    def __init__(self, topics: _Optional[_Iterable[_Union[ListPartitionReassignmentsRequest.ListPartitionReassignmentsTopics, _Mapping]]] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class ListPartitionReassignmentsResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "topics")
    class OngoingPartitionReassignment(_message.Message):
        __slots__ = ("partition_index", "replicas", "adding_replicas", "removing_replicas")
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        REPLICAS_FIELD_NUMBER: _ClassVar[int]
        ADDING_REPLICAS_FIELD_NUMBER: _ClassVar[int]
        REMOVING_REPLICAS_FIELD_NUMBER: _ClassVar[int]
        partition_index: int
        replicas: _containers.RepeatedScalarFieldContainer[int]
        adding_replicas: _containers.RepeatedScalarFieldContainer[int]
        removing_replicas: _containers.RepeatedScalarFieldContainer[int]
        def __init__(self, partition_index: _Optional[int] = ..., replicas: _Optional[_Iterable[int]] = ..., adding_replicas: _Optional[_Iterable[int]] = ..., removing_replicas: _Optional[_Iterable[int]] = ...) -> None: ...
    class OngoingTopicReassignment(_message.Message):
        __slots__ = ("name", "partitions")
        NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        name: str
        partitions: _containers.RepeatedCompositeFieldContainer[ListPartitionReassignmentsResponse.OngoingPartitionReassignment]
        def __init__(self, name: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[ListPartitionReassignmentsResponse.OngoingPartitionReassignment, _Mapping]]] = ...) -> None: ...
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    topics: _containers.RepeatedCompositeFieldContainer[ListPartitionReassignmentsResponse.OngoingTopicReassignment]
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., topics: _Optional[_Iterable[_Union[ListPartitionReassignmentsResponse.OngoingTopicReassignment, _Mapping]]] = ...) -> None: ...

class DescribeConfigsRequest(_message.Message):
    __slots__ = ("resources",)
    class DescribeConfigsResource(_message.Message):
        __slots__ = ("resource_type", "resource_name", "configuration_keys")
        RESOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
        RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
        CONFIGURATION_KEYS_FIELD_NUMBER: _ClassVar[int]
        resource_type: ConfigResourceType
        resource_name: str
        configuration_keys: _containers.RepeatedScalarFieldContainer[str]
        def __init__(self, resource_type: _Optional[_Union[ConfigResourceType, str]] = ..., resource_name: _Optional[str] = ..., configuration_keys: _Optional[_Iterable[str]] = ...) -> None: ...
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    resources: _containers.RepeatedCompositeFieldContainer[DescribeConfigsRequest.DescribeConfigsResource]
    def __init__(self, resources: _Optional[_Iterable[_Union[DescribeConfigsRequest.DescribeConfigsResource, _Mapping]]] = ...) -> None: ...

class DescribeConfigsResponse(_message.Message):
    __slots__ = ("results",)
    class DescribeConfigsResourceResult(_message.Message):
        __slots__ = ("name", "value", "read_only", "is_default", "config_source", "is_sensitive", "synonyms")
        NAME_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        READ_ONLY_FIELD_NUMBER: _ClassVar[int]
        IS_DEFAULT_FIELD_NUMBER: _ClassVar[int]
        CONFIG_SOURCE_FIELD_NUMBER: _ClassVar[int]
        IS_SENSITIVE_FIELD_NUMBER: _ClassVar[int]
        SYNONYMS_FIELD_NUMBER: _ClassVar[int]
        name: str
        value: str
        read_only: bool
        is_default: bool
        config_source: ConfigSource
        is_sensitive: bool
        synonyms: _containers.RepeatedCompositeFieldContainer[DescribeConfigsResponse.DescribeConfigsSynonym]
        def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ..., read_only: _Optional[bool] = ..., is_default: _Optional[bool] = ..., config_source: _Optional[_Union[ConfigSource, str]] = ..., is_sensitive: _Optional[bool] = ..., synonyms: _Optional[_Iterable[_Union[DescribeConfigsResponse.DescribeConfigsSynonym, _Mapping]]] = ...) -> None: ...
    class DescribeConfigsSynonym(_message.Message):
        __slots__ = ("name", "value", "source")
        NAME_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        SOURCE_FIELD_NUMBER: _ClassVar[int]
        name: str
        value: str
        source: ConfigSource
        def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ..., source: _Optional[_Union[ConfigSource, str]] = ...) -> None: ...
    class DescribeConfigsResult(_message.Message):
        __slots__ = ("error_code", "error_message", "resource_type", "resource_name", "configs")
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        RESOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
        RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
        CONFIGS_FIELD_NUMBER: _ClassVar[int]
        error_code: int
        error_message: str
        resource_type: ConfigResourceType
        resource_name: str
        configs: _containers.RepeatedCompositeFieldContainer[DescribeConfigsResponse.DescribeConfigsResourceResult]
        def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., resource_type: _Optional[_Union[ConfigResourceType, str]] = ..., resource_name: _Optional[str] = ..., configs: _Optional[_Iterable[_Union[DescribeConfigsResponse.DescribeConfigsResourceResult, _Mapping]]] = ...) -> None: ...
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[DescribeConfigsResponse.DescribeConfigsResult]
    def __init__(self, results: _Optional[_Iterable[_Union[DescribeConfigsResponse.DescribeConfigsResult, _Mapping]]] = ...) -> None: ...

class IncrementalAlterConfigsRequest(_message.Message):
    __slots__ = ("resources", "validate_only")
    class AlterableConfig(_message.Message):
        __slots__ = ("name", "config_operation", "value")
        NAME_FIELD_NUMBER: _ClassVar[int]
        CONFIG_OPERATION_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        name: str
        config_operation: ConfigOperation
        value: str
        def __init__(self, name: _Optional[str] = ..., config_operation: _Optional[_Union[ConfigOperation, str]] = ..., value: _Optional[str] = ...) -> None: ...
    class AlterConfigsResource(_message.Message):
        __slots__ = ("resource_type", "resource_name", "configs")
        RESOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
        RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
        CONFIGS_FIELD_NUMBER: _ClassVar[int]
        resource_type: ConfigResourceType
        resource_name: str
        configs: _containers.RepeatedCompositeFieldContainer[IncrementalAlterConfigsRequest.AlterableConfig]
        def __init__(self, resource_type: _Optional[_Union[ConfigResourceType, str]] = ..., resource_name: _Optional[str] = ..., configs: _Optional[_Iterable[_Union[IncrementalAlterConfigsRequest.AlterableConfig, _Mapping]]] = ...) -> None: ...
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    VALIDATE_ONLY_FIELD_NUMBER: _ClassVar[int]
    resources: _containers.RepeatedCompositeFieldContainer[IncrementalAlterConfigsRequest.AlterConfigsResource]
    validate_only: bool
    def __init__(self, resources: _Optional[_Iterable[_Union[IncrementalAlterConfigsRequest.AlterConfigsResource, _Mapping]]] = ..., validate_only: _Optional[bool] = ...) -> None: ...

class IncrementalAlterConfigsResponse(_message.Message):
    __slots__ = ("responses",)
    class AlterConfigsResourceResponse(_message.Message):
        __slots__ = ("error_code", "error_message", "resource_type", "resource_name")
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        RESOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
        RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
        error_code: int
        error_message: str
        resource_type: ConfigResourceType
        resource_name: str
        def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., resource_type: _Optional[_Union[ConfigResourceType, str]] = ..., resource_name: _Optional[str] = ...) -> None: ...
    RESPONSES_FIELD_NUMBER: _ClassVar[int]
    responses: _containers.RepeatedCompositeFieldContainer[IncrementalAlterConfigsResponse.AlterConfigsResourceResponse]
    def __init__(self, responses: _Optional[_Iterable[_Union[IncrementalAlterConfigsResponse.AlterConfigsResourceResponse, _Mapping]]] = ...) -> None: ...

class DeleteRecordsRequest(_message.Message):
    __slots__ = ("topics", "timeout_ms")
    class DeleteRecordsPartition(_message.Message):
        __slots__ = ("partition_index", "offset")
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        OFFSET_FIELD_NUMBER: _ClassVar[int]
        partition_index: int
        offset: int
        def __init__(self, partition_index: _Optional[int] = ..., offset: _Optional[int] = ...) -> None: ...
    class DeleteRecordsTopic(_message.Message):
        __slots__ = ("name", "partitions")
        NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        name: str
        partitions: _containers.RepeatedCompositeFieldContainer[DeleteRecordsRequest.DeleteRecordsPartition]
        def __init__(self, name: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[DeleteRecordsRequest.DeleteRecordsPartition, _Mapping]]] = ...) -> None: ...
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[DeleteRecordsRequest.DeleteRecordsTopic]
    timeout_ms: int
    def __init__(self, topics: _Optional[_Iterable[_Union[DeleteRecordsRequest.DeleteRecordsTopic, _Mapping]]] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class DeleteRecordsResponse(_message.Message):
    __slots__ = ("topics",)
    class DeleteRecordsPartitionResult(_message.Message):
        __slots__ = ("partition_index", "low_watermark", "error_code", "error_message")
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        LOW_WATERMARK_FIELD_NUMBER: _ClassVar[int]
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        partition_index: int
        low_watermark: int
        error_code: int
        error_message: str
        def __init__(self, partition_index: _Optional[int] = ..., low_watermark: _Optional[int] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...
    class DeleteRecordsTopicResult(_message.Message):
        __slots__ = ("name", "partitions")
        NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        name: str
        partitions: _containers.RepeatedCompositeFieldContainer[DeleteRecordsResponse.DeleteRecordsPartitionResult]
        def __init__(self, name: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[DeleteRecordsResponse.DeleteRecordsPartitionResult, _Mapping]]] = ...) -> None: ...
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[DeleteRecordsResponse.DeleteRecordsTopicResult]
    def __init__(self, topics: _Optional[_Iterable[_Union[DeleteRecordsResponse.DeleteRecordsTopicResult, _Mapping]]] = ...) -> None: ...

class DescribeReplicasRequest(_message.Message):
    __slots__ = ("topics",)
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, topics: _Optional[_Iterable[str]] = ...) -> None: ...

class DescribeReplicasResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "broker_id", "broker_epoch", "controller_epoch", "partitions")
    class FollowerReplica(_message.Message):
        __slots__ = ("broker_id", "log_end_offset", "last_caught_up_time_ms")
        BROKER_ID_FIELD_NUMBER: _ClassVar[int]
        LOG_END_OFFSET_FIELD_NUMBER: _ClassVar[int]
        LAST_CAUGHT_UP_TIME_MS_FIELD_NUMBER: _ClassVar[int]
        broker_id: int
        log_end_offset: int
        last_caught_up_time_ms: int
        def __init__(self, broker_id: _Optional[int] = ..., log_end_offset: _Optional[int] = ..., last_caught_up_time_ms: _Optional[int] = ...) -> None: ...
    class HostedPartition(_message.Message):
        __slots__ = ("topic", "partition_index", "is_leader", "leader_id", "leader_epoch", "replica_nodes", "isr_nodes", "high_watermark", "log_start_offset", "log_end_offset", "followers")
        TOPIC_FIELD_NUMBER: _ClassVar[int]
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        IS_LEADER_FIELD_NUMBER: _ClassVar[int]
        LEADER_ID_FIELD_NUMBER: _ClassVar[int]
        LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
        REPLICA_NODES_FIELD_NUMBER: _ClassVar[int]
        ISR_NODES_FIELD_NUMBER: _ClassVar[int]
        HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
        LOG_START_OFFSET_FIELD_NUMBER: _ClassVar[int]
        LOG_END_OFFSET_FIELD_NUMBER: _ClassVar[int]
        FOLLOWERS_FIELD_NUMBER: _ClassVar[int]
        topic: str
        partition_index: int
        is_leader: bool
        leader_id: int
        leader_epoch: int
        replica_nodes: _containers.RepeatedScalarFieldContainer[int]
        isr_nodes: _containers.RepeatedScalarFieldContainer[int]
        high_watermark: int
        log_start_offset: int
        log_end_offset: int
        followers: _containers.RepeatedCompositeFieldContainer[DescribeReplicasResponse.FollowerReplica]
        def __init__(self, topic: _Optional[str] = ..., partition_index: _Optional[int] = ..., is_leader: _Optional[bool] = ..., leader_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., replica_nodes: _Optional[_Iterable[int]] = ..., isr_nodes: _Optional[_Iterable[int]] = ..., high_watermark: _Optional[int] = ..., log_start_offset: _Optional[int] = ..., log_end_offset: _Optional[int] = ..., followers: _Optional[_Iterable[_Union[DescribeReplicasResponse.FollowerReplica, _Mapping]]] = ...) -> None: ...
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    broker_id: int
    broker_epoch: int
    controller_epoch: int
    partitions: _containers.RepeatedCompositeFieldContainer[DescribeReplicasResponse.HostedPartition]
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., broker_id: _Optional[int] = ..., broker_epoch: _Optional[int] = ..., controller_epoch: _Optional[int] = ..., partitions: _Optional[_Iterable[_Union[DescribeReplicasResponse.HostedPartition, _Mapping]]] = ...) -> None: ...

class DescribeLogDirsRequest(_message.Message):
    __slots__ = ("all_topics", "topics")
    class Topic(_message.Message):
        __slots__ = ("topic", "partitions")
        TOPIC_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        topic: str
        partitions: _containers.RepeatedScalarFieldContainer[int]
        def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[int]] = ...) -> None: ...
    ALL_TOPICS_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    all_topics: bool
    topics: _containers.RepeatedCompositeFieldContainer[DescribeLogDirsRequest.Topic]
    def __init__(self, all_topics: _Optional[bool] = ..., topics: _Optional[_Iterable[_Union[DescribeLogDirsRequest.Topic, _Mapping]]] = ...) -> None: ...

class DescribeLogDirsResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "results")
    class Partition(_message.Message):
        __slots__ = ("partition_index", "partition_size", "offset_lag", "is_future_key")
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        PARTITION_SIZE_FIELD_NUMBER: _ClassVar[int]
        OFFSET_LAG_FIELD_NUMBER: _ClassVar[int]
        IS_FUTURE_KEY_FIELD_NUMBER: _ClassVar[int]
        partition_index: int
        partition_size: int
        offset_lag: int
        is_future_key: bool
        def __init__(self, partition_index: _Optional[int] = ..., partition_size: _Optional[int] = ..., offset_lag: _Optional[int] = ..., is_future_key: _Optional[bool] = ...) -> None: ...
    class Topic(_message.Message):
        __slots__ = ("name", "partitions")
        NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        name: str
        partitions: _containers.RepeatedCompositeFieldContainer[DescribeLogDirsResponse.Partition]
        def __init__(self, name: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[DescribeLogDirsResponse.Partition, _Mapping]]] = ...) -> None: ...
    class Result(_message.Message):
        __slots__ = ("error_code", "log_dir", "topics", "total_bytes", "usable_bytes", "error_message")
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        LOG_DIR_FIELD_NUMBER: _ClassVar[int]
        TOPICS_FIELD_NUMBER: _ClassVar[int]
        TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
        USABLE_BYTES_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        error_code: int
        log_dir: str
        topics: _containers.RepeatedCompositeFieldContainer[DescribeLogDirsResponse.Topic]
        total_bytes: int
        usable_bytes: int
        error_message: str
        def __init__(self, error_code: _Optional[int] = ..., log_dir: _Optional[str] = ..., topics: _Optional[_Iterable[_Union[DescribeLogDirsResponse.Topic, _Mapping]]] = ..., total_bytes: _Optional[int] = ..., usable_bytes: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    results: _containers.RepeatedCompositeFieldContainer[DescribeLogDirsResponse.Result]
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., results: _Optional[_Iterable[_Union[DescribeLogDirsResponse.Result, _Mapping]]] = ...) -> None: ...

class AlterReplicaLogDirsRequest(_message.Message):
    __slots__ = ("dirs",)
    class Topic(_message.Message):
        __slots__ = ("name", "partitions")
        NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        name: str
        partitions: _containers.RepeatedScalarFieldContainer[int]
        def __init__(self, name: _Optional[str] = ..., partitions: _Optional[_Iterable[int]] = ...) -> None: ...
    class Dir(_message.Message):
        __slots__ = ("path", "topics")
        PATH_FIELD_NUMBER: _ClassVar[int]
        TOPICS_FIELD_NUMBER: _ClassVar[int]
        path: str
        topics: _containers.RepeatedCompositeFieldContainer[AlterReplicaLogDirsRequest.Topic]
        def __init__(self, path: _Optional[str] = ..., topics: _Optional[_Iterable[_Union[AlterReplicaLogDirsRequest.Topic, _Mapping]]] = ...) -> None: ...
    DIRS_FIELD_NUMBER: _ClassVar[int]
    dirs: _containers.RepeatedCompositeFieldContainer[AlterReplicaLogDirsRequest.Dir]
    def __init__(self, dirs: _Optional[_Iterable[_Union[AlterReplicaLogDirsRequest.Dir, _Mapping]]] = ...) -> None: ...

class AlterReplicaLogDirsResponse(_message.Message):
    __slots__ = ("results",)
    class PartitionResult(_message.Message):
        __slots__ = ("partition_index", "error_code", "error_message")
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        partition_index: int
        error_code: int
        error_message: str
        def __init__(self, partition_index: _Optional[int] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...
    class TopicResult(_message.Message):
        __slots__ = ("topic_name", "partitions")
        TOPIC_NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        topic_name: str
        partitions: _containers.RepeatedCompositeFieldContainer[AlterReplicaLogDirsResponse.PartitionResult]
        def __init__(self, topic_name: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[AlterReplicaLogDirsResponse.PartitionResult, _Mapping]]] = ...) -> None: ...
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[AlterReplicaLogDirsResponse.TopicResult]
    def __init__(self, results: _Optional[_Iterable[_Union[AlterReplicaLogDirsResponse.TopicResult, _Mapping]]] = ...) -> None: ...

class WriteTxnMarkersRequest(_message.Message):
    __slots__ = ("markers",)
    class WritableTxnMarkerTopic(_message.Message):
        __slots__ = ("name", "partition_indexes")
        NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITION_INDEXES_FIELD_NUMBER: _ClassVar[int]
        name: str
        partition_indexes: _containers.RepeatedScalarFieldContainer[int]
        def __init__(self, name: _Optional[str] = ..., partition_indexes: _Optional[_Iterable[int]] = ...) -> None: ...
    class WritableTxnMarker(_message.Message):
        __slots__ = ("producer_id", "producer_epoch", "transaction_result", "topics", "coordinator_epoch")
        PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
        PRODUCER_EPOCH_FIELD_NUMBER: _ClassVar[int]
        TRANSACTION_RESULT_FIELD_NUMBER: _ClassVar[int]
        TOPICS_FIELD_NUMBER: _ClassVar[int]
        COORDINATOR_EPOCH_FIELD_NUMBER: _ClassVar[int]
        producer_id: int
        producer_epoch: int
        transaction_result: bool
        topics: _containers.RepeatedCompositeFieldContainer[WriteTxnMarkersRequest.WritableTxnMarkerTopic]
        coordinator_epoch: int
        def __init__(self, producer_id: _Optional[int] = ..., producer_epoch: _Optional[int] = ..., transaction_result: _Optional[bool] = ..., topics: _Optional[_Iterable[_Union[WriteTxnMarkersRequest.WritableTxnMarkerTopic, _Mapping]]] = ..., coordinator_epoch: _Optional[int] = ...) -> None: ...
    MARKERS_FIELD_NUMBER: _ClassVar[int]
    markers: _containers.RepeatedCompositeFieldContainer[WriteTxnMarkersRequest.WritableTxnMarker]
    def __init__(self, markers: _Optional[_Iterable[_Union[WriteTxnMarkersRequest.WritableTxnMarker, _Mapping]]] = ...) -> None: ...

class WriteTxnMarkersResponse(_message.Message):
    __slots__ = ("markers",)
    class WritableTxnMarkerPartitionResult(_message.Message):
        __slots__ = ("partition_index", "error_code", "error_message")
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        partition_index: int
        error_code: int
        error_message: str
        def __init__(self, partition_index: _Optional[int] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...
    class WritableTxnMarkerTopicResult(_message.Message):
        __slots__ = ("name", "partitions")
        NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        name: str
        partitions: _containers.RepeatedCompositeFieldContainer[WriteTxnMarkersResponse.WritableTxnMarkerPartitionResult]
        def __init__(self, name: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[WriteTxnMarkersResponse.WritableTxnMarkerPartitionResult, _Mapping]]] = ...) -> None: ...
    class WritableTxnMarkerResult(_message.Message):
        __slots__ = ("producer_id", "topics")
        PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
        TOPICS_FIELD_NUMBER: _ClassVar[int]
        producer_id: int
        topics: _containers.RepeatedCompositeFieldContainer[WriteTxnMarkersResponse.WritableTxnMarkerTopicResult]
        def __init__(self, producer_id: _Optional[int] = ..., topics: _Optional[_Iterable[_Union[WriteTxnMarkersResponse.WritableTxnMarkerTopicResult, _Mapping]]] = ...) -> None: ...
    MARKERS_FIELD_NUMBER: _ClassVar[int]
    markers: _containers.RepeatedCompositeFieldContainer[WriteTxnMarkersResponse.WritableTxnMarkerResult]
    def __init__(self, markers: _Optional[_Iterable[_Union[WriteTxnMarkersResponse.WritableTxnMarkerResult, _Mapping]]] = ...) -> None: ...

class LeaderAndIsrRequest(_message.Message):
    __slots__ = ("controller_id", "controller_epoch", "broker_epoch", "partition_states", "live_leaders")
    class LeaderAndIsrPartitionState(_message.Message):
        __slots__ = ("topic_name", "topic_id", "partition_index", "controller_epoch", "leader", "leader_epoch", "isr", "partition_epoch", "replicas", "adding_replicas", "removing_replicas", "is_new")
        TOPIC_NAME_FIELD_NUMBER: _ClassVar[int]
        TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        CONTROLLER_EPOCH_FIELD_NUMBER: _ClassVar[int]
        LEADER_FIELD_NUMBER: _ClassVar[int]
        LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
        ISR_FIELD_NUMBER: _ClassVar[int]
        PARTITION_EPOCH_FIELD_NUMBER: _ClassVar[int]
        REPLICAS_FIELD_NUMBER: _ClassVar[int]
        ADDING_REPLICAS_FIELD_NUMBER: _ClassVar[int]
        REMOVING_REPLICAS_FIELD_NUMBER: _ClassVar[int]
        IS_NEW_FIELD_NUMBER: _ClassVar[int]
        topic_name: str
        topic_id: str
        partition_index: int
        controller_epoch: int
        leader: int
        leader_epoch: int
        isr: _containers.RepeatedScalarFieldContainer[int]
        partition_epoch: int
        replicas: _containers.RepeatedScalarFieldContainer[int]
        adding_replicas: _containers.RepeatedScalarFieldContainer[int]
        removing_replicas: _containers.RepeatedScalarFieldContainer[int]
        is_new: bool
        def __init__(self, topic_name: _Optional[str] = ..., topic_id: _Optional[str] = ..., partition_index: _Optional[int] = ..., controller_epoch: _Optional[int] = ..., leader: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., isr: _Optional[_Iterable[int]] = ..., partition_epoch: _Optional[int] = ..., replicas: _Optional[_Iterable[int]] = ..., adding_replicas: _Optional[_Iterable[int]] = ..., removing_replicas: _Optional[_Iterable[int]] = ..., is_new: _Optional[bool] = ...) -> None: ...
    class LeaderAndIsrLiveLeader(_message.Message):
        __slots__ = ("broker_id", "host_name", "port")
        BROKER_ID_FIELD_NUMBER: _ClassVar[int]
        HOST_NAME_FIELD_NUMBER: _ClassVar[int]
        PORT_FIELD_NUMBER: _ClassVar[int]
        broker_id: int
        host_name: str
        port: int
        def __init__(self, broker_id: _Optional[int] = ..., host_name: _Optional[str] = ..., port: _Optional[int] = ...) -> None: ...
    CONTROLLER_ID_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PARTITION_STATES_FIELD_NUMBER: _ClassVar[int]
    LIVE_LEADERS_FIELD_NUMBER: _ClassVar[int]
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partition_states: _containers.RepeatedCompositeFieldContainer[LeaderAndIsrRequest.LeaderAndIsrPartitionState]
    live_leaders: _containers.RepeatedCompositeFieldContainer[LeaderAndIsrRequest.LeaderAndIsrLiveLeader]
    def __init__(self, controller_id: _Optional[int] = ..., controller_epoch: _Optional[int] = ..., broker_epoch: _Optional[int] = ..., partition_states: _Optional[_Iterable[_Union[LeaderAndIsrRequest.LeaderAndIsrPartitionState, _Mapping]]] = ..., live_leaders: _Optional[_Iterable[_Union[LeaderAndIsrRequest.LeaderAndIsrLiveLeader, _Mapping]]] = ...) -> None: ...

class LeaderAndIsrResponse(_message.Message):
    __slots__ = ("error_code", "partition_errors", "error_message")
    class LeaderAndIsrPartitionError(_message.Message):
        __slots__ = ("topic_name", "partition_index", "error_code", "error_message")
        TOPIC_NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        topic_name: str
        partition_index: int
        error_code: int
        error_message: str
        def __init__(self, topic_name: _Optional[str] = ..., partition_index: _Optional[int] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    PARTITION_ERRORS_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    partition_errors: _containers.RepeatedCompositeFieldContainer[LeaderAndIsrResponse.LeaderAndIsrPartitionError]
    error_message: str
    def __init__(self, error_code: _Optional[int] = ..., partition_errors: _Optional[_Iterable[_Union[LeaderAndIsrResponse.LeaderAndIsrPartitionError, _Mapping]]] = ..., error_message: _Optional[str] = ...) -> None: ...

class UpdateMetadataRequest(_message.Message):
    __slots__ = ("controller_id", "controller_epoch", "broker_epoch", "partition_states", "live_brokers")
    class UpdateMetadataPartitionState(_message.Message):
        __slots__ = ("topic_name", "topic_id", "partition_index", "controller_epoch", "leader", "leader_epoch", "isr", "partition_epoch", "replicas", "offline_replicas")
        TOPIC_NAME_FIELD_NUMBER: _ClassVar[int]
        TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        CONTROLLER_EPOCH_FIELD_NUMBER: _ClassVar[int]
        LEADER_FIELD_NUMBER: _ClassVar[int]
        LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
        ISR_FIELD_NUMBER: _ClassVar[int]
        PARTITION_EPOCH_FIELD_NUMBER: _ClassVar[int]
        REPLICAS_FIELD_NUMBER: _ClassVar[int]
        OFFLINE_REPLICAS_FIELD_NUMBER: _ClassVar[int]
        topic_name: str
        topic_id: str
        partition_index: int
        controller_epoch: int
        leader: int
        leader_epoch: int
        isr: _containers.RepeatedScalarFieldContainer[int]
        partition_epoch: int
        replicas: _containers.RepeatedScalarFieldContainer[int]
        offline_replicas: _containers.RepeatedScalarFieldContainer[int]
        def __init__(self, topic_name: _Optional[str] = ..., topic_id: _Optional[str] = ..., partition_index: _Optional[int] = ..., controller_epoch: _Optional[int] = ..., leader: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., isr: _Optional[_Iterable[int]] = ..., partition_epoch: _Optional[int] = ..., replicas: _Optional[_Iterable[int]] = ..., offline_replicas: _Optional[_Iterable[int]] = ...) -> None: ...
    class UpdateMetadataEndpoint(_message.Message):
        __slots__ = ("port", "host", "listener", "security_protocol")
        PORT_FIELD_NUMBER: _ClassVar[int]
        HOST_FIELD_NUMBER: _ClassVar[int]
        LISTENER_FIELD_NUMBER: _ClassVar[int]
        SECURITY_PROTOCOL_FIELD_NUMBER: _ClassVar[int]
        port: int
        host: str
        listener: str
        security_protocol: int
        def __init__(self, port: _Optional[int] = ..., host: _Optional[str] = ..., listener: _Optional[str] = ..., security_protocol: _Optional[int] = ...) -> None: ...
    class UpdateMetadataBroker(_message.Message):
        __slots__ = ("id", "host", "port", "rack", "endpoints")
        ID_FIELD_NUMBER: _ClassVar[int]
        HOST_FIELD_NUMBER: _ClassVar[int]
        PORT_FIELD_NUMBER: _ClassVar[int]
        RACK_FIELD_NUMBER: _ClassVar[int]
        ENDPOINTS_FIELD_NUMBER: _ClassVar[int]
        id: int
        host: str
        port: int
        rack: str
        endpoints: _containers.RepeatedCompositeFieldContainer[UpdateMetadataRequest.UpdateMetadataEndpoint]
        def __init__(self, id: _Optional[int] = ..., host: _Optional[str] = ..., port: _Optional[int] = ..., rack: _Optional[str] = ..., endpoints: _Optional[_Iterable[_Union[UpdateMetadataRequest.UpdateMetadataEndpoint, _Mapping]]] = ...) -> None: ...
    CONTROLLER_ID_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PARTITION_STATES_FIELD_NUMBER: _ClassVar[int]
    LIVE_BROKERS_FIELD_NUMBER: _ClassVar[int]
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partition_states: _containers.RepeatedCompositeFieldContainer[UpdateMetadataRequest.UpdateMetadataPartitionState]
    live_brokers: _containers.RepeatedCompositeFieldContainer[UpdateMetadataRequest.UpdateMetadataBroker]
    def __init__(self, controller_id: _Optional[int] = ..., controller_epoch: _Optional[int] = ..., broker_epoch: _Optional[int] = ..., partition_states: _Optional[_Iterable[_Union[UpdateMetadataRequest.UpdateMetadataPartitionState, _Mapping]]] = ..., live_brokers: _Optional[_Iterable[_Union[UpdateMetadataRequest.UpdateMetadataBroker, _Mapping]]] = ...) -> None: ...

class UpdateMetadataResponse(_message.Message):
    __slots__ = ("error_code", "error_message")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...

class StopReplicaRequest(_message.Message):
    __slots__ = ("controller_id", "controller_epoch", "broker_epoch", "partition_states")
    class StopReplicaPartitionState(_message.Message):
        __slots__ = ("topic_name", "partition_index", "leader_epoch", "delete_partition")
        TOPIC_NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
        DELETE_PARTITION_FIELD_NUMBER: _ClassVar[int]
        topic_name: str
        partition_index: int
        leader_epoch: int
        delete_partition: bool
        def __init__(self, topic_name: _Optional[str] = ..., partition_index: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., delete_partition: _Optional[bool] = ...) -> None: ...
    CONTROLLER_ID_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PARTITION_STATES_FIELD_NUMBER: _ClassVar[int]
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partition_states: _containers.RepeatedCompositeFieldContainer[StopReplicaRequest.StopReplicaPartitionState]
    def __init__(self, controller_id: _Optional[int] = ..., controller_epoch: _Optional[int] = ..., broker_epoch: _Optional[int] = ..., partition_states: _Optional[_Iterable[_Union[StopReplicaRequest.StopReplicaPartitionState, _Mapping]]] = ...) -> None: ...

class StopReplicaResponse(_message.Message):
    __slots__ = ("error_code", "partition_errors", "error_message")
    class StopReplicaPartitionError(_message.Message):
        __slots__ = ("topic_name", "partition_index", "error_code", "error_message")
        TOPIC_NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        topic_name: str
        partition_index: int
        error_code: int
        error_message: str
        def __init__(self, topic_name: _Optional[str] = ..., partition_index: _Optional[int] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    PARTITION_ERRORS_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    partition_errors: _containers.RepeatedCompositeFieldContainer[StopReplicaResponse.StopReplicaPartitionError]
    error_message: str
    def __init__(self, error_code: _Optional[int] = ..., partition_errors: _Optional[_Iterable[_Union[StopReplicaResponse.StopReplicaPartitionError, _Mapping]]] = ..., error_message: _Optional[str] = ...) -> None: ...

class ControlledShutdownRequest(_message.Message):
    __slots__ = ("broker_id", "broker_epoch")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    broker_epoch: int
    def __init__(self, broker_id: _Optional[int] = ..., broker_epoch: _Optional[int] = ...) -> None: ...

class ControlledShutdownResponse(_message.Message):
    __slots__ = ("error_code", "remaining_partitions")
    class RemainingPartition(_message.Message):
        __slots__ = ("topic_name", "partition_index")
        TOPIC_NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        topic_name: str
        partition_index: int
        def __init__(self, topic_name: _Optional[str] = ..., partition_index: _Optional[int] = ...) -> None: ...
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    REMAINING_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    remaining_partitions: _containers.RepeatedCompositeFieldContainer[ControlledShutdownResponse.RemainingPartition]
    def __init__(self, error_code: _Optional[int] = ..., remaining_partitions: _Optional[_Iterable[_Union[ControlledShutdownResponse.RemainingPartition, _Mapping]]] = ...) -> None: ...

class TxnOffsetCommitRequest(_message.Message):
    __slots__ = ("transactional_id", "group_id", "producer_id", "producer_epoch", "generation_id", "member_id", "group_instance_id", "topics")
    class TxnOffsetCommitRequestPartition(_message.Message):
        __slots__ = ("partition_index", "committed_offset", "committed_leader_epoch", "committed_metadata")
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        COMMITTED_OFFSET_FIELD_NUMBER: _ClassVar[int]
        COMMITTED_LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
        COMMITTED_METADATA_FIELD_NUMBER: _ClassVar[int]
        partition_index: int
        committed_offset: int
        committed_leader_epoch: int
        committed_metadata: str
        def __init__(self, partition_index: _Optional[int] = ..., committed_offset: _Optional[int] = ..., committed_leader_epoch: _Optional[int] = ..., committed_metadata: _Optional[str] = ...) -> None: ...
    class TxnOffsetCommitRequestTopic(_message.Message):
        __slots__ = ("name", "partitions")
        NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        name: str
        partitions: _containers.RepeatedCompositeFieldContainer[TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition]
        def __init__(self, name: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition, _Mapping]]] = ...) -> None: ...
    TRANSACTIONAL_ID_FIELD_NUMBER: _ClassVar[int]
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    GENERATION_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBER_ID_FIELD_NUMBER: _ClassVar[int]
    GROUP_INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    transactional_id: str
    group_id: str
    producer_id: int
    producer_epoch: int
    generation_id: int
    member_id: str
    group_instance_id: str
    topics: _containers.RepeatedCompositeFieldContainer[TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic]
    def __init__(self, transactional_id: _Optional[str] = ..., group_id: _Optional[str] = ..., producer_id: _Optional[int] = ..., producer_epoch: _Optional[int] = ..., generation_id: _Optional[int] = ..., member_id: _Optional[str] = ..., group_instance_id: _Optional[str] = ..., topics: _Optional[_Iterable[_Union[TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic, _Mapping]]] = ...) -> None: ...

class TxnOffsetCommitResponse(_message.Message):
    __slots__ = ("topics",)
    class TxnOffsetCommitResponsePartition(_message.Message):
        __slots__ = ("partition_index", "error_code", "error_message")
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        partition_index: int
        error_code: int
        error_message: str
        def __init__(self, partition_index: _Optional[int] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...
    class TxnOffsetCommitResponseTopic(_message.Message):
        __slots__ = ("name", "partitions")
        NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        name: str
        partitions: _containers.RepeatedCompositeFieldContainer[TxnOffsetCommitResponse.TxnOffsetCommitResponsePartition]
        def __init__(self, name: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[TxnOffsetCommitResponse.TxnOffsetCommitResponsePartition, _Mapping]]] = ...) -> None: ...
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic]
    def __init__(self, topics: _Optional[_Iterable[_Union[TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic, _Mapping]]] = ...) -> None: ...

class FindCoordinatorRequest(_message.Message):
    __slots__ = ("key", "key_type")
    KEY_FIELD_NUMBER: _ClassVar[int]
    KEY_TYPE_FIELD_NUMBER: _ClassVar[int]
    key: str
    key_type: int
    def __init__(self, key: _Optional[str] = ..., key_type: _Optional[int] = ...) -> None: ...

class FindCoordinatorResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "node_id", "host", "port")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    node_id: int
    host: str
    port: int
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., node_id: _Optional[int] = ..., host: _Optional[str] = ..., port: _Optional[int] = ...) -> None: ...

class JoinGroupRequest(_message.Message):
    __slots__ = ("group_id", "session_timeout_ms", "rebalance_timeout_ms", "member_id", "group_instance_id", "protocol_type", "protocols", "reason", "client_id")
    class JoinGroupRequestProtocol(_message.Message):
        __slots__ = ("name", "metadata")
        NAME_FIELD_NUMBER: _ClassVar[int]
        METADATA_FIELD_NUMBER: _ClassVar[int]
        name: str
        metadata: bytes
        def __init__(self, name: _Optional[str] = ..., metadata: _Optional[bytes] = ...) -> None: ...
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    REBALANCE_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    MEMBER_ID_FIELD_NUMBER: _ClassVar[int]
    GROUP_INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_TYPE_FIELD_NUMBER: _ClassVar[int]
    PROTOCOLS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    member_id: str
    group_instance_id: str
    protocol_type: str
    protocols: _containers.RepeatedCompositeFieldContainer[JoinGroupRequest.JoinGroupRequestProtocol]
    reason: str
    client_id: str
    def __init__(self, group_id: _Optional[str] = ..., session_timeout_ms: _Optional[int] = ..., rebalance_timeout_ms: _Optional[int] = ..., member_id: _Optional[str] = ..., group_instance_id: _Optional[str] = ..., protocol_type: _Optional[str] = ..., protocols: _Optional[_Iterable[_Union[JoinGroupRequest.JoinGroupRequestProtocol, _Mapping]]] = ..., reason: _Optional[str] = ..., client_id: _Optional[str] = ...) -> None: ...

class JoinGroupResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "generation_id", "protocol_type", "protocol_name", "leader", "member_id", "members")
    class JoinGroupResponseMember(_message.Message):
        __slots__ = ("member_id", "group_instance_id", "metadata")
        MEMBER_ID_FIELD_NUMBER: _ClassVar[int]
        GROUP_INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
        METADATA_FIELD_NUMBER: _ClassVar[int]
        member_id: str
        group_instance_id: str
        metadata: bytes
        def __init__(self, member_id: _Optional[str] = ..., group_instance_id: _Optional[str] = ..., metadata: _Optional[bytes] = ...) -> None: ...
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    GENERATION_ID_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_TYPE_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_NAME_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    MEMBER_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    generation_id: int
    protocol_type: str
    protocol_name: str
    leader: str
    member_id: str
    members: _containers.RepeatedCompositeFieldContainer[JoinGroupResponse.JoinGroupResponseMember]
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., generation_id: _Optional[int] = ..., protocol_type: _Optional[str] = ..., protocol_name: _Optional[str] = ..., leader: _Optional[str] = ..., member_id: _Optional[str] = ..., members: _Optional[_Iterable[_Union[JoinGroupResponse.JoinGroupResponseMember, _Mapping]]] = ...) -> None: ...

class SyncGroupRequest(_message.Message):
    __slots__ = ("group_id", "generation_id", "member_id", "group_instance_id", "protocol_type", "protocol_name", "assignments")
    class SyncGroupRequestAssignment(_message.Message):
        __slots__ = ("member_id", "assignment")
        MEMBER_ID_FIELD_NUMBER: _ClassVar[int]
        ASSIGNMENT_FIELD_NUMBER: _ClassVar[int]
        member_id: str
        assignment: bytes
        def __init__(self, member_id: _Optional[str] = ..., assignment: _Optional[bytes] = ...) -> None: ...
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    GENERATION_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBER_ID_FIELD_NUMBER: _ClassVar[int]
    GROUP_INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_TYPE_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_NAME_FIELD_NUMBER: _ClassVar[int]
    ASSIGNMENTS_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str
    protocol_type: str
    protocol_name: str
    assignments: _containers.RepeatedCompositeFieldContainer[SyncGroupRequest.SyncGroupRequestAssignment]
    def __init__(self, group_id: _Optional[str] = ..., generation_id: _Optional[int] = ..., member_id: _Optional[str] = ..., group_instance_id: _Optional[str] = ..., protocol_type: _Optional[str] = ..., protocol_name: _Optional[str] = ..., assignments: _Optional[_Iterable[_Union[SyncGroupRequest.SyncGroupRequestAssignment, _Mapping]]] = ...) -> None: ...

class SyncGroupResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "protocol_type", "protocol_name", "assignment")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_TYPE_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_NAME_FIELD_NUMBER: _ClassVar[int]
    ASSIGNMENT_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    protocol_type: str
    protocol_name: str
    assignment: bytes
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., protocol_type: _Optional[str] = ..., protocol_name: _Optional[str] = ..., assignment: _Optional[bytes] = ...) -> None: ...

class HeartbeatRequest(_message.Message):
    __slots__ = ("group_id", "generation_id", "member_id", "group_instance_id")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    GENERATION_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBER_ID_FIELD_NUMBER: _ClassVar[int]
    GROUP_INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str
    def __init__(self, group_id: _Optional[str] = ..., generation_id: _Optional[int] = ..., member_id: _Optional[str] = ..., group_instance_id: _Optional[str] = ...) -> None: ...

class HeartbeatResponse(_message.Message):
    __slots__ = ("error_code", "error_message")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...

class LeaveGroupRequest(_message.Message):
    __slots__ = ("group_id", "members")
    class MemberIdentity(_message.Message):
        __slots__ = ("member_id", "group_instance_id", "reason")
        MEMBER_ID_FIELD_NUMBER: _ClassVar[int]
        GROUP_INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
        REASON_FIELD_NUMBER: _ClassVar[int]
        member_id: str
        group_instance_id: str
        reason: str
        def __init__(self, member_id: _Optional[str] = ..., group_instance_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    members: _containers.RepeatedCompositeFieldContainer[LeaveGroupRequest.MemberIdentity]
    def __init__(self, group_id: _Optional[str] = ..., members: _Optional[_Iterable[_Union[LeaveGroupRequest.MemberIdentity, _Mapping]]] = ...) -> None: ...

class LeaveGroupResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "members")
    class MemberResponse(_message.Message):
        __slots__ = ("member_id", "group_instance_id", "error_code", "error_message")
        MEMBER_ID_FIELD_NUMBER: _ClassVar[int]
        GROUP_INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        member_id: str
        group_instance_id: str
        error_code: int
        error_message: str
        def __init__(self, member_id: _Optional[str] = ..., group_instance_id: _Optional[str] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    members: _containers.RepeatedCompositeFieldContainer[LeaveGroupResponse.MemberResponse]
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., members: _Optional[_Iterable[_Union[LeaveGroupResponse.MemberResponse, _Mapping]]] = ...) -> None: ...

class OffsetCommitRequest(_message.Message):
    __slots__ = ("group_id", "generation_id", "member_id", "group_instance_id", "topics")
    class OffsetCommitRequestPartition(_message.Message):
        __slots__ = ("partition_index", "committed_offset", "committed_leader_epoch", "committed_metadata")
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        COMMITTED_OFFSET_FIELD_NUMBER: _ClassVar[int]
        COMMITTED_LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
        COMMITTED_METADATA_FIELD_NUMBER: _ClassVar[int]
        partition_index: int
        committed_offset: int
        committed_leader_epoch: int
        committed_metadata: str
        def __init__(self, partition_index: _Optional[int] = ..., committed_offset: _Optional[int] = ..., committed_leader_epoch: _Optional[int] = ..., committed_metadata: _Optional[str] = ...) -> None: ...
    class OffsetCommitRequestTopic(_message.Message):
        __slots__ = ("name", "partitions")
        NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        name: str
        partitions: _containers.RepeatedCompositeFieldContainer[OffsetCommitRequest.OffsetCommitRequestPartition]
        def __init__(self, name: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[OffsetCommitRequest.OffsetCommitRequestPartition, _Mapping]]] = ...) -> None: ...
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    GENERATION_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBER_ID_FIELD_NUMBER: _ClassVar[int]
    GROUP_INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str
    topics: _containers.RepeatedCompositeFieldContainer[OffsetCommitRequest.OffsetCommitRequestTopic]
    def __init__(self, group_id: _Optional[str] = ..., generation_id: _Optional[int] = ..., member_id: _Optional[str] = ..., group_instance_id: _Optional[str] = ..., topics: _Optional[_Iterable[_Union[OffsetCommitRequest.OffsetCommitRequestTopic, _Mapping]]] = ...) -> None: ...

class OffsetCommitResponse(_message.Message):
    __slots__ = ("topics",)
    class OffsetCommitResponsePartition(_message.Message):
        __slots__ = ("partition_index", "error_code", "error_message")
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        partition_index: int
        error_code: int
        error_message: str
        def __init__(self, partition_index: _Optional[int] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...
    class OffsetCommitResponseTopic(_message.Message):
        __slots__ = ("name", "partitions")
        NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        name: str
        partitions: _containers.RepeatedCompositeFieldContainer[OffsetCommitResponse.OffsetCommitResponsePartition]
        def __init__(self, name: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[OffsetCommitResponse.OffsetCommitResponsePartition, _Mapping]]] = ...) -> None: ...
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[OffsetCommitResponse.OffsetCommitResponseTopic]
    def __init__(self, topics: _Optional[_Iterable[_Union[OffsetCommitResponse.OffsetCommitResponseTopic, _Mapping]]] = ...) -> None: ...

class OffsetFetchRequest(_message.Message):
    __slots__ = ("group_id", "topics", "all_topics", "require_stable")
    class OffsetFetchRequestTopic(_message.Message):
        __slots__ = ("name", "partition_indexes")
        NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITION_INDEXES_FIELD_NUMBER: _ClassVar[int]
        name: str
        partition_indexes: _containers.RepeatedScalarFieldContainer[int]
        def __init__(self, name: _Optional[str] = ..., partition_indexes: _Optional[_Iterable[int]] = ...) -> None: ...
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    ALL_TOPICS_FIELD_NUMBER: _ClassVar[int]
    REQUIRE_STABLE_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    topics: _containers.RepeatedCompositeFieldContainer[OffsetFetchRequest.OffsetFetchRequestTopic]
    all_topics: bool
    require_stable: bool
    def __init__(self, group_id: _Optional[str] = ..., topics: _Optional[_Iterable[_Union[OffsetFetchRequest.OffsetFetchRequestTopic, _Mapping]]] = ..., all_topics: _Optional[bool] = ..., require_stable: _Optional[bool] = ...) -> None: ...

class OffsetFetchResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "topics")
    class OffsetFetchResponsePartition(_message.Message):
        __slots__ = ("partition_index", "committed_offset", "committed_leader_epoch", "metadata", "error_code", "error_message")
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        COMMITTED_OFFSET_FIELD_NUMBER: _ClassVar[int]
        COMMITTED_LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
        METADATA_FIELD_NUMBER: _ClassVar[int]
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        partition_index: int
        committed_offset: int
        committed_leader_epoch: int
        metadata: str
        error_code: int
        error_message: str
        def __init__(self, partition_index: _Optional[int] = ..., committed_offset: _Optional[int] = ..., committed_leader_epoch: _Optional[int] = ..., metadata: _Optional[str] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...
    class OffsetFetchResponseTopic(_message.Message):
        __slots__ = ("name", "partitions")
        NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        name: str
        partitions: _containers.RepeatedCompositeFieldContainer[OffsetFetchResponse.OffsetFetchResponsePartition]
        def __init__(self, name: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[OffsetFetchResponse.OffsetFetchResponsePartition, _Mapping]]] = ...) -> None: ...
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    topics: _containers.RepeatedCompositeFieldContainer[OffsetFetchResponse.OffsetFetchResponseTopic]
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., topics: _Optional[_Iterable[_Union[OffsetFetchResponse.OffsetFetchResponseTopic, _Mapping]]] = ...) -> None: ...

class ListGroupsRequest(_message.Message):
    __slots__ = ("states_filter",)
    STATES_FILTER_FIELD_NUMBER: _ClassVar[int]
    states_filter: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, states_filter: _Optional[_Iterable[str]] = ...) -> None: ...

class ListGroupsResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "groups")
    class ListedGroup(_message.Message):
        __slots__ = ("group_id", "protocol_type", "group_state")
        GROUP_ID_FIELD_NUMBER: _ClassVar[int]
        PROTOCOL_TYPE_FIELD_NUMBER: _ClassVar[int]
        GROUP_STATE_FIELD_NUMBER: _ClassVar[int]
        group_id: str
        protocol_type: str
        group_state: str
        def __init__(self, group_id: _Optional[str] = ..., protocol_type: _Optional[str] = ..., group_state: _Optional[str] = ...) -> None: ...
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    groups: _containers.RepeatedCompositeFieldContainer[ListGroupsResponse.ListedGroup]
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., groups: _Optional[_Iterable[_Union[ListGroupsResponse.ListedGroup, _Mapping]]] = ...) -> None: ...

class DescribeGroupsRequest(_message.Message):
    __slots__ = ("groups",)
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    groups: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, groups: _Optional[_Iterable[str]] = ...) -> None: ...

class DescribeGroupsResponse(_message.Message):
    __slots__ = ("groups",)
    class DescribedGroupMember(_message.Message):
        __slots__ = ("member_id", "group_instance_id", "client_id", "client_host", "member_metadata", "member_assignment")
        MEMBER_ID_FIELD_NUMBER: _ClassVar[int]
        GROUP_INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
        CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
        CLIENT_HOST_FIELD_NUMBER: _ClassVar[int]
        MEMBER_METADATA_FIELD_NUMBER: _ClassVar[int]
        MEMBER_ASSIGNMENT_FIELD_NUMBER: _ClassVar[int]
        member_id: str
        group_instance_id: str
        client_id: str
        client_host: str
        member_metadata: bytes
        member_assignment: bytes
        def __init__(self, member_id: _Optional[str] = ..., group_instance_id: _Optional[str] = ..., client_id: _Optional[str] = ..., client_host: _Optional[str] = ..., member_metadata: _Optional[bytes] = ..., member_assignment: _Optional[bytes] = ...) -> None: ...
    class DescribedGroup(_message.Message):
        __slots__ = ("error_code", "error_message", "group_id", "group_state", "protocol_type", "protocol_data", "members")
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        GROUP_ID_FIELD_NUMBER: _ClassVar[int]
        GROUP_STATE_FIELD_NUMBER: _ClassVar[int]
        PROTOCOL_TYPE_FIELD_NUMBER: _ClassVar[int]
        PROTOCOL_DATA_FIELD_NUMBER: _ClassVar[int]
        MEMBERS_FIELD_NUMBER: _ClassVar[int]
        error_code: int
        error_message: str
        group_id: str
        group_state: str
        protocol_type: str
        protocol_data: str
        members: _containers.RepeatedCompositeFieldContainer[DescribeGroupsResponse.DescribedGroupMember]
        def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., group_id: _Optional[str] = ..., group_state: _Optional[str] = ..., protocol_type: _Optional[str] = ..., protocol_data: _Optional[str] = ..., members: _Optional[_Iterable[_Union[DescribeGroupsResponse.DescribedGroupMember, _Mapping]]] = ...) -> None: ...
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    groups: _containers.RepeatedCompositeFieldContainer[DescribeGroupsResponse.DescribedGroup]
    def __init__(self, groups: _Optional[_Iterable[_Union[DescribeGroupsResponse.DescribedGroup, _Mapping]]] = ...) -> None: ...

class DeleteGroupsRequest(_message.Message):
    __slots__ = ("groups_names",)
    GROUPS_NAMES_FIELD_NUMBER: _ClassVar[int]
    groups_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, groups_names: _Optional[_Iterable[str]] = ...) -> None: ...

class DeleteGroupsResponse(_message.Message):
    __slots__ = ("results",)
    class DeletableGroupResult(_message.Message):
        __slots__ = ("group_id", "error_code", "error_message")
        GROUP_ID_FIELD_NUMBER: _ClassVar[int]
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        group_id: str
        error_code: int
        error_message: str
        def __init__(self, group_id: _Optional[str] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[DeleteGroupsResponse.DeletableGroupResult]
    def __init__(self, results: _Optional[_Iterable[_Union[DeleteGroupsResponse.DeletableGroupResult, _Mapping]]] = ...) -> None: ...

class SaslHandshakeRequest(_message.Message):
    __slots__ = ("mechanism",)
    MECHANISM_FIELD_NUMBER: _ClassVar[int]
    mechanism: str
    def __init__(self, mechanism: _Optional[str] = ...) -> None: ...

class SaslHandshakeResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "mechanisms", "handshake_id")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    MECHANISMS_FIELD_NUMBER: _ClassVar[int]
    HANDSHAKE_ID_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    mechanisms: _containers.RepeatedScalarFieldContainer[str]
    handshake_id: str
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., mechanisms: _Optional[_Iterable[str]] = ..., handshake_id: _Optional[str] = ...) -> None: ...

class SaslAuthenticateRequest(_message.Message):
    __slots__ = ("handshake_id", "auth_bytes")
    HANDSHAKE_ID_FIELD_NUMBER: _ClassVar[int]
    AUTH_BYTES_FIELD_NUMBER: _ClassVar[int]
    handshake_id: str
    auth_bytes: bytes
    def __init__(self, handshake_id: _Optional[str] = ..., auth_bytes: _Optional[bytes] = ...) -> None: ...

class SaslAuthenticateResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "auth_bytes", "session_token", "session_lifetime_ms")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    AUTH_BYTES_FIELD_NUMBER: _ClassVar[int]
    SESSION_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SESSION_LIFETIME_MS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    auth_bytes: bytes
    session_token: str
    session_lifetime_ms: int
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., auth_bytes: _Optional[bytes] = ..., session_token: _Optional[str] = ..., session_lifetime_ms: _Optional[int] = ...) -> None: ...

class AddPartitionsToTxnRequest(_message.Message):
    __slots__ = ("transactional_id", "producer_id", "producer_epoch", "topics")
    class AddPartitionsToTxnTopic(_message.Message):
        __slots__ = ("name", "partitions")
        NAME_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        name: str
        partitions: _containers.RepeatedScalarFieldContainer[int]
        def __init__(self, name: _Optional[str] = ..., partitions: _Optional[_Iterable[int]] = ...) -> None: ...
    TRANSACTIONAL_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    transactional_id: str
    producer_id: int
    producer_epoch: int
    topics: _containers.RepeatedCompositeFieldContainer[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic]
    def __init__(self, transactional_id: _Optional[str] = ..., producer_id: _Optional[int] = ..., producer_epoch: _Optional[int] = ..., topics: _Optional[_Iterable[_Union[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic, _Mapping]]] = ...) -> None: ...

class AddPartitionsToTxnResponse(_message.Message):
    __slots__ = ("results",)
    class AddPartitionsToTxnPartitionResult(_message.Message):
        __slots__ = ("partition_index", "partition_error_code")
        PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
        PARTITION_ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        partition_index: int
        partition_error_code: int
        def __init__(self, partition_index: _Optional[int] = ..., partition_error_code: _Optional[int] = ...) -> None: ...
    class AddPartitionsToTxnTopicResult(_message.Message):
        __slots__ = ("name", "results")
        NAME_FIELD_NUMBER: _ClassVar[int]
        RESULTS_FIELD_NUMBER: _ClassVar[int]
        name: str
        results: _containers.RepeatedCompositeFieldContainer[AddPartitionsToTxnResponse.AddPartitionsToTxnPartitionResult]
        def __init__(self, name: _Optional[str] = ..., results: _Optional[_Iterable[_Union[AddPartitionsToTxnResponse.AddPartitionsToTxnPartitionResult, _Mapping]]] = ...) -> None: ...
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult]
    def __init__(self, results: _Optional[_Iterable[_Union[AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult, _Mapping]]] = ...) -> None: ...

class AddOffsetsToTxnRequest(_message.Message):
    __slots__ = ("transactional_id", "producer_id", "producer_epoch", "group_id")
    TRANSACTIONAL_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str
    def __init__(self, transactional_id: _Optional[str] = ..., producer_id: _Optional[int] = ..., producer_epoch: _Optional[int] = ..., group_id: _Optional[str] = ...) -> None: ...

class AddOffsetsToTxnResponse(_message.Message):
    __slots__ = ("error_code", "error_message")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...

class EndTxnRequest(_message.Message):
    __slots__ = ("transactional_id", "producer_id", "producer_epoch", "committed")
    TRANSACTIONAL_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_FIELD_NUMBER: _ClassVar[int]
    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool
    def __init__(self, transactional_id: _Optional[str] = ..., producer_id: _Optional[int] = ..., producer_epoch: _Optional[int] = ..., committed: _Optional[bool] = ...) -> None: ...

class EndTxnResponse(_message.Message):
    __slots__ = ("error_code", "error_message")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...

class DescribeTransactionsRequest(_message.Message):
    __slots__ = ("transactional_ids",)
    TRANSACTIONAL_IDS_FIELD_NUMBER: _ClassVar[int]
    transactional_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, transactional_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class DescribeTransactionsResponse(_message.Message):
    __slots__ = ("transaction_states",)
    class TopicData(_message.Message):
        __slots__ = ("topic", "partitions")
        TOPIC_FIELD_NUMBER: _ClassVar[int]
        PARTITIONS_FIELD_NUMBER: _ClassVar[int]
        topic: str
        partitions: _containers.RepeatedScalarFieldContainer[int]
        def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[int]] = ...) -> None: ...
    class TransactionState(_message.Message):
        __slots__ = ("error_code", "transactional_id", "transaction_state", "transaction_timeout_ms", "transaction_start_time_ms", "producer_id", "producer_epoch", "topics", "error_message")
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        TRANSACTIONAL_ID_FIELD_NUMBER: _ClassVar[int]
        TRANSACTION_STATE_FIELD_NUMBER: _ClassVar[int]
        TRANSACTION_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
        TRANSACTION_START_TIME_MS_FIELD_NUMBER: _ClassVar[int]
        PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
        PRODUCER_EPOCH_FIELD_NUMBER: _ClassVar[int]
        TOPICS_FIELD_NUMBER: _ClassVar[int]
        ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
        error_code: int
        transactional_id: str
        transaction_state: str
        transaction_timeout_ms: int
        transaction_start_time_ms: int
        producer_id: int
        producer_epoch: int
        topics: _containers.RepeatedCompositeFieldContainer[DescribeTransactionsResponse.TopicData]
        error_message: str
        def __init__(self, error_code: _Optional[int] = ..., transactional_id: _Optional[str] = ..., transaction_state: _Optional[str] = ..., transaction_timeout_ms: _Optional[int] = ..., transaction_start_time_ms: _Optional[int] = ..., producer_id: _Optional[int] = ..., producer_epoch: _Optional[int] = ..., topics: _Optional[_Iterable[_Union[DescribeTransactionsResponse.TopicData, _Mapping]]] = ..., error_message: _Optional[str] = ...) -> None: ...
    TRANSACTION_STATES_FIELD_NUMBER: _ClassVar[int]
    transaction_states: _containers.RepeatedCompositeFieldContainer[DescribeTransactionsResponse.TransactionState]
    def __init__(self, transaction_states: _Optional[_Iterable[_Union[DescribeTransactionsResponse.TransactionState, _Mapping]]] = ...) -> None: ...

class ListTransactionsRequest(_message.Message):
    __slots__ = ("state_filters", "producer_id_filters", "duration_filter")
    STATE_FILTERS_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FILTERS_FIELD_NUMBER: _ClassVar[int]
    DURATION_FILTER_FIELD_NUMBER: _ClassVar[int]
    state_filters: _containers.RepeatedScalarFieldContainer[str]
    producer_id_filters: _containers.RepeatedScalarFieldContainer[int]
    duration_filter: int
    def __init__(self, state_filters: _Optional[_Iterable[str]] = ..., producer_id_filters: _Optional[_Iterable[int]] = ..., duration_filter: _Optional[int] = ...) -> None: ...

class ListTransactionsResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "unknown_state_filters", "transaction_states")
    class TransactionState(_message.Message):
        __slots__ = ("transactional_id", "producer_id", "transaction_state")
        TRANSACTIONAL_ID_FIELD_NUMBER: _ClassVar[int]
        PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
        TRANSACTION_STATE_FIELD_NUMBER: _ClassVar[int]
        transactional_id: str
        producer_id: int
        transaction_state: str
        def __init__(self, transactional_id: _Optional[str] = ..., producer_id: _Optional[int] = ..., transaction_state: _Optional[str] = ...) -> None: ...
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    UNKNOWN_STATE_FILTERS_FIELD_NUMBER: _ClassVar[int]
    TRANSACTION_STATES_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    unknown_state_filters: _containers.RepeatedScalarFieldContainer[str]
    transaction_states: _containers.RepeatedCompositeFieldContainer[ListTransactionsResponse.TransactionState]
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., unknown_state_filters: _Optional[_Iterable[str]] = ..., transaction_states: _Optional[_Iterable[_Union[ListTransactionsResponse.TransactionState, _Mapping]]] = ...) -> None: ...
