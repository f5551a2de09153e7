use super::*;
use crate::Kind;

#[test]
fn fault_kinds_round_trip_by_name() {
    assert_eq!(FaultKind::ALL.len(), 12);
    for kind in FaultKind::ALL {
        let name = kind.as_str();
        assert!(kind.is_known(), "{name}");
        assert_eq!(&FaultKind::from(name), kind);
        assert_eq!(name.parse::<FaultKind>(), Ok(kind.clone()));
        assert_eq!(kind.to_string(), name);
        let json = serde_json::to_string(kind).unwrap();
        assert_eq!(json, format!("\"{name}\""));
        assert_eq!(&serde_json::from_str::<FaultKind>(&json).unwrap(), kind);
        assert_eq!(String::from(kind.clone()), name);
    }
    assert!(matches!(
        FaultKind::from("broker-restart"),
        FaultKind::BrokerRestart
    ));
    assert_eq!(FaultKind::from("pause".to_string()), "pause");
    assert_eq!(FaultKind::LosePuback, *"lose-puback");
    assert_eq!(format!("{:<8}|", FaultKind::Cut), "cut     |");
}

#[test]
fn an_unknown_fault_name_is_kept_and_written_back_unchanged() {
    let odd = FaultKind::from("lose-publish-ack");
    assert_eq!(odd, FaultKind::Other("lose-publish-ack".into()));
    assert!(!odd.is_known());
    assert_eq!(odd.as_str(), "lose-publish-ack");
    assert_eq!(
        serde_json::to_string(&odd).unwrap(),
        r#""lose-publish-ack""#
    );
    let back: FaultKind = serde_json::from_str(r#""lose-publish-ack""#).unwrap();
    assert_eq!(back, odd);
    // Names compare as names, whichever variant holds them.
    assert_eq!(FaultKind::Other("pause".into()), FaultKind::Pause);
    assert_eq!(FaultKind::default(), "");
    assert_eq!(FaultKind::default().into_string(), "");
    assert_eq!(FaultKind::from(""), FaultKind::default());
}

#[test]
fn crash_sites_round_trip_by_name() {
    for site in CrashSite::ALL {
        let name = site.as_str();
        assert!(site.is_known(), "{name}");
        assert_eq!(&CrashSite::from(name), site);
        assert_eq!(serde_json::to_string(site).unwrap(), format!("\"{name}\""));
    }
    assert!(matches!(
        CrashSite::from("chaos:sigkill"),
        CrashSite::ChaosSigkill
    ));
    assert!(matches!(CrashSite::from("exit"), CrashSite::Exit));
    let after = CrashSite::from("worker:after-effect_committed");
    let CrashSite::AfterStep(step) = &after else {
        panic!("{after:?}");
    };
    assert_eq!(
        (step.role(), step.kind()),
        ("worker", Kind::EffectCommitted)
    );
    assert_eq!(
        after,
        CrashSite::after_step("worker", Kind::EffectCommitted)
    );
    assert_eq!(after.to_string(), "worker:after-effect_committed");
    assert_eq!(after.clone().into_string(), "worker:after-effect_committed");
    let back: CrashSite = serde_json::from_str(r#""api-2:after-intent_recorded""#).unwrap();
    assert!(matches!(&back, CrashSite::AfterStep(s) if s.role() == "api-2"));
    assert_eq!(back, "api-2:after-intent_recorded");
}

#[test]
fn other_crash_names_are_kept_as_they_are() {
    for name in [
        "relay:before-publish",
        "worker:after-external-request",
        "worker:after-no_such_kind",
        ":after-acked",
        "after-commit-before-ack",
        "",
    ] {
        let site = CrashSite::from(name);
        assert_eq!(site, CrashSite::Other(name.to_string()), "{name}");
        assert!(!site.is_known());
        assert_eq!(site.as_str(), name);
        let json = serde_json::to_string(&site).unwrap();
        assert_eq!(serde_json::from_str::<CrashSite>(&json).unwrap(), site);
        assert_eq!(String::from(site), name);
    }
    assert_eq!(CrashSite::default(), "");
    assert_eq!("kill".parse::<CrashSite>(), Ok(CrashSite::Kill));
}
