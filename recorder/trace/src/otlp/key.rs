//! The attribute names of the mapping, written once: the reader looks them up, the writer sets
//! them. `outbox.*` names are this contract's; the others are OpenTelemetry's semantic
//! conventions (resource and messaging) and the keys some messaging libraries use.

/// The event's kind (a kind of the contract).
pub const KIND: &str = "outbox.kind";
/// `seq`: the recording order within the run.
pub const SEQ: &str = "outbox.seq";
/// `run_id` (else the file's name without extensions).
pub const RUN_ID: &str = "outbox.run_id";
/// `scenario` (else `default`).
pub const SCENARIO: &str = "outbox.scenario";
/// `backend` (else `otel`).
pub const BACKEND: &str = "outbox.backend";
/// `actor` (else the resource's `service.name`).
pub const ACTOR: &str = "outbox.actor";
/// `incarnation` (else the rank of `service.instance.id`).
pub const INCARNATION: &str = "outbox.incarnation";
/// The column `task_id`.
pub const TASK_ID: &str = "outbox.task_id";
/// The column `event_id` (else the messaging ids of [`EVENT_ID_FALLBACKS`]).
pub const EVENT_ID: &str = "outbox.event_id";
/// The column `aggregate_id`.
pub const AGGREGATE_ID: &str = "outbox.aggregate_id";
/// The column `aggregate_seq`.
pub const AGGREGATE_SEQ: &str = "outbox.aggregate_seq";
/// The column `attempt`.
pub const ATTEMPT: &str = "outbox.attempt";
/// The column `broker_seq` (else the offsets of [`BROKER_SEQ_FALLBACKS`]); a number, or a Redis
/// Stream entry id `<ms>-<n>` (see [`crate::BrokerPosition`]).
pub const BROKER_SEQ: &str = "outbox.broker_seq";
/// The column `partition` (else the partition of [`PARTITION_FALLBACKS`]): the partition whose
/// sequence `broker_seq` counts in (Kafka).
pub const PARTITION: &str = "outbox.partition";
/// The column `store_rev`.
pub const STORE_REV: &str = "outbox.store_rev";
/// The column `amount`.
pub const AMOUNT: &str = "outbox.amount";
/// The column `counter`.
pub const COUNTER: &str = "outbox.counter";
/// The column `counter_key`.
pub const COUNTER_KEY: &str = "outbox.counter_key";
/// The column `detail` (JSON text).
pub const DETAIL: &str = "outbox.detail";
/// The resource's service: the actor when `outbox.actor` is absent.
pub const SERVICE_NAME: &str = "service.name";
/// The resource's instance: ranks an actor's lives when `outbox.incarnation` is absent.
pub const SERVICE_INSTANCE_ID: &str = "service.instance.id";

/// The messaging operation (`create`, `send`, `receive`, `process`, `settle`).
pub const OPERATION_TYPE: &str = "messaging.operation.type";
/// The older name of the messaging operation (`publish`, `receive`, `process`).
pub const OPERATION: &str = "messaging.operation";
/// The library's own name of the operation: says whether a `settle` was negative.
pub const OPERATION_NAME: &str = "messaging.operation.name";
/// The message id of the messaging conventions: `event_id` where `outbox.event_id` is absent,
/// and a broker position where it is a Redis Stream entry id.
pub const MESSAGE_ID: &str = "messaging.message.id";
/// Where `outbox.event_id` is absent, `event_id` is the first of these present.
pub const EVENT_ID_FALLBACKS: &[&str] = &[
    MESSAGE_ID,
    "messaging.masstransit.message_id",
    "nservicebus.message_id",
    "messaging.message_id",
];
/// Where `outbox.broker_seq` is absent, `broker_seq` is the first of these present.
pub const BROKER_SEQ_FALLBACKS: &[&str] =
    &["messaging.kafka.offset", "messaging.kafka.message.offset"];
/// Where `outbox.partition` is absent, `partition` is the first of these present: the messaging
/// conventions' partition id, then the older Kafka attribute.
pub const PARTITION_FALLBACKS: &[&str] = &[
    "messaging.destination.partition.id",
    "messaging.kafka.destination.partition",
];
/// `messaging.operation.name` values of a negative settlement: such a `settle` is no `acked`.
pub const NEGATIVE_SETTLEMENTS: &[&str] = &["nack", "reject", "abandon", "dead_letter", "release"];
/// A delivery whose span carries one of these set true is `redelivered` (RabbitMQ gives a flag,
/// not a count).
pub const REDELIVERED: &[&str] = &[
    "messaging.rabbitmq.message.redelivered",
    "outbox.redelivered",
];
