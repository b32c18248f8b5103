//! Helpers shared by the integration tests (each test binary uses some of them).
#![allow(dead_code)]

/// xorshift64: the same sequence for the same seed, so a failure names a seed to replay.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        if self.0 == 0 {
            // xorshift's one fixed point; any seed must give a sequence.
            self.0 = 0x9E37_79B9_7F4A_7C15;
        }
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    pub fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        (-2.0 * (self.unit() + 1e-12).ln()).sqrt() * (std::f64::consts::TAU * self.unit()).cos()
    }
}

/// A letters-only token for event `n`, distinct for every `n` below 26^5 (both tokenizers
/// keep it whole), so that a search for it finds that event alone.
pub fn token(n: usize) -> String {
    let mut s = String::from("tok");
    let mut n = n;
    for _ in 0..5 {
        s.push((b'a' + (n % 26) as u8) as char);
        n /= 26;
    }
    s
}
