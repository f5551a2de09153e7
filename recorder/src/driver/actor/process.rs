//! The actor process itself (`recorder actor`, and `recorder receiver`): one OS process per actor
//! life (API, relay, worker, payments receiver).
//!
//! The recorder starts `recorder actor`, writes an [`ActorSpec`] as one JSON line to its standard
//! input and keeps the pipe open; the process reports every step as a JSON line on its standard
//! output. Closing standard input asks it to stop (so a dying recorder takes its actors with it).

use std::io::BufRead;
use std::sync::Arc;

use outbox_trace::{detail, Step};
use tokio_util::sync::CancellationToken;

use crate::backend::connection::BackendKind;
use crate::backend::control::Backend;
use crate::backend::etcd_jetstream::EtcdJetStream;
use crate::backend::sqlite_redis::SqliteRedis;
use crate::fault::plan::{FaultPlan, CRASH_EXIT_CODE};
use crate::journal::clock::RunClock;
use crate::protocol::external::receiver;
use crate::protocol::external::spec::ExternalSpec;
use crate::protocol::model::Timing;
use crate::protocol::variant::Protocol;
use crate::protocol::{api, relay, worker};

use super::spec::ActorSpec;
use crate::journal::author::Role;
use crate::protocol::ctx::ActorCtx;
use crate::protocol::hold;

/// Runs the external receiver on its own (`recorder receiver`) until standard input closes.
pub fn receiver_main(spec: ExternalSpec) -> i32 {
    let ctx = ActorCtx::new(
        RunClock::start(),
        FaultPlan::default(),
        Protocol::Reference,
        Timing::default(),
        None,
        stop_on_stdin_eof(Vec::new()),
        true,
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match runtime.block_on(serve_receiver(&ctx, &spec)) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("recorder receiver: {e:#}");
            1
        }
    }
}

/// A token cancelled when standard input reaches its end; the lines before it are the
/// recorder's answers to held reports (see [`hold`]).
fn stop_on_stdin_eof(held: Vec<outbox_trace::Kind>) -> CancellationToken {
    let stop = CancellationToken::new();
    let flag = stop.clone();
    let answers = hold::install(held);
    std::thread::spawn(move || {
        let mut line = String::new();
        let mut stdin = std::io::stdin().lock();
        while matches!(stdin.read_line(&mut line), Ok(n) if n > 0) {
            let _ = answers.send(());
            line.clear();
        }
        flag.cancel();
    });
    stop
}

/// Runs one actor life: reads the spec, connects, plays the role, and returns the exit code.
pub fn main() -> i32 {
    let mut first = String::new();
    let stdin = std::io::stdin();
    if stdin.lock().read_line(&mut first).is_err() || first.trim().is_empty() {
        eprintln!("recorder actor: expected an actor spec on standard input (this command is started by `recorder run`)");
        return 2;
    }
    let spec: ActorSpec = match serde_json::from_str(&first) {
        Ok(spec) => spec,
        Err(e) => {
            eprintln!("recorder actor: unreadable actor spec: {e}");
            return 2;
        }
    };
    let stop = stop_on_stdin_eof(spec.hold.clone());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let mut ctx = ActorCtx::new(
        spec.clock,
        spec.plan.clone(),
        spec.protocol,
        spec.timing,
        spec.external.clone(),
        stop,
        spec.trace,
    );
    match runtime.block_on(play(&spec, &mut ctx)) {
        Ok(()) => 0,
        Err(e) => {
            ctx.emit(Step::Crash {
                about: None,
                crash: detail::Crash {
                    point: outbox_trace::CrashSite::Error,
                    error: Some(format!("{e:#}")),
                    ..detail::Crash::default()
                },
            });
            eprintln!(
                "recorder actor {}#{}: {e:#}",
                spec.role.name(),
                spec.incarnation
            );
            CRASH_EXIT_CODE
        }
    }
}

async fn play(spec: &ActorSpec, ctx: &mut ActorCtx) -> anyhow::Result<()> {
    if spec.incarnation > 0 {
        ctx.emit(Step::Restart);
    }
    if spec.role == Role::Receiver {
        let external = spec
            .external
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("a receiver needs its address"))?;
        return serve_receiver(ctx, external).await;
    }
    match spec.connection.endpoints.kind() {
        BackendKind::EtcdJetstream => {
            play_on(
                spec,
                ctx,
                EtcdJetStream::connect(&spec.connection, spec.timing).await?,
            )
            .await
        }
        BackendKind::SqliteRedis => {
            play_on(
                spec,
                ctx,
                SqliteRedis::connect(&spec.connection, spec.timing).await?,
            )
            .await
        }
    }
}

async fn play_on<B: Backend>(
    spec: &ActorSpec,
    ctx: &mut ActorCtx,
    backend: B,
) -> anyhow::Result<()> {
    match spec.role {
        Role::Api => {
            api::create_all(ctx, &backend, &spec.tasks, spec.api_mode, spec.api_rate).await
        }
        Role::Relay => relay::run(ctx, &backend, &backend).await,
        Role::Worker => worker::run(ctx, &backend, &backend).await,
        Role::Receiver => unreachable!("the receiver needs no backend"),
    }
}

/// Serves the payments receiver, its steps reported through this life's context.
async fn serve_receiver(ctx: &ActorCtx, spec: &ExternalSpec) -> anyhow::Result<()> {
    let reporter = ctx.reporter();
    receiver::serve(
        spec,
        Arc::new(move |step| reporter.emit(step)),
        ctx.stopped(),
    )
    .await
}
