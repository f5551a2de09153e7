//! Each subcommand's glue, one function per command: its arguments resolved, the library
//! called, and the exit code it ends with. A run or a search ends the same way on Ctrl-C
//! (SIGINT), SIGTERM and SIGHUP, with an exit code that says which.

use std::process::ExitCode;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use outbox_analyzer::check::RunVerdict;
use outbox_trace::{detail_key, Kind};
use tokio_util::sync::CancellationToken;

use crate::cli::args::{Command, ExploreArgs, ReceiverArgs, RunArgs};
use crate::cli::config::{ExploreConfig, RunPlan};
use crate::cli::exit::{Exit, Failure};
use crate::cli::list::list;
use crate::driver::actor::process;
use crate::protocol::external::spec::ExternalSpec;

/// Runs `command` to its end.
pub fn dispatch(command: Command) -> ExitCode {
    match command {
        Command::Actor => ExitCode::from(process::main() as u8),
        Command::Watchdog { mark } => {
            ExitCode::from(crate::process::watchdog::watchdog_main(&mark) as u8)
        }
        Command::Receiver(args) => receiver(args),
        Command::Explore(args) => explore(&args),
        Command::List => {
            list();
            ExitCode::SUCCESS
        }
        Command::Run(args) => run(&args),
    }
}

/// `recorder receiver`: the payments receiver the lab's workers call.
fn receiver(args: ReceiverArgs) -> ExitCode {
    ExitCode::from(process::receiver_main(ExternalSpec {
        addr: args.listen,
        db: args.db,
        slow_ms: args.slow_ms,
    }) as u8)
}

/// `recorder explore`: the search's verdict as its exit code (0 valid, 1 invalid, 3 unknown).
fn explore(args: &ExploreArgs) -> ExitCode {
    let config = match ExploreConfig::resolve(args) {
        Ok(c) => c,
        Err(e) => return fail("recorder", &Failure::from(e)),
    };
    let (runtime, shutdown, ended_by) = until_a_signal();
    match runtime.block_on(crate::run::explore(&config, shutdown)) {
        Ok(e) if e.interrupted => ExitCode::from(ended_by.load(Ordering::Relaxed)),
        Ok(e) => ExitCode::from(match e.verdict {
            RunVerdict::Valid => 0,
            RunVerdict::Invalid => 1,
            RunVerdict::Unknown => 3,
        }),
        Err(e) => fail("recorder", &e),
    }
}

/// `recorder run`: the built-in lab or a team's own system; exit 3 when a scenario never became
/// quiet. A failed run names what it kept of the trace.
fn run(args: &RunArgs) -> ExitCode {
    let plan = match RunPlan::resolve(args) {
        Ok(p) => p,
        Err(e) => return fail("recorder", &Failure::from(e)),
    };
    let (runtime, shutdown, ended_by) = until_a_signal();
    let outcome = match &plan {
        RunPlan::Builtin(config) => runtime.block_on(crate::run::run(config, shutdown)),
        RunPlan::System(config) => runtime.block_on(crate::run::run_system(config, shutdown)),
    };
    match outcome {
        Ok(outcome) if outcome.interrupted => ExitCode::from(ended_by.load(Ordering::Relaxed)),
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
            match crate::journal::writer::kept_parts(out) {
                Some(kept) => {
                    eprintln!("recorder: {e}; {kept}");
                    exit(e.exit())
                }
                None => fail("recorder", &e),
            }
        }
    }
}

/// A runtime whose work the first signal stops: the shutdown it cancels, and the exit code the
/// signal calls for (130 until one arrives).
fn until_a_signal() -> (tokio::runtime::Runtime, CancellationToken, Arc<AtomicU8>) {
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let shutdown = CancellationToken::new();
    let ended_by = Arc::new(AtomicU8::new(Exit::Interrupted as u8));
    runtime.spawn(stop_on_signals(shutdown.clone(), ended_by.clone()));
    (runtime, shutdown, ended_by)
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

/// The process's exit code for `code`.
pub fn exit(code: Exit) -> ExitCode {
    ExitCode::from(code as u8)
}
