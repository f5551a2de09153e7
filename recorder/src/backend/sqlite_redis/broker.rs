//! The protocol's broker port on a Redis list: a publish by Lua script (or one whose reply Redis
//! never sends), a fetch that moves copies to the consumer's own list (after putting back those
//! older than AckWait), and the ACK that removes a copy from it.

use std::time::{Duration, Instant};

use redis::aio::ConnectionLike as _;

use super::scripts::{FETCH, PUBLISH, RECOVER};
use super::{broker, one_line, SqliteRedis};
use crate::protocol::model::{Intent, Published};
use crate::protocol::ports::{BackendError, Broker, Delivery};

impl SqliteRedis {
    /// Sends a publish whose reply Redis never sends: on a connection of its own, `CLIENT REPLY
    /// SKIP` drops the reply of the script that follows, and a `PING` after it is the only
    /// answer read. Redis performs the publish; the ACK is lost for real. The connection is then
    /// dropped, and the relay waits out its publish timeout as it would for any missing ACK.
    async fn publish_without_reply(&self, script: redis::Cmd) -> Result<(), String> {
        let connect = self.client.get_multiplexed_async_connection();
        let mut conn = tokio::time::timeout(self.timing.publish_timeout, connect)
            .await
            .map_err(|_| "no connection to Redis within the publish timeout".to_string())?
            .map_err(|e| one_line(&e))?;
        let mut pipe = redis::pipe();
        pipe.cmd("CLIENT").arg("REPLY").arg("SKIP");
        pipe.add_command(script);
        pipe.cmd("PING");
        let sent = tokio::time::timeout(
            self.timing.publish_timeout,
            conn.req_packed_commands(&pipe, 0, 1),
        )
        .await;
        drop(conn);
        if let Ok(Err(e)) = sent {
            return Err(one_line(&e));
        }
        tokio::time::sleep(self.timing.publish_timeout).await;
        Ok(())
    }
}

impl Broker for SqliteRedis {
    type Handle = String;

    async fn publish(&self, intent: &Intent, lose_ack: bool, msg_id: bool) -> Published {
        let payload = serde_json::to_string(intent).expect("intent serialises");
        let keys = [
            self.key("outbox.events"),
            self.key("outbox.log"),
            self.key("seq"),
            self.key("msgids"),
        ];
        let use_id = if msg_id { "1" } else { "0" };
        if lose_ack {
            let mut script = redis::cmd("EVAL");
            script.arg(PUBLISH).arg(keys.len()).arg(&keys[..]);
            script.arg(&payload).arg(&intent.event_id).arg(use_id);
            return match self.publish_without_reply(script).await {
                Ok(()) => Published::Unacked {
                    reason: format!(
                        "Redis sent no reply to the publish (waited {} ms)",
                        self.timing.publish_timeout.as_millis()
                    ),
                },
                Err(reason) => Published::Failed { reason },
            };
        }
        let mut conn = match self.redis().await {
            Ok(c) => c,
            Err(e) => {
                return Published::Failed {
                    reason: e.to_string(),
                }
            }
        };
        let publish = redis::Script::new(PUBLISH);
        let mut script = publish.prepare_invoke();
        for k in &keys {
            script.key(k);
        }
        script.arg(payload).arg(&intent.event_id).arg(use_id);
        match tokio::time::timeout(
            self.timing.publish_timeout,
            script.invoke_async::<(u64, i64)>(&mut conn),
        )
        .await
        {
            Ok(Ok((seq, dup))) => Published::Acked {
                broker_seq: seq,
                duplicate: dup == 1,
            },
            Ok(Err(e)) => Published::Failed {
                reason: one_line(&e),
            },
            Err(_) => Published::Unacked {
                reason: format!(
                    "no reply within {} ms",
                    self.timing.publish_timeout.as_millis()
                ),
            },
        }
    }

    async fn fetch(&self) -> Result<Vec<Delivery<Self::Handle>>, BackendError> {
        let mut conn = self.redis().await?;
        let processing = self.key(&format!("processing:{}", self.member));
        // Our own in-flight copies older than AckWait go back to the queue first.
        redis::Script::new(RECOVER)
            .key(&processing)
            .key(self.key("outbox.events"))
            .key(self.key("delivered_at"))
            .arg(self.ack_wait.as_millis() as u64)
            .invoke_async::<i64>(&mut conn)
            .await
            .map_err(broker)?;
        let started = Instant::now();
        let mut out = Vec::new();
        loop {
            let got: Option<(String, u32)> = redis::Script::new(FETCH)
                .key(self.key("outbox.events"))
                .key(&processing)
                .key(self.key("deliveries"))
                .key(self.key("delivered_at"))
                .invoke_async(&mut conn)
                .await
                .map_err(broker)?;
            match got {
                Some((item, count)) => {
                    let (seq, body) = item.split_once('|').ok_or_else(|| {
                        BackendError::Broker(format!("unreadable item {item:.80}"))
                    })?;
                    let broker_seq = seq
                        .parse()
                        .map_err(|_| BackendError::Broker(format!("unreadable item {item:.80}")))?;
                    let intent: Intent = serde_json::from_str(body).map_err(|e| {
                        BackendError::Broker(format!("unreadable item at {seq}: {e}"))
                    })?;
                    out.push(Delivery {
                        intent,
                        count,
                        broker_seq,
                        handle: item,
                    });
                    if out.len() >= self.timing.fetch_batch {
                        return Ok(out);
                    }
                }
                None if !out.is_empty() || started.elapsed() >= self.timing.fetch_wait => {
                    return Ok(out)
                }
                None => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }

    async fn ack(&self, delivery: &Delivery<Self::Handle>) -> Result<(), BackendError> {
        let mut conn = self.redis().await?;
        let removed: i64 = redis::cmd("LREM")
            .arg(self.key(&format!("processing:{}", self.member)))
            .arg(1)
            .arg(&delivery.handle)
            .query_async(&mut conn)
            .await
            .map_err(broker)?;
        if removed == 1 {
            Ok(())
        } else {
            Err(BackendError::Broker(format!(
                "copy {} was not in flight",
                delivery.broker_seq
            )))
        }
    }
}
