//! The broker's position of a copy (`broker_seq`), drawn and read back: a plain number (a
//! JetStream stream sequence, a Kafka offset, a Redis list position), or a Redis Stream entry id
//! `<ms>-<n>` packed into the one `UInt64` column so that Redis's order is kept.
//!
//! The packing: bit 63 set marks an entry id; bits 20 to 62 hold `<ms>` (below 2^43, the year
//! 2248) and bits 0 to 19 hold `<n>` (below 2^20). Packed values compare as Redis compares entry
//! ids, and sit above every plain number below 2^63, which no broker's counter reaches.

use std::fmt;
use std::str::FromStr;

/// Bit 63: the value is a packed Redis Stream entry id.
const ENTRY_FLAG: u64 = 1 << 63;
/// Bits for the entry's sequence number within its millisecond.
const SEQ_BITS: u32 = 20;
/// Entry ids' milliseconds stay below this.
const MS_LIMIT: u64 = 1 << (63 - SEQ_BITS);

/// A `broker_seq` value, drawn as a number or as the Redis Stream entry id `<ms>-<n>` it packs
/// (see the module's documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BrokerPosition(pub u64);

impl BrokerPosition {
    /// The position of the Redis Stream entry `<ms>-<n>`; `None` when `ms` reaches 2^43 or `n`
    /// reaches 2^20.
    pub fn redis_entry(ms: u64, n: u64) -> Option<BrokerPosition> {
        (ms < MS_LIMIT && n < (1 << SEQ_BITS))
            .then_some(BrokerPosition(ENTRY_FLAG | (ms << SEQ_BITS) | n))
    }

    /// The entry id `(ms, n)` this value packs, if it packs one.
    pub fn as_redis_entry(self) -> Option<(u64, u64)> {
        (self.0 & ENTRY_FLAG != 0).then(|| {
            let rest = self.0 & !ENTRY_FLAG;
            (rest >> SEQ_BITS, rest & ((1 << SEQ_BITS) - 1))
        })
    }
}

impl fmt::Display for BrokerPosition {
    /// `<ms>-<n>` for a packed entry id, else the number.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.as_redis_entry() {
            Some((ms, n)) => write!(f, "{ms}-{n}"),
            None => write!(f, "{}", self.0),
        }
    }
}

/// Why a text is no broker position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PositionError {
    /// Neither a number nor `<ms>-<n>`.
    #[error("`{0}` is neither a non-negative integer nor a Redis Stream entry id <ms>-<n>")]
    NotAPosition(String),
    /// An entry id whose parts do not fit the packing.
    #[error(
        "Redis Stream entry id `{0}` does not fit the packing (<ms> below 2^43, <n> below 2^20)"
    )]
    OutOfRange(String),
}

impl FromStr for BrokerPosition {
    type Err = PositionError;

    /// A decimal number (any value of `u64`), or an entry id `<ms>-<n>`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if let Ok(n) = s.parse::<u64>() {
            return Ok(BrokerPosition(n));
        }
        let (ms, n) = redis_entry_id(s).ok_or_else(|| PositionError::NotAPosition(s.into()))?;
        BrokerPosition::redis_entry(ms, n).ok_or_else(|| PositionError::OutOfRange(s.into()))
    }
}

/// The parts of a Redis Stream entry id `<ms>-<n>` (both decimal), if `s` is one.
pub(crate) fn redis_entry_id(s: &str) -> Option<(u64, u64)> {
    let (ms, n) = s.split_once('-')?;
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    if !digits(ms) || !digits(n) {
        return None;
    }
    Some((ms.parse().ok()?, n.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_ids_keep_redis_order_and_draw_back() {
        let ids = [
            "0-1",
            "1-0",
            "1-1",
            "1-1048575",
            "2-0",
            "1700000000000-0",
            "1700000000000-7",
        ];
        let packed: Vec<BrokerPosition> = ids.iter().map(|s| s.parse().unwrap()).collect();
        assert!(packed.windows(2).all(|w| w[0] < w[1]), "{packed:?}");
        let drawn: Vec<String> = packed.iter().map(ToString::to_string).collect();
        assert_eq!(drawn, ids);
        assert!(
            packed[0] > BrokerPosition(u64::from(u32::MAX)),
            "above plain numbers"
        );
    }

    #[test]
    fn plain_numbers_stay_numbers_and_bad_ids_are_refused() {
        assert_eq!("42".parse(), Ok(BrokerPosition(42)));
        assert_eq!(BrokerPosition(42).to_string(), "42");
        assert_eq!(BrokerPosition(42).as_redis_entry(), None);
        assert!(matches!(
            "5-1048576".parse::<BrokerPosition>(),
            Err(PositionError::OutOfRange(_))
        ));
        assert!(matches!(
            "8796093022208-0".parse::<BrokerPosition>(),
            Err(PositionError::OutOfRange(_))
        ));
        for bad in ["-1", "1-", "-", "a-1", "1-2-3", ""] {
            assert!(
                matches!(
                    bad.parse::<BrokerPosition>(),
                    Err(PositionError::NotAPosition(_))
                ),
                "{bad}"
            );
        }
    }
}
