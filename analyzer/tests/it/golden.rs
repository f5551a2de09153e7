//! Golden files: the chain and boundaries layouts and their renderings for a small hand-built
//! trace and a committed real recording, compared byte for byte. `UPDATE_GOLDEN=1` rewrites them.

use std::path::{Path, PathBuf};

use crate::common::write;
use crate::variants::crashed_lab;
use outbox_analyzer::render::{self, layout};
use outbox_analyzer::views::boundaries;
use outbox_analyzer::views::chain::{self, Selector};
use outbox_analyzer::views::scene::Scenes;
use outbox_trace::{Event, Kind};

fn golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).expect("write golden");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run with UPDATE_GOLDEN=1 to create)",
            path.display()
        )
    });
    assert!(
        expected == actual,
        "{name} differs from its golden file; rerun with UPDATE_GOLDEN=1 if the change is intended\n--- actual ---\n{actual}"
    );
}

fn load(events: &[Event]) -> (tempfile::TempDir, Scenes) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(dir.path(), "t.parquet", events);
    let scenes = Scenes::load(&[path]).expect("load");
    (dir, scenes)
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

#[test]
fn chain_of_a_redelivered_task_is_pinned() {
    let (_dir, scenes) = load(&crashed_lab());
    let chain = chain::select(&scenes, None, &Selector::Task("t-2".into())).expect("chain");
    let lay = layout::layout(&chain);
    golden("lab-t2.txt", &render::text::chain_text(&lay));
    golden("lab-t2.mmd", &render::mermaid::chain_mermaid(&lay));
    golden(
        "lab-t2.svg",
        &render::svg::to_svg(&render::chain_figure(&lay)).expect("svg"),
    );
}

#[test]
fn most_eventful_task_is_the_redelivered_one() {
    let (_dir, scenes) = load(&crashed_lab());
    let chain = chain::select(&scenes, None, &Selector::MostEventful).expect("chain");
    assert!(chain.title.ends_with("task t-2"), "{}", chain.title);
}

#[test]
fn chain_layout_shows_lives_the_gap_and_no_overlap() {
    let (_dir, scenes) = load(&crashed_lab());
    let chain = chain::select(&scenes, None, &Selector::Event("evt-2".into())).expect("chain");
    let lay = layout::layout(&chain);
    let worker = lay
        .lanes
        .iter()
        .find(|l| l.key == "worker")
        .expect("worker lane");
    assert_eq!(worker.segments.len(), 2, "{:?}", worker.segments);
    assert!(worker.segments[0].crashed && !worker.segments[1].crashed);
    assert!(worker.segments[0].y1 <= worker.segments[1].y0);
    assert_eq!(lay.gaps.len(), 1, "{:?}", lay.gaps);
    assert!(
        lay.gaps[0].label.contains("AckWait 2000 ms"),
        "{}",
        lay.gaps[0].label
    );
    let redelivery = lay
        .steps
        .iter()
        .find(|s| s.label.starts_with("redeliver"))
        .unwrap();
    assert!(lay.gaps[0].y1 <= redelivery.y);
    // One step per row height: labels never share a line.
    for w in lay.steps.windows(2) {
        assert!(w[1].y - w[0].y >= layout::ROW, "{:?}", w);
    }
    for s in &lay.steps {
        assert!(s.fitted.chars().count() as i32 * layout::CHAR_W <= lay.width);
    }
}

#[test]
fn long_chains_are_cut_with_a_count() {
    let mut v = crashed_lab();
    let at = v.iter().position(|e| e.kind == Kind::Redelivered).unwrap();
    for n in 0..60u32 {
        let mut e = v[at].clone();
        e.attempt = Some(3 + n);
        v.insert(at + 1, e);
    }
    let (_dir, scenes) = load(&v);
    let chain = chain::select(&scenes, None, &Selector::Event("evt-2".into())).expect("chain");
    let lay = layout::layout(&chain);
    assert_eq!(lay.steps.len(), layout::MAX_STEPS);
    assert_eq!(lay.hidden, chain.rows.len() - layout::MAX_STEPS);
    assert!(
        render::text::chain_text(&lay).contains(&format!("{} more events not shown", lay.hidden))
    );
    let svg = render::svg::to_svg(&render::chain_figure(&lay)).unwrap();
    assert!(svg.contains("more events not shown"));
}

