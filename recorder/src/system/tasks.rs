//! The tasks of a system run and how they reach the service: `t-0001`, ... spread over
//! `agg-01`, ... with amounts 1 to 5 drawn from the seed, sent one after the other (so each
//! aggregate's tasks go out in order) by a line on a role's standard input, an HTTP request or a
//! command. A task not answered when the life that took it ends is sent again, with the same id,
//! to the next life; the counts go into `run_end`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use tokio::sync::{mpsc, watch};

use super::file::{Delivery, HttpSpec};
use super::template::Values;
use crate::fault::dice::Dice;
use crate::process::child::{Child, Launch};

/// How long to wait before sending a task again.
const RETRY: Duration = Duration::from_millis(100);
/// How long to wait before sending the first task again while the service was never reached (its
/// roles are starting): a refused connection costs nothing, and every wait delays the scenario.
const FIRST_RETRY: Duration = Duration::from_millis(20);
/// How long one HTTP request may take.
const HTTP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the first task may go without reaching the service before the scenario stops, at
/// least: a URL nobody listens on, a role that never takes a line, a command that cannot start.
/// A search waits longer when its calm run took longer to be reached.
pub const UNREACHABLE_FOR: Duration = Duration::from_secs(10);

/// The tasks never reached the service.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no task reached the service within {:.0}s: {why}", within.as_secs_f64())]
pub struct Unreachable {
    /// How long the first task was tried.
    pub within: Duration,
    /// What the last try met (the URL and its error, ...).
    pub why: String,
}

/// One task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// `t-0001`, ...
    pub id: String,
    /// `agg-01`, ...
    pub aggregate: String,
    /// 1 to 5.
    pub amount: i64,
}

impl Task {
    /// The placeholder values of this task on top of the run's.
    fn values(&self, global: &Values) -> Values {
        let mut v = global.clone();
        v.insert("task".into(), self.id.clone());
        v.insert("aggregate".into(), self.aggregate.clone());
        v.insert("amount".into(), self.amount.to_string());
        v
    }
}

/// `count` tasks over `aggregates` aggregates (in turn), amounts drawn from `seed`.
pub fn make_tasks(count: u32, aggregates: u32, seed: u64) -> Vec<Task> {
    let mut dice = Dice::new(seed ^ 0x7a5c_0000_0000_0001);
    let width = count.to_string().len().max(4);
    let agg_width = aggregates.to_string().len().max(2);
    (0..count)
        .map(|i| Task {
            id: format!("t-{:0width$}", i + 1),
            aggregate: format!("agg-{:0agg_width$}", i % aggregates.max(1) + 1),
            amount: dice.below(5) as i64 + 1,
        })
        .collect()
}

/// How the delivery went (`run_end.detail`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Delivered {
    /// Tasks sent at least once.
    pub sent: u64,
    /// Tasks answered.
    pub answered: u64,
    /// Tasks sent more than once.
    pub resent: u64,
    /// Tasks never answered.
    pub unanswered: u64,
    /// How long after its first try the first task reached the service.
    pub first_reached: Option<Duration>,
}

/// The current life of the role that takes tasks on standard input: its incarnation and a channel
/// to its standard input. `None` while no life runs.
pub type StdinSlot = watch::Receiver<Option<(u32, mpsc::UnboundedSender<String>)>>;

/// What the delivery needs besides the tasks.
pub struct Courier {
    /// How tasks are sent.
    pub delivery: Delivery,
    /// The run's placeholder values.
    pub values: Values,
    /// The environment of commands.
    pub env: Vec<(String, String)>,
    /// Where commands run.
    pub cwd: PathBuf,
    /// Where command logs go.
    pub logs: PathBuf,
    /// For `stdin`: the current life of the role.
    pub stdin: Option<StdinSlot>,
    /// For `stdin`: every line the role's lives print.
    pub answers: Option<mpsc::UnboundedReceiver<String>>,
    /// Nothing is sent after this.
    pub deadline: Instant,
    /// How long the first task may go without reaching the service.
    pub unreachable_for: Duration,
}

impl Courier {
    /// Sends every task in turn until answered or the deadline; stops if the first task cannot
    /// reach the service for `unreachable_for`.
    pub async fn deliver(mut self, tasks: Vec<Task>) -> Result<Delivered, Unreachable> {
        let mut done = Delivered::default();
        let first_try = Instant::now();
        let mut reached = false;
        for task in &tasks {
            if Instant::now() > self.deadline {
                done.unanswered += 1;
                continue;
            }
            done.sent += 1;
            let mut attempts = 0u32;
            let answered = loop {
                if Instant::now() > self.deadline {
                    break false;
                }
                let outcome = match &self.delivery {
                    Delivery::Stdin { line, .. } => {
                        let line = line.expand(&task.values(&self.values));
                        self.by_stdin(&task.id, &line).await
                    }
                    Delivery::Http(spec) => by_http(spec, &task.values(&self.values)).await,
                    Delivery::Command(argv) => {
                        let argv: Vec<String> = argv
                            .iter()
                            .map(|t| t.expand(&task.values(&self.values)))
                            .collect();
                        self.by_command(&argv, &task.id).await
                    }
                };
                if !matches!(outcome, Outcome::NotReached(_)) && !reached {
                    reached = true;
                    done.first_reached = Some(first_try.elapsed());
                }
                match outcome {
                    Outcome::Answered => break true,
                    Outcome::NotReached(why) => {
                        if !reached && first_try.elapsed() > self.unreachable_for {
                            let within = self.unreachable_for;
                            return Err(Unreachable { within, why });
                        }
                    }
                    Outcome::Lost => attempts += 1,
                }
                tokio::time::sleep(if reached { RETRY } else { FIRST_RETRY }).await;
            };
            if attempts > 0 {
                done.resent += 1;
            }
            if answered {
                done.answered += 1;
            } else {
                done.unanswered += 1;
            }
        }
        Ok(done)
    }

