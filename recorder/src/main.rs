//! `recorder`: parses the command line, resolves it, and calls the library; the work is in
//! [`outbox_recorder::run`].

use std::process::ExitCode;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use clap::Parser;
use outbox_analyzer::check::RunVerdict;
use outbox_recorder::cli::args::{Cli, Command};
use outbox_recorder::cli::config::RunPlan;
use outbox_recorder::cli::exit::Exit;
use outbox_recorder::cli::list::list;
use outbox_recorder::driver::actor::process;
use outbox_recorder::protocol::external::spec::ExternalSpec;
use outbox_recorder::Failure;
use outbox_trace::{detail_key, Kind};
use tokio_util::sync::CancellationToken;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return exit(if e.use_stderr() {
                Exit::Usage
            } else {
                Exit::Success
            });
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        // Colours only on a terminal, and never with NO_COLOR set (https://no-color.org).
        .with_ansi(
            std::io::IsTerminal::is_terminal(&std::io::stderr())
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        )
        .init();
    outbox_recorder::process::spawn::raise_open_files();
    match cli.command {
        Command::Actor => ExitCode::from(process::main() as u8),
        Command::Watchdog { mark } => {
            ExitCode::from(outbox_recorder::process::watchdog::watchdog_main(&mark) as u8)
        }
        Command::Receiver(args) => ExitCode::from(process::receiver_main(ExternalSpec {
            addr: args.listen,
            db: args.db,
            slow_ms: args.slow_ms,
        }) as u8),
        Command::Explore(args) => {
            let config = match outbox_recorder::cli::config::ExploreConfig::resolve(&args) {
                Ok(c) => c,
                Err(e) => return fail("recorder", &Failure::from(e)),
            };
            let runtime = runtime();
            let shutdown = CancellationToken::new();
            let ended_by = Arc::new(AtomicU8::new(Exit::Interrupted as u8));
            runtime.spawn(stop_on_signals(shutdown.clone(), ended_by.clone()));
            match runtime.block_on(outbox_recorder::run::explore(&config, shutdown)) {
                Ok(e) if e.interrupted => ExitCode::from(ended_by.load(Ordering::Relaxed)),
                Ok(e) => ExitCode::from(match e.verdict {
                    RunVerdict::Valid => 0,
                    RunVerdict::Invalid => 1,
                    RunVerdict::Unknown => 3,
                }),
                Err(e) => fail("recorder", &e),
            }
        }
        Command::List => {
            list();
            ExitCode::SUCCESS
        }
        Command::Run(args) => {
            let plan = match RunPlan::resolve(&args) {
                Ok(p) => p,
                Err(e) => return fail("recorder", &Failure::from(e)),
            };
            let runtime = runtime();
            let shutdown = CancellationToken::new();
            let ended_by = Arc::new(AtomicU8::new(Exit::Interrupted as u8));
            runtime.spawn(stop_on_signals(shutdown.clone(), ended_by.clone()));
            let outcome = match &plan {
                RunPlan::Builtin(config) => {
                    runtime.block_on(outbox_recorder::run(config, shutdown))
                }
                RunPlan::System(config) => {
                    runtime.block_on(outbox_recorder::run_system(config, shutdown))
                }
            };
            match outcome {
                Ok(outcome) if outcome.interrupted => {
                    ExitCode::from(ended_by.load(Ordering::Relaxed))
                }
                Ok(outcome) if !outcome.unrecovered.is_empty() => {
                    eprintln!(
                        "recorder: never became quiet: {} ({}.{} is false)",
                        outcome.unrecovered.join(", "),
                        Kind::RunEnd,
                        detail_key!(RunEnd.recovered)
                    );
                    exit(Exit::Unrecovered)
                }
                Ok(_) => exit(Exit::Success),
                Err(e) => {
                    let out = match &plan {
                        RunPlan::Builtin(config) => &config.out,
                        RunPlan::System(config) => &config.out,
                    };
                    match outbox_recorder::journal::writer::kept_parts(out) {
                        Some(kept) => {
                            eprintln!("recorder: {e}; {kept}");
                            exit(e.exit())
                        }
                        None => fail("recorder", &e),
                    }
                }
            }
        }
    }
}

/// Ctrl-C (SIGINT), SIGTERM and SIGHUP end the run the same way: actors and services stopped,
/// the trace joined, `run_end` written; the exit code says which signal (130, 143, 129).
async fn stop_on_signals(shutdown: CancellationToken, ended_by: Arc<AtomicU8>) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut int), Ok(mut term), Ok(mut hup)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        return;
    };
    let (code, name) = tokio::select! {
        _ = int.recv() => (Exit::Interrupted, "interrupted"),
        _ = term.recv() => (Exit::Terminated, "terminated"),
        _ = hup.recv() => (Exit::HungUp, "hung up"),
    };
    eprintln!("recorder: {name}; stopping actors and keeping what was recorded");
    ended_by.store(code as u8, Ordering::Relaxed);
    shutdown.cancel();
}

/// Prints the failure as one line and ends with its exit code.
fn fail(who: &str, e: &Failure) -> ExitCode {
    eprintln!("{who}: {e}");
    exit(e.exit())
}

fn exit(code: Exit) -> ExitCode {
    ExitCode::from(code as u8)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().expect("a tokio runtime")
}
