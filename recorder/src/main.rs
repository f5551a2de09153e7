//! `recorder`: runs the outbox protocol against real services, injects the named faults, and writes
//! every step to an `outbox-trace/1` Parquet file. `main` parses, resolves and dispatches; the work
//! is in [`run::run`].

mod actor;
mod backend;
mod bench;
mod chaos;
mod cli;
mod clock;
mod driver;
mod endpoints;
mod external;
mod faults;
mod journal;
mod protocol;
mod run;
mod scenario;
mod services;
mod summary;
mod supervisor;

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::Parser;

use crate::backend::BackendError;
use crate::cli::{Cli, Command};
use crate::services::ServiceError;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    match cli.command {
        Command::Actor => ExitCode::from(actor::main() as u8),
        Command::Receiver(args) => ExitCode::from(actor::receiver_main(external::ExternalSpec {
            addr: args.listen,
            db: args.db,
            slow_ms: args.slow_ms,
        }) as u8),
        Command::Bench(args) => {
            let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
            match runtime.block_on(bench::run(&args)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("recorder bench: {e:#}");
                    ExitCode::from(exit_code(&e))
                }
            }
        }
        Command::List => {
            list();
            ExitCode::SUCCESS
        }
        Command::Run(args) => {
            let config = match args.resolve() {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("recorder: {e}");
                    return ExitCode::from(2);
                }
            };
            let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
            let interrupted = Arc::new(AtomicBool::new(false));
            runtime.spawn({
                let interrupted = interrupted.clone();
                async move {
                    if tokio::signal::ctrl_c().await.is_ok() {
                        eprintln!(
                            "recorder: interrupted; stopping actors and keeping what was recorded"
                        );
                        interrupted.store(true, Ordering::Relaxed);
                    }
                }
            });
            match runtime.block_on(run::run(&config, interrupted)) {
                Ok(outcome) if outcome.interrupted => ExitCode::from(130),
                Ok(outcome) if !outcome.unrecovered.is_empty() => {
                    eprintln!(
                        "recorder: never became quiet: {} (run_end.recovered is false)",
                        outcome.unrecovered.join(", ")
                    );
                    ExitCode::from(3)
                }
                Ok(_) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("recorder: {e:#}");
                    ExitCode::from(exit_code(&e))
                }
            }
        }
    }
}

fn exit_code(e: &anyhow::Error) -> u8 {
    for cause in e.chain() {
        if cause.downcast_ref::<ServiceError>().is_some() {
            return 4;
        }
        if let Some(BackendError::Unreachable { .. }) = cause.downcast_ref::<BackendError>() {
            return 4;
        }
    }
    1
}

fn list() {
    println!("scenarios (--scenario):");
    for s in scenario::ScenarioName::ALL {
        println!("  {}", s.as_str());
    }
    println!("protocols (--protocol):");
    for p in <protocol::Protocol as clap::ValueEnum>::value_variants() {
        println!("  {}", p.name());
    }
    println!("crash points:");
    for p in faults::CrashPoint::ALL {
        println!("  {p}");
    }
}
