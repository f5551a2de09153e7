//! `recorder run`'s flags resolved into a validated [`RunConfig`] before any work starts: every
//! check that needs no service is made here, so a bad command line fails at once with exit 2.

use std::path::PathBuf;
use std::time::Duration;

use super::args::{parse_scenario_arg, ExploreArgs, RunArgs, ScenarioArg};
use crate::backend::connection::BackendKind;
use crate::backend::endpoints::{BadEndpoint, Endpoint};
use crate::driver::scenario::{LoadSpec, ScenarioName};
use crate::driver::service_names::{parse_service, service_name};
use crate::driver::wire::LAB_WIRES;
use crate::fault::spec::{Nemesis, What, WireFault};
use crate::protocol::model::Timing;
use crate::protocol::variant::Protocol;
use crate::system::config::SystemConfig;
use crate::system::file::{System, SystemFileError};

/// A command line that parses but does not make sense.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A URL the recorder cannot use.
    #[error(transparent)]
    Endpoint(#[from] BadEndpoint),
    /// A flag of the other backend, which this run would silently ignore.
    #[error("{flag} is for --backend {owner}; this run uses --backend {backend} (remove {flag})")]
    Foreign {
        /// The flag as typed.
        flag: &'static str,
        /// The backend that uses it.
        owner: &'static str,
        /// The backend of this run.
        backend: &'static str,
    },
    /// A scenario that needs something the backend does not have.
    #[error("scenario `{scenario}` does not run on backend `{backend}`")]
    Unsupported {
        /// The scenario's command-line name.
        scenario: &'static str,
        /// The backend's command-line name.
        backend: &'static str,
    },
    /// A cluster the recorder cannot start.
    #[error("{0}")]
    Cluster(&'static str),
    /// Two outputs that would overwrite each other.
    #[error("{0}")]
    Output(&'static str),
    /// A scenario name that does not exist.
    #[error("{0}")]
    Scenario(String),
    /// A system file that cannot be used.
    #[error(transparent)]
    System(#[from] SystemFileError),
    /// A malformed `--fault`.
    #[error("{0}")]
    Fault(String),
    /// A search that cannot be resumed, or a plan file that cannot be used.
    #[error("{0}")]
    Search(String),
    /// An output that would destroy a file, or an environment that sets the recorder's own
    /// variables.
    #[error(transparent)]
    Refused(#[from] super::outputs::Refused),
}

/// What `recorder run` will do: the recorder's own protocol, or a user's system.
#[derive(Debug, Clone)]
pub enum RunPlan {
    /// The built-in protocol on one of the backends.
    Builtin(Box<RunConfig>),
    /// A user's own system (`--system FILE`).
    System(Box<SystemConfig>),
}

impl RunPlan {
    /// Resolves `recorder run`'s arguments.
    pub fn resolve(args: &RunArgs) -> Result<RunPlan, ConfigError> {
        match &args.system {
            None => RunConfig::resolve(args).map(|c| RunPlan::Builtin(Box::new(c))),
            Some(path) => resolve_system(args, path).map(|c| RunPlan::System(Box::new(c))),
        }
    }
}

/// The one scenario `--chaos SEED` runs when no `--scenario` is named.
pub const CHAOS_SCENARIO: &str = "chaos";

/// A resolved `recorder explore`.
#[derive(Debug, Clone)]
pub struct ExploreConfig {
    /// The system, with no scenario of its own and no fault: the search makes them.
    pub system: SystemConfig,
    /// Schedules at a time.
    pub jobs: usize,
    /// How long a searched pause of a process lasts.
    pub pause_for: Duration,
    /// Only the calm run and its shape.
    pub shape_only: bool,
    /// Where the JSON goes.
    pub json: Option<PathBuf>,
    /// Where the JUnit XML goes.
    pub junit: Option<PathBuf>,
    /// Only the schedules whose spec holds one of these.
    pub only: Vec<String>,
    /// `--depth 2`: the seed and budget of the pairs.
    pub pairs: Option<(u64, Duration)>,
    /// Stop at the first invalid schedule.
    pub fail_fast: bool,
    /// `--resume`.
    pub resume: bool,
    /// `--shard K/N`.
    pub shard: Option<super::shard::Shard>,
    /// `--plan FILE`.
    pub plan: Option<PathBuf>,
    /// `--write-plan FILE`.
    pub write_plan: Option<PathBuf>,
}

impl ExploreConfig {
    /// Resolves `recorder explore`'s arguments.
    pub fn resolve(args: &ExploreArgs) -> Result<ExploreConfig, ConfigError> {
        let system = System::load(&args.system)?;
        super::outputs::own_variables_refused(&system, &args.env)?;
        super::outputs::outputs_apart(
            &args.out,
            &[
                ("--json", args.json.as_deref()),
                ("--junit", args.junit.as_deref()),
            ],
            &[&args.system],
        )?;
        if args.jobs == 0 || args.jobs > 64 {
            return Err(ConfigError::Scenario(format!(
                "--jobs {}: from 1 to 64 schedules at a time",
                args.jobs
            )));
        }
        if args.tasks == Some(0) {
            return Err(ConfigError::Scenario("--tasks 0: at least one task".into()));
        }
        Ok(ExploreConfig {
            system: SystemConfig {
                scenarios: Vec::new(),
                faults: Vec::new(),
                env: args.env.clone(),
                tasks: args.tasks.unwrap_or(system.file.tasks.count),
                chaos: None,
                deadline: args.deadline,
                out: args.out.clone(),
                otlp: None,
                report: None,
                progress: !args.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr()),
                system,
            },
            jobs: args.jobs,
            pause_for: args.pause_for,
            shape_only: args.shape,
            json: args.json.clone(),
            junit: args.junit.clone(),
            only: args.only.clone(),
            pairs: (args.depth == 2).then_some((args.seed, args.budget)),
            fail_fast: args.fail_fast,
            resume: args.resume,
            shard: args.shard,
            plan: args.plan.clone(),
            write_plan: args.write_plan.clone(),
        })
    }
}

/// Resolves `recorder run --system FILE`'s arguments.
fn resolve_system(args: &RunArgs, path: &std::path::Path) -> Result<SystemConfig, ConfigError> {
    let system = System::load(path)?;
    super::outputs::own_variables_refused(&system, &args.env)?;
    let scenarios = system_scenarios(args, &system)?;
    let faults = args
        .faults
        .iter()
        .map(|f| system.fault(f))
        .collect::<Result<Vec<_>, _>>()
        .map_err(ConfigError::Fault)?;
    if args.otlp.as_ref() == Some(&args.out) {
        return Err(ConfigError::Output(
            "--otlp must name another file than --out (the Parquet trace)",
        ));
    }
    super::outputs::outputs_apart(
        &args.out,
        &[
            ("--otlp", args.otlp.as_deref()),
            ("--report", args.report.as_deref()),
        ],
        &[path],
    )?;
    let tasks = match args.tasks {
        Some(n) => u32::try_from(n)
            .map_err(|_| ConfigError::Scenario(format!("--tasks {n} is too many")))?,
        None => system.file.tasks.count,
    };
    Ok(SystemConfig {
        scenarios,
        faults,
        env: args.env.clone(),
        tasks,
        chaos: args.chaos.map(|seed| (seed, args.chaos_window)),
        deadline: args.deadline,
        out: args.out.clone(),
        otlp: args.otlp.clone(),
        report: args.report.clone(),
        progress: !args.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr()),
        system,
    })
}

/// The system's scenarios `--scenario` names, in order and each once (all of them without any;
/// with `--chaos` alone, one scenario whose faults are the seed's draw).
fn system_scenarios(
    args: &RunArgs,
    system: &System,
) -> Result<Vec<(String, Vec<Nemesis>)>, ConfigError> {
    let mut scenarios = Vec::new();
    let asked: Vec<&str> = if args.scenario.is_empty() && args.chaos.is_some() {
        // `--chaos` alone: one scenario whose faults are the seed's draw (and `--fault`s), as
        // the built-in protocol's `--chaos` runs its load scenario.
        scenarios.push((CHAOS_SCENARIO.to_string(), Vec::new()));
        Vec::new()
    } else if args.scenario.is_empty() {
        vec!["all"]
    } else {
        args.scenario.iter().map(String::as_str).collect()
    };
    for name in asked {
        if name == "all" {
            scenarios.extend(system.scenarios.iter().cloned());
            continue;
        }
        match system.scenarios.iter().find(|(n, _)| n == name) {
            Some(s) => scenarios.push(s.clone()),
            None => {
                let names: Vec<&str> = system.scenarios.iter().map(|(n, _)| n.as_str()).collect();
                return Err(ConfigError::Scenario(format!(
                    "unknown scenario `{name}` for --system (its scenarios: all, {})",
                    names.join(", ")
                )));
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    scenarios.retain(|(n, _)| seen.insert(n.clone()));
    Ok(scenarios)
}

/// A validated run configuration.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The store and broker every scenario of the run uses.
    pub backend: BackendKind,
    /// Scenarios, in order.
    pub scenarios: Vec<ScenarioName>,
    /// The protocol variant every actor of every scenario runs.
    pub protocol: Protocol,
    /// The Parquet trace to write; by default the SQLite files go in `<out-dir>/<out-stem>/`.
    pub out: PathBuf,
    /// The same run as OTLP JSON Lines, if wanted.
    pub otlp: Option<PathBuf>,
    /// Where to write the lab's JSON, if anywhere.
    pub report: Option<PathBuf>,
    /// The user's etcd, or `None` to start our own.
    pub etcd: Option<Endpoint>,
    /// The user's NATS, or `None` to start our own.
    pub nats: Option<Endpoint>,
    /// The size of the `load` scenario.
    pub load: LoadSpec,
    /// Seed and window of the chaos plan, if any.
    pub chaos: Option<(u64, Duration)>,
    /// Members of each local cluster the recorder starts (1: one plain service).
    pub cluster: usize,
    /// Copies of the stream NATS keeps.
    pub replicas: usize,
    /// A NATS credentials file for the user's NATS.
    pub nats_creds: Option<PathBuf>,
    /// The user's Redis, or `None` to start our own.
    pub redis: Option<Endpoint>,
    /// Where the SQLite files go, or `None` for the run's output directory.
    pub db_dir: Option<PathBuf>,
    /// Timing knobs as the flags set them; the run raises AckWait to the variant's minimum.
    pub timing: Timing,
    /// How long one scenario may take to become quiet.
    pub deadline: Duration,
    /// Print a live progress line.
    pub progress: bool,
    /// Record the actors' steps (false: only the recorder's own rows and crashes).
    pub trace: bool,
    /// `--fault`: injected in every scenario.
    pub faults: Vec<Nemesis>,
}

impl RunConfig {
    /// Resolves `recorder run`'s arguments into a run configuration.
    pub fn resolve(args: &RunArgs) -> Result<RunConfig, ConfigError> {
        let scenarios = lab_scenarios(args)?;
        refuse_foreign(args)?;
        lab_outputs_apart(args)?;
        check_cluster(args)?;
        let etcd = endpoint("etcd", args.etcd.as_deref(), &["http", "https"])?;
        let nats = endpoint("nats", args.nats.as_deref(), &["nats", "tls"])?;
        let redis = endpoint("redis", args.redis.as_deref(), &["redis", "rediss"])?;
        let own_services = match args.backend {
            BackendKind::EtcdJetstream => etcd.is_none() && nats.is_none(),
            BackendKind::SqliteRedis => redis.is_none(),
        };
        let faults = args
            .faults
            .iter()
            .map(|f| lab_fault(f, args.backend, own_services, args.cluster))
            .collect::<Result<Vec<_>, _>>()
            .map_err(ConfigError::Fault)?;
        Ok(RunConfig {
            faults,
            backend: args.backend,
            scenarios,
            protocol: args.protocol,
            out: args.out.clone(),
            otlp: args.otlp.clone(),
            report: args.report.clone(),
            etcd,
            nats,
            redis,
            nats_creds: args.nats_creds.clone(),
            cluster: args.cluster,
            replicas: args.replicas.unwrap_or(args.cluster).max(1),
            chaos: args.chaos.map(|seed| (seed, args.chaos_window)),
            load: LoadSpec {
                tasks: args.tasks.unwrap_or(LoadSpec::default().tasks),
                workers: args.workers,
                aggregates: args.aggregates,
                rate: args.rate,
            },
            db_dir: args.db.clone(),
            timing: Timing {
                ack_wait: args.ack_wait,
                publish_timeout: args.publish_timeout,
                ..Timing::default()
            },
            deadline: args.deadline,
            trace: !args.no_trace,
            progress: !args.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr()),
        })
    }
}

/// The lab's scenarios `--scenario` names, in order and each once (all of the backend's, or
/// `load` when only `--tasks` is given, without any); one the backend cannot run is refused.
fn lab_scenarios(args: &RunArgs) -> Result<Vec<ScenarioName>, ConfigError> {
    let mut scenarios = Vec::new();
    let default = [if args.tasks.is_some() {
        ScenarioArg::One(ScenarioName::Load)
    } else {
        ScenarioArg::All
    }];
    let parsed = args
        .scenario
        .iter()
        .map(|s| parse_scenario_arg(s))
        .collect::<Result<Vec<_>, _>>()
        .map_err(ConfigError::Scenario)?;
    let asked: &[ScenarioArg] = if parsed.is_empty() { &default } else { &parsed };
    for arg in asked {
        match arg {
            ScenarioArg::All => scenarios.extend(ScenarioName::all_on(args.backend)),
            ScenarioArg::One(n) if !n.runs_on(args.backend) => {
                return Err(ConfigError::Unsupported {
                    scenario: n.as_str(),
                    backend: args.backend.name(),
                })
            }
            ScenarioArg::One(n) => scenarios.push(*n),
        }
    }
    let mut seen = std::collections::HashSet::new();
    scenarios.retain(|s| seen.insert(*s));
    Ok(scenarios)
}

/// `--otlp` and `--report` apart from `--out` and from each other, and none of them over the
/// NATS credentials.
fn lab_outputs_apart(args: &RunArgs) -> Result<(), ConfigError> {
    if args.otlp.as_ref() == Some(&args.out) {
        return Err(ConfigError::Output(
            "--otlp must name another file than --out (the Parquet trace)",
        ));
    }
    let creds: Vec<&std::path::Path> = args.nats_creds.iter().map(PathBuf::as_path).collect();
    super::outputs::outputs_apart(
        &args.out,
        &[
            ("--otlp", args.otlp.as_deref()),
            ("--report", args.report.as_deref()),
        ],
        &creds,
    )?;
    Ok(())
}

/// `--cluster`: 1, 3 or 5 members, of etcd and NATS, started by the recorder.
fn check_cluster(args: &RunArgs) -> Result<(), ConfigError> {
    if ![1, 3, 5].contains(&args.cluster) {
        return Err(ConfigError::Cluster("--cluster must be 1, 3 or 5"));
    }
    if args.cluster > 1 && args.backend != BackendKind::EtcdJetstream {
        return Err(ConfigError::Cluster(
            "--cluster needs --backend etcd-jetstream (SQLite is one file, not a cluster)",
        ));
    }
    if args.cluster > 1 && (args.etcd.is_some() || args.nats.is_some()) {
        return Err(ConfigError::Cluster(
            "--cluster starts its own services; with --etcd/--nats, list your members \
             comma-separated and set --replicas",
        ));
    }
    Ok(())
}

/// The user's `service` at `url`, if given, in one of `schemes`.
fn endpoint(
    service: &'static str,
    url: Option<&str>,
    schemes: &[&str],
) -> Result<Option<Endpoint>, ConfigError> {
    Ok(url
        .map(|u| Endpoint::parse(service, u, schemes))
        .transpose()?)
}

/// Why the lab cannot lose a reply of `fault`'s protocol on `service`, if it cannot: no service
/// of the lab speaks that protocol, or `service` is not the one that does.
fn lab_reads(fault: WireFault, service: Option<&str>) -> Option<String> {
    if !fault.loses_a_reply() {
        return None;
    }
    let verb = fault.verb();
    let protocol = fault.protocols_in_words();
    match LAB_WIRES.iter().find(|(_, w)| w.offer(fault).is_some()) {
        None => Some(format!(
            "the lab has no {protocol}: `{verb}` is for `--system` runs"
        )),
        Some((name, _)) if service != Some(*name) => Some(format!(
            "`{verb}` reads {protocol}: its service is `{name}`"
        )),
        Some(_) => None,
    }
}

/// Parses one `--fault` of a lab run and checks its names against the lab: the roles `api`,
/// `relay`, `worker` (an instance: `worker-N`) and `receiver`, as a fault's target or as the
/// process whose step a service's fault follows; the services the recorder runs for `backend`
/// (`etcd`, `nats`, with `-N` for a cluster's member; `redis`).
fn lab_fault(
    text: &str,
    backend: BackendKind,
    own_services: bool,
    cluster: usize,
) -> Result<Nemesis, String> {
    let spec = Nemesis::parse(text)?
        .resolve(|name| parse_service(name).is_some())
        .map_err(|e| format!("fault `{text}`: {e}"))?;
    if let What::Wire { target, fault, .. } = &spec.what {
        let why = if !own_services || cluster > 1 {
            Some("wire faults need the recorder's own single servers (its proxies stand between each actor and each of them)".to_string())
        } else if let Some(why) = lab_reads(*fault, spec.service()) {
            Some(why)
        } else if target.starts_with("receiver") {
            Some("the receiver reaches no service".to_string())
        } else {
            None
        };
        if let Some(why) = why {
            return Err(format!("fault `{text}`: {why}"));
        }
    }
    // A process the fault hits, or whose step a service's fault follows.
    for name in spec.target().into_iter().chain(spec.reporter()) {
        let role = name
            .rsplit_once('-')
            .filter(|(_, n)| n.parse::<u32>().is_ok_and(|n| n >= 1))
            .map_or(name, |(role, _)| role);
        let known = ["api", "relay", "worker", "receiver"];
        let instance_of_one = role != name && role != "worker";
        if !known.contains(&role) || instance_of_one {
            return Err(format!(
                "fault `{text}`: no role or instance `{name}` in the lab (roles: api, relay, \
                 worker, receiver; workers as worker-1, worker-2, ...)"
            ));
        }
    }
    if let Some(service) = spec.service() {
        let services: &[&str] = match backend {
            BackendKind::EtcdJetstream => &["etcd", "nats"],
            BackendKind::SqliteRedis => &["redis"],
        };
        let member = parse_service(service).filter(|(kind, member)| {
            services.contains(&service_name(*kind)) && (*member < cluster || *member == 0)
        });
        if service == "sqlite" {
            return Err(format!(
                "fault `{text}`: the SQLite file is opened by the actors, not served by a \
                 process: there is nothing to restart"
            ));
        }
        if member.is_none() {
            return Err(format!(
                "fault `{text}`: no service `{service}` on --backend {} (services: {})",
                backend.name(),
                services.join(", ")
            ));
        }
        if !own_services {
            return Err(format!(
                "fault `{text}`: the recorder restarts only services it started itself \
                 (this run uses your own)"
            ));
        }
    }
    Ok(spec)
}

/// Refuses a flag the chosen backend does not use (`--redis` on `etcd-jetstream`, `--etcd` on
/// `sqlite-redis`, ...), which would otherwise be silently ignored. A value that came from an
/// `OUTBOX_TRACE_*` variable is not refused: one environment may serve both backends.
fn refuse_foreign(args: &RunArgs) -> Result<(), ConfigError> {
    // A value clap took from the variable equals it; one typed on the command line wins over it.
    let typed = |value: Option<std::ffi::OsString>, var: &str| {
        value.is_some_and(|v| std::env::var_os(var).as_ref() != Some(&v))
    };
    let string = |v: &Option<String>| v.as_ref().map(std::ffi::OsString::from);
    let (flags, owner) = match args.backend {
        BackendKind::EtcdJetstream => (
            vec![
                ("--redis", typed(string(&args.redis), "OUTBOX_TRACE_REDIS")),
                ("--db", args.db.is_some()),
            ],
            BackendKind::SqliteRedis,
        ),
        BackendKind::SqliteRedis => (
            vec![
                ("--etcd", typed(string(&args.etcd), "OUTBOX_TRACE_ETCD")),
                ("--nats", typed(string(&args.nats), "OUTBOX_TRACE_NATS")),
                (
                    "--nats-creds",
                    typed(
                        args.nats_creds.clone().map(Into::into),
                        "OUTBOX_TRACE_NATS_CREDS",
                    ),
                ),
                ("--replicas", args.replicas.is_some()),
            ],
            BackendKind::EtcdJetstream,
        ),
    };
    match flags.into_iter().find(|(_, given)| *given) {
        Some((flag, _)) => Err(ConfigError::Foreign {
            flag,
            owner: owner.name(),
            backend: args.backend.name(),
        }),
        None => Ok(()),
    }
}
