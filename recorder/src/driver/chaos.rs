//! The lab's draw on its actors' steps (`--chaos SEED`): the draw a team's system gets
//! ([`SystemChaos`]), over the lab's roles (`api`, `relay`, the workers), the kinds its actors
//! report, and the service members the run may restart (`etcd`, `nats`, `redis`; `nats-2` on a
//! cluster; the SQLite file is no service). A (role, kind) pair is armed when the role first
//! reports that kind, and a pause of each worker into the gap after a kind when that gap is first
//! measured (from the step times of one life). Every actor life of a chaos run holds its reports,
//! so a kill lands right after its step.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use outbox_trace::detail::ChaosArmed;
use outbox_trace::Kind;

use super::service_names::service_name;
use crate::backend::connection::BackendKind;
use crate::backend::services::ServiceKind;
use crate::fault::chaos::{ChaosPlan, Layout, SystemChaos};
use crate::fault::spec::Nemesis;
use crate::fault::trigger::Trigger;
use crate::journal::author::{ActorId, Role};

/// The kinds each of the lab's roles reports.
pub const ROLE_KINDS: [(Role, &[Kind]); 3] = [
    (Role::Api, &[Kind::TaskAccepted, Kind::IntentRecorded]),
    (
        Role::Relay,
        &[
            Kind::PublishAttempt,
            Kind::PublishAcked,
            Kind::PublishUnacked,
            Kind::PublishFailed,
            Kind::OutboxMarked,
        ],
    ),
    (
        Role::Worker,
        &[
            Kind::Delivered,
            Kind::Redelivered,
            Kind::EffectCommitted,
            Kind::DuplicateSuppressed,
            Kind::CommitConflict,
            Kind::Acked,
        ],
    ),
];

