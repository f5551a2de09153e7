//! `--shard K/N` of `recorder explore`: schedule `i` of the search's list (0-based, in its fixed
//! order) belongs to shard `i % N + 1`, so the `N` shards run every schedule once between them.

/// `--shard K/N`: the `K`-th of `N` shares of the schedules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 1-based.
    pub k: u32,
    /// How many shards.
    pub n: u32,
}

impl Shard {
    /// Parses `K/N` (`1 <= K <= N`).
    pub fn parse(text: &str) -> Result<Shard, String> {
        let bad = || format!("--shard {text}: expected K/N with 1 <= K <= N, e.g. 2/4");
        let (k, n) = text.split_once('/').ok_or_else(bad)?;
        let k: u32 = k.trim().parse().map_err(|_| bad())?;
        let n: u32 = n.trim().parse().map_err(|_| bad())?;
        if k == 0 || k > n {
            return Err(bad());
        }
        Ok(Shard { k, n })
    }

    /// Whether schedule number `i` (0-based, in the list's order) is this shard's.
    pub fn takes(&self, i: usize) -> bool {
        i % self.n as usize == (self.k - 1) as usize
    }

    /// The calm run's scenario name in this shard's trace: each shard runs its own, and the
    /// shards' traces are checked together.
    pub fn calm_name(&self) -> String {
        format!("calm-{}-of-{}", self.k, self.n)
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_split_the_list_once_between_them() {
        let shards: Vec<Shard> = (1..=3)
            .map(|k| Shard::parse(&format!("{k}/3")).unwrap())
            .collect();
        for i in 0..10 {
            assert_eq!(shards.iter().filter(|s| s.takes(i)).count(), 1, "{i}");
        }
        assert!(shards[0].takes(0) && shards[1].takes(1) && shards[0].takes(3));
        for bad in ["0/2", "3/2", "2", "a/b", "1/0"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }
}
