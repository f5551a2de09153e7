//! `recorder list`: the names a command line may use, from the tables that define them.

use crate::driver::scenario::ScenarioName;
use crate::fault::plan::CrashPoint;
use crate::protocol::variant::Protocol;

/// Prints the scenarios, protocol variants and crash points.
pub fn list() {
    println!("scenarios (--scenario):");
    for s in ScenarioName::ALL {
        println!("  {}", s.as_str());
    }
    println!("protocols (--protocol):");
    for p in <Protocol as clap::ValueEnum>::value_variants() {
        println!("  {}", p.name());
    }
    println!("crash points:");
    for p in CrashPoint::ALL {
        println!("  {p}");
    }
}
