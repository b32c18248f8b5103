//! BM25 (Robertson and Zaragoza): k1 = 1.2, b = 0.75, idf = ln(1 + (N - df + 0.5)/(df + 0.5)).

use super::tokenizer::for_each_token;

pub const K1: f64 = 1.2;
pub const B: f64 = 0.75;

/// Counts, for one document, its length and the frequency of each query term.
pub struct TermMatcher {
    terms: Vec<String>,
    /// Bit `b` set when some term starts with byte `b`: most tokens fail this test, so the
    /// scan compares few of them.
    first_bytes: [u64; 4],
    scratch: String,
}

impl TermMatcher {
    pub fn new(terms: Vec<String>) -> TermMatcher {
        let mut first_bytes = [0u64; 4];
        for t in &terms {
            if let Some(&b) = t.as_bytes().first() {
                first_bytes[(b >> 6) as usize] |= 1 << (b & 63);
            }
        }
        TermMatcher { terms, first_bytes, scratch: String::new() }
    }

    pub fn terms(&self) -> &[String] {
        &self.terms
    }

    /// Add the tokens of `text` to `dl` and their matches to `tf` (one slot per term).
    pub fn count(&mut self, text: &str, dl: &mut u64, tf: &mut [u32]) {
        let terms = &self.terms;
        let first = &self.first_bytes;
        let mut n = 0u64;
        for_each_token(text, &mut self.scratch, |tok| {
            n += 1;
            let b = tok.as_bytes()[0];
            if first[(b >> 6) as usize] & (1 << (b & 63)) == 0 {
                return;
            }
            for (i, t) in terms.iter().enumerate() {
                if t == tok {
                    tf[i] += 1;
                    break;
                }
            }
        });
        *dl += n;
    }
}

/// Corpus statistics of one scored window.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Corpus {
    pub records: u64,
    pub total_len: u64,
}

impl Corpus {
    pub fn avgdl(&self) -> f64 {
        if self.records == 0 {
            0.0
        } else {
            self.total_len as f64 / self.records as f64
        }
    }
}

pub fn idf(n: u64, df: u64) -> f64 {
    let (n, df) = (n as f64, df as f64);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// The BM25 score of a document of length `dl` with term frequencies `tf`, summed over the
/// terms in query order.
pub fn score(idfs: &[f64], tf: &[u32], dl: u64, avgdl: f64) -> f64 {
    let norm = K1 * (1.0 - B + B * dl as f64 / avgdl);
    idfs.iter()
        .zip(tf)
        .filter(|(_, &f)| f > 0)
        .map(|(idf, &f)| {
            let f = f as f64;
            idf * f * (K1 + 1.0) / (f + norm)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formula_by_hand() {
        // N = 2, df = 1: idf = ln(1 + 1.5/1.5) = ln 2.
        assert!((idf(2, 1) - 2f64.ln()).abs() < 1e-15);
        // tf 1, dl = avgdl: idf * 2.2 / (1 + 1.2) = idf.
        assert!((score(&[2f64.ln()], &[1], 4, 4.0) - 2f64.ln()).abs() < 1e-15);
    }

    #[test]
    fn matcher_counts_length_and_terms() {
        let mut m = TermMatcher::new(vec!["tea".into(), "grün".into()]);
        let (mut dl, mut tf) = (0, vec![0; 2]);
        m.count("Tea, TEA and GRÜN tea-time", &mut dl, &mut tf);
        assert_eq!((dl, tf), (6, vec![3, 1]));
    }
}
