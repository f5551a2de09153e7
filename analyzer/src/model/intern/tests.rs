use std::collections::HashMap;

use super::slots::Slots;
use super::*;

#[test]
fn same_string_same_id() {
    let mut i = Interner::default();
    let a = i.intern("evt-1").unwrap();
    let b = i.intern("evt-2").unwrap();
    let empty = i.intern("").unwrap();
    assert_ne!(a, b);
    assert_eq!(i.intern("evt-1").unwrap(), a);
    assert_eq!(i.name(b), "evt-2");
    assert_eq!(i.name(a), "evt-1");
    assert_eq!(i.name(empty), "");
    assert_eq!(i.intern("").unwrap(), empty);
    for n in 0..10_000 {
        let id = i.intern(&format!("k{n}")).unwrap();
        assert_eq!(i.name(id), format!("k{n}"));
    }
    assert_eq!(i.intern("evt-2").unwrap(), b);
    assert_eq!(i.len(), 10_003);
}

#[test]
fn names_of_any_length_read_back() {
    let mut i = Interner::default();
    let names: Vec<String> = (0..3000).map(|n| "x".repeat(n % 300)).collect();
    let mut ids = Vec::new();
    for (n, name) in names.iter().enumerate() {
        let name = format!("{name}{n}");
        ids.push((i.intern(&name).unwrap(), name));
    }
    for (id, name) in &ids {
        assert_eq!(i.name(*id), name);
        assert_eq!(i.get(name), Some(*id));
        assert_eq!(i.intern(name).unwrap(), *id);
    }
    assert_eq!(i.len(), ids.len());
    assert_eq!(i.get("absent"), None);
    assert_eq!(i.name(Id::from_index(ids.len()).unwrap()), "");
}

#[test]
fn a_run_of_lookups_gives_each_name_one_id() {
    // Chunks of many sizes, names repeated within a chunk and across chunks, the table
    // growing on the way: a name keeps the id it was first given, and reads back.
    let mut i = Interner::default();
    let mut seen: HashMap<String, Id> = HashMap::new();
    let mut n = 0u64;
    for chunk in 0..400usize {
        let names: Vec<String> = (0..chunk % 37 * 50)
            .map(|k| {
                n = n
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                format!("name-{}", (n >> 33) % 120_000 + k as u64 % 3)
            })
            .collect();
        let ids = i
            .intern_all(names.iter().map(|n| Some(n.as_str())))
            .unwrap();
        for (name, id) in names.iter().zip(ids) {
            let first = *seen.entry(name.clone()).or_insert(id);
            assert_eq!(id, first, "{name}");
            assert_eq!(i.name(id), name);
        }
    }
    assert_eq!(i.len(), seen.len());
    assert!(seen.len() > 50_000, "{}", seen.len());
    let absent = i.intern_all([None, Some("")].into_iter()).unwrap();
    assert_eq!(absent[0], absent[1]);
    assert_eq!(i.get(""), Some(absent[0]));
}

#[test]
fn an_expected_size_grows_the_table_once() {
    let mut i = Interner::default();
    i.expect(100_000);
    i.intern("first").unwrap();
    let capacity = i.slots.capacity();
    assert!(capacity >= 100_000, "{capacity}");
    for n in 1..100_000 {
        i.intern(&format!("k{n}")).unwrap();
    }
    assert_eq!(i.slots.capacity(), capacity);
    assert_eq!(i.get("k99999").map(|id| i.name(id)), Some("k99999"));
}

#[test]
fn a_probe_wraps_around_the_last_slot() {
    let mut slots = Slots::room_for(8);
    let last = slots.capacity() - 1;
    // Hashes whose probes start at the last slot: the second and third wrap to the first.
    let hash = u64::MAX;
    assert_eq!(slots.home(hash), last);
    let ids: Vec<Id> = (0..3).filter_map(Id::from_index).collect();
    for &id in &ids {
        slots.insert_new(hash, id);
    }
    for &id in &ids {
        assert_eq!(slots.find(hash, |x| x == id), Ok(id));
    }
    assert_eq!(slots.ids[last], ids[0].0.get());
    assert_eq!(slots.ids[0], ids[1].0.get());
    assert_eq!(slots.ids[1], ids[2].0.get());
    assert_eq!(slots.find(hash, |_| false), Err(2));
}

#[test]
fn room_for_some_names_fits_them() {
    for names in [0, 1, 1000, 4097, 100_001, 123_457] {
        let slots = Slots::room_for(names);
        assert!(slots.fits(names), "{names}");
    }
}

#[test]
fn wide_values_read_back() {
    let mut t = IdTable64::default();
    let ids: Vec<Id> = (0..5).filter_map(Id::from_index).collect();
    let values = [0, u64::from(u32::MAX) - 1, u64::from(u32::MAX), u64::MAX, 7];
    for (&id, &v) in ids.iter().zip(&values) {
        t.set(id, v);
    }
    for (&id, &v) in ids.iter().zip(&values) {
        assert_eq!(t.get(id), v);
    }
    t.set(ids[3], 9);
    assert_eq!(t.get(ids[3]), 9);
    assert_eq!(t.get(Id::from_index(99).unwrap()), 0);
}

#[test]
fn an_id_set_counts_distinct_members() {
    use outbox_trace::KeySet;
    let mut set = IdSet::default();
    let ids: Vec<Id> = [0, 63, 64, 1000, 63]
        .iter()
        .filter_map(|&i| Id::from_index(i))
        .collect();
    for &id in &ids {
        set.insert(id);
    }
    assert_eq!(set.count(), 4);
    assert!(set.contains(ids[3]));
    assert!(!set.contains(Id::from_index(999).unwrap()));
}