#[test]
fn same_input_gives_same_png_bytes() {
    let (dir, scenes) = load(&crashed_lab());
    let chain = chain::select(&scenes, None, &Selector::Task("t-2".into())).expect("chain");
    let fig = render::chain_figure(&layout::layout(&chain));
    let (a, b) = (dir.path().join("a.png"), dir.path().join("b.png"));
    render::png::write_png(&fig, &a).unwrap();
    render::png::write_png(&fig, &b).unwrap();
    let (a, b) = (std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
    assert!(a.starts_with(b"\x89PNG") && a.len() > 5000);
    assert_eq!(a, b);
}

#[test]
fn real_recording_chain_and_boundaries_are_pinned() {
    let scenes = Scenes::load(&[fixture("etcd_reference.parquet")]).expect("load");
    let chain = chain::select(&scenes, Some("lost-consumer-ack"), &Selector::MostEventful).unwrap();
    let lay = layout::layout(&chain);
    golden(
        "etcd-lost-consumer-ack.txt",
        &render::text::chain_text(&lay),
    );
    golden(
        "etcd-lost-consumer-ack.mmd",
        &render::mermaid::chain_mermaid(&lay),
    );
    let scene = scenes.select(Some("lost-consumer-ack"))[0];
    let b = boundaries::derive(&scene);
    golden(
        "etcd-boundaries.txt",
        &render::boundaries::boundaries_text(&b),
    );
    golden(
        "etcd-boundaries.svg",
        &render::svg::to_svg(&render::boundaries::boundaries_figure(&b)).unwrap(),
    );
}

#[test]
fn external_effect_has_a_receiver_lane() {
    let scenes = Scenes::load(&[fixture("etcd_reference.parquet")]).expect("load");
    let chain = chain::select(
        &scenes,
        Some("external-effect"),
        &Selector::Task("task-1".into()),
    )
    .unwrap();
    let lay = layout::layout(&chain);
    let receiver = lay
        .lanes
        .iter()
        .position(|l| l.key == "receiver")
        .expect("receiver lane");
    assert!(lay.steps.iter().any(
        |s| matches!(s.shape, layout::Shape::Note { lane } if lane == receiver)
            && s.label.contains("applied")
    ));
    assert!(lay.steps.iter().any(|s| s.label.contains("replayed")));
}

#[test]
fn split_outbox_boundaries_differ_from_the_reference() {
    let reference = Scenes::load(&[fixture("etcd_reference.parquet")]).unwrap();
    let split = Scenes::load(&[fixture("etcd_split_outbox.parquet")]).unwrap();
    let a = boundaries::derive(&reference.select(Some("crash-after-accept"))[0]);
    let b = boundaries::derive(&split.select(Some("crash-after-accept"))[0]);
    assert!(a.create_is_atomic());
    assert!(!b.create_is_atomic());
    let create = |b: &boundaries::Boundaries| {
        b.shapes
            .iter()
            .filter(|s| s.role == boundaries::Role::Create)
            .map(|s| s.kinds.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        create(&a),
        vec![vec![Kind::TaskAccepted, Kind::IntentRecorded]]
    );
    assert_eq!(
        create(&b),
        vec![vec![Kind::TaskAccepted], vec![Kind::IntentRecorded]]
    );
    // The drawn task's create is one box in the reference and two in the split variant.
    let creates = |b: &boundaries::Boundaries| {
        boundaries::groups(&b.steps)
            .iter()
            .filter(|g| {
                g.iter()
                    .any(|s| matches!(s.kind, Kind::TaskAccepted | Kind::IntentRecorded))
            })
            .count()
    };
    assert_eq!((creates(&a), creates(&b)), (1, 2));
    let svg_a = render::svg::to_svg(&render::boundaries::boundaries_figure(&a)).unwrap();
    let svg_b = render::svg::to_svg(&render::boundaries::boundaries_figure(&b)).unwrap();
    assert!(svg_b.contains("NOT in one transaction") && !svg_a.contains("NOT in one"));
}
