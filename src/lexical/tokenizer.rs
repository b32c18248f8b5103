//! The lexical tokenizer (contract §5): maximal runs of `char::is_alphanumeric`, each
//! lowercased with the full Unicode mapping; no stemming, no normalization.

/// Call `f` with each lowercased token of `text`. `buf` is scratch space, reused so that
/// the scan allocates nothing per token.
#[inline]
pub fn for_each_token(text: &str, buf: &mut String, mut f: impl FnMut(&str)) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b < 0x80 {
            if !b.is_ascii_alphanumeric() {
                i += 1;
                continue;
            }
            // An ASCII run; it may continue into non-ASCII alphanumerics.
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_alphanumeric() {
                i += 1;
            }
            if i == bytes.len() || bytes[i] < 0x80 {
                let tok = &text[start..i];
                if tok.bytes().any(|c| c.is_ascii_uppercase()) {
                    buf.clear();
                    buf.extend(tok.bytes().map(|c| c.to_ascii_lowercase() as char));
                    f(buf);
                } else {
                    f(tok);
                }
                continue;
            }
            i = slow_run(text, start, buf, &mut f);
        } else {
            let c = text[i..].chars().next().expect("char boundary");
            if c.is_alphanumeric() {
                i = slow_run(text, i, buf, &mut f);
            } else {
                i += c.len_utf8();
            }
        }
    }
}

/// A run that contains non-ASCII characters, from `start`; returns where it ends.
#[cold]
fn slow_run(text: &str, start: usize, buf: &mut String, f: &mut impl FnMut(&str)) -> usize {
    let end = text[start..].char_indices().find(|&(_, c)| !c.is_alphanumeric()).map_or(text.len(), |(j, _)| start + j);
    let tok = &text[start..end];
    buf.clear();
    // `str::to_lowercase` applies Final_Sigma within the token, like Python's `str.lower`.
    buf.push_str(&tok.to_lowercase());
    f(buf);
    end
}

/// The tokens of `text`, lowercased, in order.
pub fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut buf = String::new();
    for_each_token(text, &mut buf, |t| out.push(t.to_string()));
    out
}

/// Query terms: tokens without repeats, in first-seen order.
pub fn query_terms(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in tokens(text) {
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alphanumeric_runs_lowercased() {
        assert_eq!(tokens("Hello, WORLD! x2 ß_Straße"), ["hello", "world", "x2", "ß", "straße"]);
        assert_eq!(tokens("ABCdéf-ghi"), ["abcdéf", "ghi"]);
        assert_eq!(tokens("हिन्दी"), ["हिन", "दी"], "vowel signs are Alphabetic, the virama is not");
        assert_eq!(tokens("東京タワー 2024年"), ["東京タワー", "2024年"]);
        assert_eq!(tokens("ΟΔΟΣ"), ["οδο\u{3c2}"]);
        assert_eq!(tokens("İ"), ["i\u{307}"]);
        assert!(tokens(" ... ").is_empty());
    }

    #[test]
    fn query_terms_dedup_in_order() {
        assert_eq!(query_terms("b a B A c"), ["b", "a", "c"]);
    }
}
