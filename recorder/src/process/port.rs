//! A free loopback port: the one way the recorder picks a port for something it starts (a local
//! service, a role's process, the payments receiver) or for an address nobody listens on.
//!
//! Ports come from below the kernel's ephemeral range (`/proc/sys/net/ipv4/ip_local_port_range`;
//! [`FALLBACK`] when it cannot be read), so no outgoing connection (a proxy's, a client's) can
//! take one between its hand-out and its use. A port handed out is:
//!
//! - bindable on 127.0.0.1 at hand-out (a foreign listener's port is skipped);
//! - reserved across every recorder on the machine while its [`Reserved`] lives: a listening Unix
//!   socket in the abstract namespace named after the port (`outbox-trace/port/<port>`), which
//!   only one process can hold and the kernel releases when the holder ends however it ends: no
//!   file is written, and no reservation outlives its recorder;
//! - not handed out again by this process until the whole band has been gone through: the ports
//!   are taken in turn from a random start, so a port just freed is not the next one given.

use std::net::{Ipv4Addr, TcpListener};
use std::os::linux::net::SocketAddrExt as _;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::sync::Mutex;

/// The band used when the kernel's ephemeral range cannot be read.
pub const FALLBACK: (u16, u16) = (20000, 32000);
/// How many ports at most are looked at before giving up.
const ATTEMPTS: usize = 4096;

/// A port reserved for this process until dropped.
#[derive(Debug)]
pub struct Reserved {
    port: u16,
    _hold: UnixListener,
}

impl Reserved {
    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }
}

/// A TCP port on 127.0.0.1, below the ephemeral range, free now, reserved for the rest of this
/// process's life.
pub fn free_port() -> std::io::Result<u16> {
    let reserved = reserve()?;
    let port = reserved.port;
    // Held until this process ends: the callers keep the number, not the reservation.
    std::mem::forget(reserved);
    Ok(port)
}

/// A TCP port on 127.0.0.1, below the ephemeral range, free now, reserved until dropped.
pub fn reserve() -> std::io::Result<Reserved> {
    reserve_in(band())
}

/// The band ports are handed out from: below the ephemeral range, inclusive bounds.
pub fn band() -> (u16, u16) {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| below_ephemeral(&text))
        .unwrap_or(FALLBACK)
}

/// The band below the ephemeral range the range file's `text` gives (`32768\t60999`), if there
/// is room for one of at least 1000 ports above the privileged ones.
fn below_ephemeral(text: &str) -> Option<(u16, u16)> {
    let low: u16 = text.split_whitespace().next()?.parse().ok()?;
    let high = low.checked_sub(1)?;
    let start = high.saturating_sub(12_000).max(1024);
    (high >= start + 1000).then_some((start, high))
}

/// The next port to look at, per process.
static CURSOR: Mutex<Option<u32>> = Mutex::new(None);

/// A port of `band`, reserved.
fn reserve_in(band: (u16, u16)) -> std::io::Result<Reserved> {
    let (low, high) = (u32::from(band.0), u32::from(band.1));
    let size = high - low + 1;
    let mut cursor = CURSOR.lock().expect("port cursor");
    let mut next = cursor.unwrap_or_else(|| random_below(size));
    for _ in 0..ATTEMPTS.min(size as usize) {
        let port = (low + next % size) as u16;
        next = (next + 1) % size;
        if let Some(reserved) = try_port(port) {
            *cursor = Some(next);
            return Ok(reserved);
        }
    }
    *cursor = Some(next);
    Err(std::io::Error::new(
        std::io::ErrorKind::AddrInUse,
        format!("no loopback port free in {}-{}", band.0, band.1),
    ))
}

/// `port` reserved, if no other holder has it and it binds on 127.0.0.1 now.
fn try_port(port: u16) -> Option<Reserved> {
    let name = format!("outbox-trace/port/{port}");
    let hold = UnixListener::bind_addr(&SocketAddr::from_abstract_name(name).ok()?).ok()?;
    TcpListener::bind((Ipv4Addr::LOCALHOST, port)).ok()?;
    Some(Reserved { port, _hold: hold })
}

/// A number below `n` that differs between processes.
fn random_below(n: u32) -> u32 {
    use std::hash::{BuildHasher as _, Hasher as _};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    (h.finish() % u64::from(n.max(1))) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_band_lies_below_the_ephemeral_range() {
        assert_eq!(below_ephemeral("32768\t60999\n"), Some((20767, 32767)));
        assert_eq!(below_ephemeral("10000 65000"), Some((1024, 9999)));
        assert_eq!(below_ephemeral("1500 65000"), None);
        assert_eq!(below_ephemeral("garbled"), None);
        let (low, high) = band();
        assert!(low >= 1024 && high > low);
    }

    #[test]
    fn ports_are_free_and_never_handed_out_twice_at_once() {
        let held: Vec<Reserved> = (0..200).map(|_| reserve().unwrap()).collect();
        let distinct: std::collections::BTreeSet<u16> = held.iter().map(Reserved::port).collect();
        assert_eq!(distinct.len(), held.len());
        for r in &held[..5] {
            TcpListener::bind((Ipv4Addr::LOCALHOST, r.port())).expect("the port is free");
        }
    }

    #[test]
    fn a_port_someone_listens_on_is_skipped() {
        // A band of two ports, the first taken by a foreign listener.
        let Some((taken, listener)) = (25000..26000u16).find_map(|p| {
            TcpListener::bind((Ipv4Addr::LOCALHOST, p))
                .ok()
                .map(|l| (p, l))
        }) else {
            panic!("no port to listen on");
        };
        let free = taken + 1;
        for _ in 0..4 {
            let got = reserve_in((taken, free));
            if let Ok(r) = got {
                assert_eq!(r.port(), free, "the foreign listener's port is skipped");
            }
        }
        drop(listener);
    }
}