    async fn by_stdin(&mut self, task: &str, line: &str) -> Outcome {
        let (Some(slot), Some(answers)) = (self.stdin.as_mut(), self.answers.as_mut()) else {
            return Outcome::NotReached("no role takes tasks on its input".into());
        };
        let current = slot.borrow_and_update().clone();
        let Some((life, tx)) = current else {
            let _ = tokio::time::timeout(RETRY, slot.changed()).await;
            return Outcome::NotReached("the role that takes tasks has no life running".into());
        };
        if tx.send(line.to_string()).is_err() {
            return Outcome::NotReached("the role that takes tasks closed its input".into());
        }
        let until = tokio::time::Instant::from_std(self.deadline);
        loop {
            tokio::select! {
                got = answers.recv() => match got {
                    Some(text) if text.contains(task) => return Outcome::Answered,
                    Some(_) => {}
                    None => return Outcome::Lost,
                },
                changed = slot.changed() => {
                    let now = slot.borrow_and_update().as_ref().map(|(n, _)| *n);
                    if changed.is_err() || now != Some(life) {
                        return Outcome::Lost;
                    }
                }
                _ = tokio::time::sleep_until(until) => return Outcome::Lost,
            }
        }
    }

    async fn by_command(&self, argv: &[String], task: &str) -> Outcome {
        let child = Child::spawn(Launch {
            what: format!("task {task}"),
            argv,
            env: &self.env,
            cwd: &self.cwd,
            log: self.logs.join("tasks.log"),
            stdin: false,
            watch_stdout: None,
        });
        match child {
            Ok(mut c) => {
                if c.wait().await == 0 {
                    Outcome::Answered
                } else {
                    Outcome::Lost
                }
            }
            Err(e) => Outcome::NotReached(e.to_string()),
        }
    }
}

/// How one sending went.
enum Outcome {
    /// The service answered it.
    Answered,
    /// It never reached the service (nothing listening yet), and why: not counted as sent again.
    NotReached(String),
    /// It may have reached the service, which did not answer it.
    Lost,
}

async fn by_http(spec: &HttpSpec, values: &Values) -> Outcome {
    let url = spec.url.expand(values);
    let Ok(uri) = url.parse::<axum::http::Uri>() else {
        return Outcome::NotReached(format!("{url} is no URL"));
    };
    let host = uri.host().unwrap_or("127.0.0.1").to_string();
    let port = uri.port_u16().unwrap_or(80);
    let stream = match tokio::net::TcpStream::connect((host.as_str(), port)).await {
        Ok(stream) => stream,
        Err(e) => return Outcome::NotReached(format!("{url}: {e}")),
    };
    let io = hyper_util::rt::TokioIo::new(stream);
    let Ok((mut sender, connection)) = hyper::client::conn::http1::handshake(io).await else {
        return Outcome::NotReached(format!("{url}: the HTTP handshake failed"));
    };
    let connection = tokio::spawn(connection);
    let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
    let mut request = hyper::Request::builder()
        .method(spec.method.as_str())
        .uri(path)
        .header(axum::http::header::HOST, format!("{host}:{port}"));
    let body = spec
        .body
        .as_ref()
        .map(|b| b.expand(values))
        .unwrap_or_default();
    if serde_json::from_str::<serde::de::IgnoredAny>(&body).is_ok() {
        request = request.header(axum::http::header::CONTENT_TYPE, "application/json");
    }
    for (k, v) in &spec.headers {
        request = request.header(k.as_str(), v.expand(values));
    }
    let request = match request.body(Full::new(Bytes::from(body))) {
        Ok(request) => request,
        Err(e) => return Outcome::NotReached(format!("{url}: {e}")),
    };
    let answer = tokio::time::timeout(HTTP_TIMEOUT, async {
        let response = sender.send_request(request).await.ok()?;
        let ok = response.status().is_success();
        let _ = response.into_body().collect().await;
        Some(ok)
    })
    .await;
    connection.abort();
    match answer {
        Ok(Some(true)) => Outcome::Answered,
        _ => Outcome::Lost,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_are_numbered_spread_and_drawn_from_the_seed() {
        let a = make_tasks(10, 4, 7);
        assert_eq!(a[0].id, "t-0001");
        assert_eq!(a[9].id, "t-0010");
        assert_eq!(a[0].aggregate, "agg-01");
        assert_eq!(a[5].aggregate, "agg-02");
        assert!(a.iter().all(|t| (1..=5).contains(&t.amount)));
        assert_eq!(a, make_tasks(10, 4, 7));
        assert_ne!(
            a.iter().map(|t| t.amount).collect::<Vec<_>>(),
            make_tasks(10, 4, 8)
                .iter()
                .map(|t| t.amount)
                .collect::<Vec<_>>()
        );
    }
}
