//! Seeded dice: the chaos plan's draws and the actors' chance faults roll them, so one seed gives
//! one run's faults again.

/// Seeded random numbers (SplitMix64): the same seed, the same draws, with no dependency.
#[derive(Debug, Clone)]
pub struct Dice(u64);

impl Dice {
    /// Dice that roll the same way for the same seed.
    pub fn new(seed: u64) -> Self {
        Dice(seed)
    }

    /// The next draw, uniform over every `u64`.
    pub fn roll(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.roll() % n.max(1)
    }
}
