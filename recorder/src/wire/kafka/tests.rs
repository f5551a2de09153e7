use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::metadata_response::MetadataResponseBroker;
use kafka_protocol::messages::{
    BrokerId, FetchRequest, FetchResponse, FindCoordinatorRequest, MetadataRequest,
    OffsetCommitRequest, OffsetCommitResponse, ProduceRequest, ProduceResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::*;

const PROXY_PORT: u16 = 40_123;

fn framed(body: Vec<u8>) -> Vec<u8> {
    let mut frame = (body.len() as u32).to_be_bytes().to_vec();
    frame.extend(body);
    frame
}

fn request<R: Encodable>(key: ApiKey, code: i16, version: i16, id: i32, body: &R) -> Vec<u8> {
    let header = RequestHeader::default()
        .with_request_api_key(code)
        .with_request_api_version(version)
        .with_correlation_id(id)
        .with_client_id(Some(StrBytes::from_static_str("rdkafka")));
    let mut bytes = Vec::new();
    header
        .encode(&mut bytes, key.request_header_version(version))
        .unwrap();
    body.encode(&mut bytes, version).unwrap();
    framed(bytes)
}

fn response<R: Encodable>(key: ApiKey, version: i16, id: i32, body: &R) -> Vec<u8> {
    let header = ResponseHeader::default().with_correlation_id(id);
    let mut bytes = Vec::new();
    header
        .encode(&mut bytes, key.response_header_version(version))
        .unwrap();
    body.encode(&mut bytes, version).unwrap();
    framed(bytes)
}

fn produce(version: i16, id: i32, acks: i16) -> Vec<u8> {
    let body = ProduceRequest::default()
        .with_transactional_id(None)
        .with_acks(acks)
        .with_timeout_ms(30_000);
    request(ApiKey::Produce, 0, version, id, &body)
}

fn produce_reply(version: i16, id: i32) -> Vec<u8> {
    response(ApiKey::Produce, version, id, &ProduceResponse::default())
}

/// Feeds `bytes` one byte at a time: what passed, and whether the connection was reset.
fn feed(kafka: &mut Kafka, up: bool, bytes: &[u8], losses: &Losses) -> (Vec<u8>, bool) {
    let (mut passed, mut out) = (Vec::new(), Vec::new());
    for byte in bytes.chunks(1) {
        out.clear();
        let flow = if up {
            kafka.request(byte, &mut out, losses)
        } else {
            kafka.reply(byte, &mut out, losses)
        };
        passed.extend_from_slice(&out);
        if flow == Flow::Reset {
            return (passed, true);
        }
    }
    (passed, false)
}

#[test]
fn requests_and_replies_it_does_not_act_on_pass_unchanged() {
    let losses = Losses::default();
    let mut kafka = Kafka::new(PROXY_PORT);
    let fetch = request(ApiKey::Fetch, 1, 12, 7, &FetchRequest::default());
    assert_eq!(feed(&mut kafka, true, &fetch, &losses), (fetch, false));
    let reply = response(ApiKey::Fetch, 12, 7, &FetchResponse::default());
    assert_eq!(feed(&mut kafka, false, &reply, &losses), (reply, false));
    let produce = produce(9, 8, -1);
    assert_eq!(feed(&mut kafka, true, &produce, &losses).0, produce);
    let reply = produce_reply(9, 8);
    assert_eq!(feed(&mut kafka, false, &reply, &losses), (reply, false));
    assert!(losses.drain().is_empty());
}

#[test]
fn a_lost_produce_ack_drops_the_response_whole_and_resets_the_connection() {
    for version in [3, 7, 9, 11] {
        let losses = Losses::default();
        let mut kafka = Kafka::new(PROXY_PORT);
        losses.arm(WireFault::LoseProduceAck);
        let both = [produce(version, 1, -1), produce(version, 2, 1)].concat();
        assert_eq!(feed(&mut kafka, true, &both, &losses).0, both);
        // The first produce took the fault: the second's response is not the lost one.
        let (passed, reset) = feed(&mut kafka, false, &produce_reply(version, 1), &losses);
        assert!(passed.is_empty() && reset, "version {version}");
        let lost = losses.drain();
        assert_eq!(lost.len(), 1);
        assert_eq!(lost[0].what, WireFault::LoseProduceAck);
        assert_eq!(
            (lost[0].messages, lost[0].resets, lost[0].bytes),
            (1, 1, produce_reply(version, 1).len() as u64)
        );
    }
}

#[test]
fn a_produce_that_asks_no_acknowledgement_leaves_the_fault_for_the_next() {
    let losses = Losses::default();
    let mut kafka = Kafka::new(PROXY_PORT);
    losses.arm(WireFault::LoseProduceAck);
    feed(&mut kafka, true, &produce(9, 1, 0), &losses);
    feed(&mut kafka, true, &produce(9, 2, 1), &losses);
    let reply = produce_reply(9, 3);
    assert_eq!(feed(&mut kafka, false, &reply, &losses), (reply, false));
    assert!(feed(&mut kafka, false, &produce_reply(9, 2), &losses).1);
}

#[test]
fn a_lost_commit_reply_drops_an_offset_commits_response() {
    let losses = Losses::default();
    let mut kafka = Kafka::new(PROXY_PORT);
    losses.arm(WireFault::LoseCommitReply);
    let commit = request(
        ApiKey::OffsetCommit,
        8,
        8,
        5,
        &OffsetCommitRequest::default(),
    );
    feed(&mut kafka, true, &commit, &losses);
    let reply = response(ApiKey::OffsetCommit, 8, 5, &OffsetCommitResponse::default());
    let (passed, reset) = feed(&mut kafka, false, &reply, &losses);
    assert!(passed.is_empty() && reset);
    assert_eq!(losses.drain()[0].what, WireFault::LoseCommitReply);
    assert!(
        !losses.take(WireFault::LoseProduceAck),
        "nothing else armed"
    );
}

fn broker(id: i32, port: i32) -> MetadataResponseBroker {
    MetadataResponseBroker::default()
        .with_node_id(BrokerId(id))
        .with_host(StrBytes::from_static_str("broker.internal"))
        .with_port(port)
}

#[test]
fn metadata_replies_give_the_proxy_as_every_broker() {
    for version in [1, 8, 9, 12] {
        let losses = Losses::default();
        let mut kafka = Kafka::new(PROXY_PORT);
        let ask = request(
            ApiKey::Metadata,
            3,
            version,
            11,
            &MetadataRequest::default(),
        );
        feed(&mut kafka, true, &ask, &losses);
        let body = MetadataResponse::default().with_brokers(vec![broker(1, 9092), broker(2, 9093)]);
        let (passed, reset) = feed(
            &mut kafka,
            false,
            &response(ApiKey::Metadata, version, 11, &body),
            &losses,
        );
        assert!(!reset);
        let mut rest = &passed[4..];
        let header_version = ApiKey::Metadata.response_header_version(version);
        let header = ResponseHeader::decode(&mut rest, header_version).unwrap();
        assert_eq!(header.correlation_id, 11);
        let read = MetadataResponse::decode(&mut rest, version).unwrap();
        let addresses: Vec<(String, i32)> = read
            .brokers
            .iter()
            .map(|b| (b.host.to_string(), b.port))
            .collect();
        let proxy = ("127.0.0.1".to_string(), i32::from(PROXY_PORT));
        assert_eq!(addresses, [proxy.clone(), proxy], "version {version}");
        assert_eq!(frame_size(&passed[..4]), Some(passed.len() - 4));
    }
}

#[test]
fn coordinator_replies_give_the_proxy_as_the_coordinator() {
    for version in [2, 4] {
        let losses = Losses::default();
        let mut kafka = Kafka::new(PROXY_PORT);
        let ask = request(
            ApiKey::FindCoordinator,
            10,
            version,
            3,
            &FindCoordinatorRequest::default(),
        );
        feed(&mut kafka, true, &ask, &losses);
        let coordinator = Coordinator::default()
            .with_host(StrBytes::from_static_str("broker.internal"))
            .with_port(9092);
        let body = if version < 4 {
            FindCoordinatorResponse::default()
                .with_host(StrBytes::from_static_str("broker.internal"))
                .with_port(9092)
        } else {
            FindCoordinatorResponse::default().with_coordinators(vec![coordinator])
        };
        let reply = response(ApiKey::FindCoordinator, version, 3, &body);
        let (passed, _) = feed(&mut kafka, false, &reply, &losses);
        let mut rest = &passed[4..];
        let header_version = ApiKey::FindCoordinator.response_header_version(version);
        ResponseHeader::decode(&mut rest, header_version).unwrap();
        let read = FindCoordinatorResponse::decode(&mut rest, version).unwrap();
        let port = if version < 4 {
            read.port
        } else {
            read.coordinators[0].port
        };
        assert_eq!(port, i32::from(PROXY_PORT), "version {version}");
    }
}

#[test]
fn bytes_that_are_no_frame_are_relayed_unread() {
    let losses = Losses::default();
    losses.arm(WireFault::LoseProduceAck);
    let mut kafka = Kafka::new(PROXY_PORT);
    // A TLS ClientHello's first bytes give no frame size a broker would take.
    let hello = [
        0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03,
    ];
    assert_eq!(feed(&mut kafka, true, &hello, &losses).0, hello);
    let reply = [0xff, 0xff, 0xff, 0xf0, 1, 2, 3];
    assert_eq!(
        feed(&mut kafka, false, &reply, &losses),
        (reply.to_vec(), false)
    );
    assert!(
        losses.take(WireFault::LoseProduceAck),
        "the fault still waits"
    );
}

#[test]
fn past_the_bound_of_waiting_requests_no_fault_is_taken_and_responses_pass() {
    let losses = Losses::default();
    let mut kafka = Kafka::new(PROXY_PORT);
    let mut out = Vec::new();
    for id in 0..MOST_WAITING as i32 {
        kafka.request(&produce(9, id, 1), &mut out, &losses);
    }
    losses.arm(WireFault::LoseProduceAck);
    let beyond = MOST_WAITING as i32;
    kafka.request(&produce(9, beyond, 1), &mut out, &losses);
    assert!(
        losses.take(WireFault::LoseProduceAck),
        "the fault still waits"
    );
    let reply = produce_reply(9, beyond);
    assert_eq!(feed(&mut kafka, false, &reply, &losses), (reply, false));
}
