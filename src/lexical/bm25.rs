//! BM25 (Robertson and Zaragoza): k1 = 1.2, b = 0.75, idf = ln(1 + (N - df + 0.5)/(df + 0.5)).

use super::tokenizer::for_each_token;

pub const K1: f64 = 1.2;
pub const B: f64 = 0.75;

/// Counts, for one document, its length and the frequency of each query term.
pub struct TermMatcher {
    terms: Vec<String>,
    /// The first characters of the terms: a token is lowercased and compared only when the
    /// lowercase of its first character is one of them.
    firsts: Vec<char>,
    scratch: String,
}

impl TermMatcher {
    pub fn new(terms: Vec<String>) -> TermMatcher {
        let mut firsts: Vec<char> = terms.iter().filter_map(|t| t.chars().next()).collect();
        firsts.sort_unstable();
        firsts.dedup();
        TermMatcher { terms, firsts, scratch: String::new() }
    }

    pub fn terms(&self) -> &[String] {
        &self.terms
    }

    /// Add the tokens of `text` to `dl` and their matches to `tf` (one slot per term).
    pub fn count(&mut self, text: &str, dl: &mut u64, tf: &mut [u32]) {
        let terms = &self.terms;
        let firsts = &self.firsts;
        let mut n = 0u64;
        for_each_token(
            text,
            &mut self.scratch,
            |c| firsts.contains(&c),
            |tok| {
                n += 1;
                if let Some(tok) = tok {
                    if let Some(i) = terms.iter().position(|t| t == tok) {
                        tf[i] += 1;
                    }
                }
            },
        );
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

/// The best `limit` of `scored` (score, id), best first: score descending, then ascending id.
pub fn top<Id: Ord + Copy>(mut scored: Vec<(f64, Id)>, limit: usize) -> Vec<(f64, Id)> {
    let order = |a: &(f64, Id), b: &(f64, Id)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    if scored.len() > limit && limit > 0 {
        scored.select_nth_unstable_by(limit - 1, order);
    }
    scored.truncate(limit);
    scored.sort_unstable_by(order);
    scored
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