/// The lab's draw in one scenario: what it armed on the trigger, and what it has seen.
#[derive(Debug)]
pub struct LabChaos {
    draw: SystemChaos,
    /// The (role, kind) pairs reported so far.
    reported: BTreeSet<(&'static str, Kind)>,
    /// The (role, kind) pairs whose following gap was measured.
    gapped: BTreeSet<(&'static str, Kind)>,
    /// Each life's last step, by (actor, life): (kind, ts_ns).
    last: BTreeMap<(String, u32), (Kind, i64)>,
}

impl LabChaos {
    /// The draw of `plan` for a scenario of `workers` workers and `tasks` tasks on `backend`;
    /// `wired` when its actors reach the services through proxies (else no wire fault is drawn).
    pub fn new(
        plan: &ChaosPlan,
        backend: BackendKind,
        workers: usize,
        tasks: usize,
        wired: bool,
    ) -> LabChaos {
        let layout = layout(plan, backend, workers);
        let draw = SystemChaos::draw(plan.seed, tasks as u32, &layout);
        LabChaos {
            draw: if wired { draw } else { draw.without_wire() },
            reported: BTreeSet::new(),
            gapped: BTreeSet::new(),
            last: BTreeMap::new(),
        }
    }

    /// The kinds a life of `role` holds its reports of: every kind it reports (none for a role
    /// the draw leaves alone, the payments receiver).
    pub fn held_kinds(role: Role) -> Vec<Kind> {
        ROLE_KINDS
            .iter()
            .find(|(r, _)| *r == role)
            .map_or_else(Vec::new, |(_, kinds)| kinds.to_vec())
    }

    /// Life `incarnation` of `actor` reported a step of `kind` at `ts_ns`: the pair is armed on
    /// `trigger` if it is the role's first, and pauses into the gap after the life's previous
    /// step if that gap is the first measured after its kind.
    pub fn on_report(
        &mut self,
        trigger: &mut Trigger,
        actor: ActorId,
        incarnation: u32,
        kind: Kind,
        ts_ns: i64,
    ) {
        if Self::held_kinds(actor.role).is_empty() {
            return;
        }
        let role = actor.role.name();
        if self.reported.insert((role, kind)) {
            self.draw.first_report(trigger, role, kind);
        }
        let life = (actor.to_string(), incarnation);
        if let Some((before, at)) = self.last.insert(life, (kind, ts_ns)) {
            if self.gapped.insert((role, before)) {
                let gap = Duration::from_nanos(ts_ns.saturating_sub(at).max(0) as u64);
                self.draw.first_gap(trigger, role, before, gap);
            }
        }
    }

    /// The indexes on the trigger of what the draw armed.
    pub fn indexes(&self) -> Vec<usize> {
        self.draw.indexes().collect()
    }

    /// What was armed, with each fault's fired count: `run_end.detail.chaos`.
    pub fn report(&self, trigger: &Trigger) -> ChaosArmed {
        self.draw.report(trigger)
    }
}

/// What the draw of `plan` arms in a scenario of `workers` workers and `tasks` tasks on
/// `backend` once every role has reported each of its kinds: a preview of a run's draw (a run
/// arms the pairs its actors report, and pauses into the gaps it measures).
pub fn drawn(plan: &ChaosPlan, backend: BackendKind, workers: usize, tasks: usize) -> Vec<Nemesis> {
    let mut chaos = LabChaos::new(plan, backend, workers, tasks, false);
    let mut trigger = Trigger::default();
    for (role, kinds) in ROLE_KINDS {
        for kind in kinds {
            chaos.on_report(&mut trigger, ActorId::only(role), 0, *kind, 0);
        }
    }
    trigger.armed().iter().map(|a| a.nemesis.clone()).collect()
}

/// The lab as a chaos draw sees it: its roles, the kinds its actors report, and the service
/// members the run may restart, as fault specs name them.
pub fn layout(plan: &ChaosPlan, backend: BackendKind, workers: usize) -> Layout {
    let (broker, store) = match backend {
        BackendKind::EtcdJetstream => (ServiceKind::Nats, Some(ServiceKind::Etcd)),
        BackendKind::SqliteRedis => (ServiceKind::Redis, None),
    };
    let mut services = members(broker, plan.reach.broker_members);
    if let Some(store) = store {
        services.extend(members(store, plan.reach.store_members));
    }
    let records = ROLE_KINDS
        .iter()
        .flat_map(|(_, kinds)| kinds.iter())
        .map(|k| k.as_str().to_string());
    Layout {
        roles: vec![
            ("api".into(), 1),
            ("relay".into(), 1),
            ("worker".into(), workers.max(1) as u32),
        ],
        records: Some(records.collect()),
        services,
        lossy: Vec::new(),
    }
}

/// The names of `count` members of a service: `nats` alone, `nats-1`, `nats-2`, ... in a cluster.
fn members(kind: ServiceKind, count: usize) -> Vec<String> {
    let name = service_name(kind);
    match count {
        0 => Vec::new(),
        1 => vec![name.to_string()],
        _ => (1..=count).map(|i| format!("{name}-{i}")).collect(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// Every pair of the lab reported once, one step a millisecond.
    fn all_reported(chaos: &mut LabChaos, trigger: &mut Trigger) {
        for (role, kinds) in ROLE_KINDS {
            for (i, kind) in kinds.iter().enumerate() {
                let actor = ActorId::only(role);
                chaos.on_report(trigger, actor, 0, *kind, i as i64 * 1_000_000);
            }
        }
    }

    fn specs(seed: u64, backend: BackendKind, members: usize) -> Vec<String> {
        let reach = backend.chaos_reach(2, true, members);
        let plan = ChaosPlan::new(seed, Duration::from_secs(5), reach);
        let drawn = drawn(&plan, backend, 2, 400);
        drawn.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn the_lab_offers_its_roles_kinds_and_service_members() {
        let reach = BackendKind::EtcdJetstream.chaos_reach(4, true, 3);
        let plan = ChaosPlan::new(1, Duration::from_secs(5), reach);
        let cluster = layout(&plan, BackendKind::EtcdJetstream, 4);
        assert_eq!(
            cluster.services,
            ["nats-1", "nats-2", "nats-3", "etcd-1", "etcd-2", "etcd-3"]
        );
        assert_eq!(cluster.roles[2], ("worker".to_string(), 4));
        let redis = BackendKind::SqliteRedis.chaos_reach(2, true, 1);
        let plan = ChaosPlan::new(1, Duration::from_secs(5), redis);
        assert_eq!(
            layout(&plan, BackendKind::SqliteRedis, 2).services,
            ["redis"]
        );
        let theirs = BackendKind::EtcdJetstream.chaos_reach(2, false, 1);
        let plan = ChaosPlan::new(1, Duration::from_secs(5), theirs);
        assert!(layout(&plan, BackendKind::EtcdJetstream, 2)
            .services
            .is_empty());
        assert!(LabChaos::held_kinds(Role::Receiver).is_empty());
    }

    #[test]
    fn a_pair_is_armed_once_and_a_gap_pauses_only_the_workers() {
        let (mut armed_pauses, mut seeds) = (0, 0);
        for seed in 1..=40 {
            let reach = BackendKind::SqliteRedis.chaos_reach(2, true, 1);
            let plan = ChaosPlan::new(seed, Duration::from_secs(5), reach);
            let mut chaos = LabChaos::new(&plan, BackendKind::SqliteRedis, 2, 40, false);
            let mut trigger = Trigger::default();
            // The second round measures the gaps after each role's last kind of the first.
            all_reported(&mut chaos, &mut trigger);
            all_reported(&mut chaos, &mut trigger);
            let once = trigger.armed().len();
            all_reported(&mut chaos, &mut trigger);
            assert_eq!(trigger.armed().len(), once, "armed once per pair and gap");
            for a in trigger.armed() {
                let spec = a.nemesis.to_string();
                assert!(!spec.starts_with("drop"), "no wire without proxies: {spec}");
                if spec.starts_with("pause worker") {
                    armed_pauses += 1;
                } else {
                    assert!(!spec.starts_with("pause api") && !spec.starts_with("pause relay"));
                }
            }
            seeds += 1;
        }
        assert!(armed_pauses > 0 && seeds == 40);
    }

    /// The seeds `tests/it/chaos.rs` runs draw what those tests look for, each after a kind a
    /// load run of 400 tasks reports hundreds of times.
    #[test]
    fn the_integration_tests_seeds_draw_what_they_test() {
        let has = |specs: &[String], wanted: &str| specs.iter().any(|s| s == wanted);
        let etcd = specs(5, BackendKind::EtcdJetstream, 1);
        assert!(
            has(&etcd, "restart nats after api task_accepted 80"),
            "{etcd:?}"
        );
        let redis = specs(18, BackendKind::SqliteRedis, 1);
        assert!(
            has(&redis, "restart redis after relay publish_attempt 72"),
            "{redis:?}"
        );
        let cluster = specs(1, BackendKind::EtcdJetstream, 3);
        assert!(
            has(&cluster, "restart etcd-2 after relay outbox_marked 107"),
            "{cluster:?}"
        );
        for backend in [BackendKind::EtcdJetstream, BackendKind::SqliteRedis] {
            let api = specs(3, backend, 1);
            assert!(has(&api, "kill api after task_accepted 165"), "{api:?}");
        }
    }

    #[test]
    fn restarts_reach_every_member_of_a_cluster() {
        let mut hit = BTreeSet::new();
        for seed in 0..50 {
            for spec in specs(seed, BackendKind::EtcdJetstream, 3) {
                if let Some(rest) = spec.strip_prefix("restart ") {
                    hit.insert(rest.split(' ').next().unwrap().to_string());
                }
            }
        }
        assert_eq!(hit.len(), 6, "{hit:?}");
    }
}
