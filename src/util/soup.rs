//! Test-only: a fixed-seed token soup for the parsers' "random inputs never panic" tests, so
//! the soup is the same on every run.

/// xorshift64*: a fixed-seed generator.
pub struct Soup(pub u64);

impl Soup {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn pick<'a>(&mut self, pieces: &[&'a str]) -> &'a str {
        let index = (self.next() % pieces.len() as u64) as usize;
        pieces.get(index).copied().unwrap_or_default()
    }
}
