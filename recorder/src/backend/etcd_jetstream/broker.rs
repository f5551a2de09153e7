//! The protocol's broker port on JetStream: a publish with the event id header (or one whose ACK
//! goes nowhere), a fetch from the namespace's durable pull consumer, and the double ACK.

use std::future::IntoFuture;

use async_nats::jetstream::{self, consumer};
use futures::StreamExt;

use super::EVENT_ID_HEADER;
use super::{broker, one_line, EtcdJetStream};
use crate::protocol::model::{Intent, Published};
use crate::protocol::ports::{BackendError, Broker, Delivery};

impl EtcdJetStream {
    /// The namespace's durable pull consumer, looked up on first use.
    pub(super) async fn consumer(&self) -> Result<&consumer::PullConsumer, BackendError> {
        self.consumer
            .get_or_try_init(|| async {
                let stream = self.js.get_stream(&self.stream).await.map_err(broker)?;
                stream
                    .get_consumer::<consumer::pull::Config>(&self.consumer_name)
                    .await
                    .map_err(broker)
            })
            .await
    }
}

impl Broker for EtcdJetStream {
    type Handle = jetstream::Message;

    async fn publish(&self, intent: &Intent, lose_ack: bool, msg_id: bool) -> Published {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(EVENT_ID_HEADER, intent.event_id.as_str());
        if msg_id {
            headers.insert("Nats-Msg-Id", intent.event_id.as_str());
        }
        let payload: bytes::Bytes = serde_json::to_vec(intent)
            .expect("intent serialises")
            .into();
        let wait = self.timing.publish_timeout;
        if lose_ack {
            // A reply inbox nobody subscribes to: the stream stores the copy, the ACK goes nowhere.
            let nowhere = format!("_INBOX.outbox-trace.lost.{}", intent.event_id);
            let sent = self
                .nats
                .publish_with_reply_and_headers(self.subject.clone(), nowhere, headers, payload)
                .await;
            if let Err(e) = sent {
                return Published::Failed {
                    reason: one_line(&e),
                };
            }
            let _ = self.nats.flush().await;
            tokio::time::sleep(wait).await;
            return Published::Unacked {
                reason: format!("no publish ACK within {} ms", wait.as_millis()),
            };
        }
        let future = match self
            .js
            .publish_with_headers(self.subject.clone(), headers, payload)
            .await
        {
            Ok(f) => f,
            Err(e) => {
                return Published::Failed {
                    reason: one_line(&e),
                }
            }
        };
        match tokio::time::timeout(wait, future.into_future()).await {
            Ok(Ok(ack)) => Published::Acked {
                broker_seq: ack.sequence,
                duplicate: ack.duplicate,
            },
            Ok(Err(e)) => Published::Unacked {
                reason: one_line(&e),
            },
            Err(_) => Published::Unacked {
                reason: format!("no publish ACK within {} ms", wait.as_millis()),
            },
        }
    }

    async fn fetch(&self) -> Result<Vec<Delivery<Self::Handle>>, BackendError> {
        let consumer = self.consumer().await?;
        let mut batch = consumer
            .fetch()
            .max_messages(self.timing.fetch_batch)
            .expires(self.timing.fetch_wait)
            .messages()
            .await
            .map_err(broker)?;
        let mut out = Vec::new();
        while let Some(message) = batch.next().await {
            let message = message.map_err(broker)?;
            let (count, broker_seq) = {
                let info = message.info().map_err(broker)?;
                (
                    u32::try_from(info.delivered).unwrap_or(u32::MAX),
                    info.stream_sequence,
                )
            };
            let intent: Intent = serde_json::from_slice(&message.payload).map_err(|e| {
                BackendError::Broker(format!("unreadable message at seq {broker_seq}: {e}"))
            })?;
            out.push(Delivery {
                intent,
                count,
                broker_seq,
                handle: message,
            });
        }
        Ok(out)
    }

    async fn ack(&self, delivery: &Delivery<Self::Handle>) -> Result<(), BackendError> {
        delivery.handle.double_ack().await.map_err(broker)
    }
}
