//! A free loopback port: the one way the recorder picks a port for something it starts (a local
//! service, a role's process, the payments receiver) or for an address nobody listens on.
//!
//! The port is found by binding `127.0.0.1:0` and letting the listener go, so it is free *now*;
//! whoever uses it binds it a moment later. Two things are promised beyond that:
//!
//! - no port is handed out twice by one recorder process, so the ports asked for one after the
//!   other (a service's client and peer ports, a cluster's members, the roles of a system) are
//!   all different even if the kernel offers a port again once its listener is gone;
//! - nothing is retried or reserved past the call: a port taken by someone else between this call
//!   and its use makes that start fail, and the service's own start-up check says so.

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, TcpListener};
use std::sync::Mutex;

/// How many ports the kernel may offer that were handed out already before giving up.
const ATTEMPTS: usize = 64;

/// A TCP port on 127.0.0.1 that is free now and was not handed out before by this process.
pub fn free_port() -> std::io::Result<u16> {
    static GIVEN: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
    // Each listener is kept until the search ends, so the kernel offers a new port each time.
    let mut held = Vec::new();
    for _ in 0..ATTEMPTS {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let port = listener.local_addr()?.port();
        if GIVEN.lock().expect("port lock").insert(port) {
            return Ok(port);
        }
        held.push(listener);
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AddrInUse,
        format!("no loopback port free that was not handed out already ({ATTEMPTS} tried)"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_free_and_never_handed_out_twice() {
        let ports: Vec<u16> = (0..200).map(|_| free_port().unwrap()).collect();
        let distinct: BTreeSet<u16> = ports.iter().copied().collect();
        assert_eq!(distinct.len(), ports.len());
        for port in &ports[..5] {
            TcpListener::bind((Ipv4Addr::LOCALHOST, *port)).expect("the port is free");
        }
    }
}
