//! The lexical tokenizer of BM25 search: maximal runs of `char::is_alphanumeric`, each
//! lowercased with the full Unicode mapping; no stemming, no normalization.
//!
//! The scan tokenizes every record it visits, so this is the hot path of the lexical page:
//! `is_alphanumeric` for the Basic Multilingual Plane is a bitmap lookup (the standard
//! library's is a binary search), and a token is lowercased only when its first character
//! could start a query term (`want`); other tokens are only counted.

use std::sync::OnceLock;

fn bmp_alphanumeric() -> &'static [u64; 1024] {
    static TABLE: OnceLock<Box<[u64; 1024]>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = Box::new([0u64; 1024]);
        for c in (0u32..0x10000).filter_map(char::from_u32) {
            if c.is_alphanumeric() {
                t[(c as usize) >> 6] |= 1 << (c as u32 & 63);
            }
        }
        t
    })
}

#[inline]
fn is_alnum(table: &[u64; 1024], c: char) -> bool {
    let u = c as u32;
    if u < 0x10000 {
        table[(u >> 6) as usize] & (1 << (u & 63)) != 0
    } else {
        c.is_alphanumeric()
    }
}

/// The first character of the lowercase mapping of each BMP character.
fn bmp_lower_first() -> &'static [char] {
    static TABLE: OnceLock<Vec<char>> = OnceLock::new();
    TABLE.get_or_init(|| {
        (0u32..0x10000).map(|u| char::from_u32(u).map_or('\0', |c| c.to_lowercase().next().unwrap_or(c))).collect()
    })
}

/// The first character of `c`'s lowercase mapping.
#[inline]
pub fn lower_first(c: char) -> char {
    if c.is_ascii() {
        c.to_ascii_lowercase()
    } else if (c as u32) < 0x10000 {
        bmp_lower_first()[c as usize]
    } else {
        c.to_lowercase().next().unwrap_or(c)
    }
}

/// Call `f` once per token of `text`: with the lowercased token when `want` accepts the
/// lowercase of its first character, else with None (the token still counts). `buf` is
/// scratch space, reused so that the scan allocates nothing per token.
#[inline]
pub fn for_each_token(text: &str, buf: &mut String, want: impl Fn(char) -> bool, mut f: impl FnMut(Option<&str>)) {
    let table = bmp_alphanumeric();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b < 0x80 {
            if !b.is_ascii_alphanumeric() {
                i += 1;
                continue;
            }
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_alphanumeric() {
                i += 1;
            }
            if i < bytes.len() && bytes[i] >= 0x80 {
                // The run continues into non-ASCII characters.
                i = slow_run(table, text, start, buf, &want, &mut f);
                continue;
            }
            let tok = &text[start..i];
            if !want(b.to_ascii_lowercase() as char) {
                f(None);
            } else if tok.bytes().any(|c| c.is_ascii_uppercase()) {
                buf.clear();
                buf.extend(tok.bytes().map(|c| c.to_ascii_lowercase() as char));
                f(Some(buf));
            } else {
                f(Some(tok));
            }
        } else {
            let c = text[i..].chars().next().expect("char boundary");
            if is_alnum(table, c) {
                i = slow_run(table, text, i, buf, &want, &mut f);
            } else {
                i += c.len_utf8();
            }
        }
    }
}

/// A run that contains non-ASCII characters, from `start`; returns where it ends.
fn slow_run(
    table: &[u64; 1024],
    text: &str,
    start: usize,
    buf: &mut String,
    want: &impl Fn(char) -> bool,
    f: &mut impl FnMut(Option<&str>),
) -> usize {
    let rest = &text[start..];
    let end = rest.char_indices().find(|&(_, c)| !is_alnum(table, c)).map_or(text.len(), |(j, _)| start + j);
    let tok = &text[start..end];
    let first = tok.chars().next().expect("a run is not empty");
    if want(lower_first(first)) {
        buf.clear();
        // `str::to_lowercase` applies Final_Sigma within the token, like Python's `str.lower`.
        buf.push_str(&tok.to_lowercase());
        f(Some(buf));
    } else {
        f(None);
    }
    end
}

/// The tokens of `text`, lowercased, in order.
pub fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut buf = String::new();
    for_each_token(text, &mut buf, |_| true, |t| out.push(t.expect("every token wanted").to_string()));
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
        assert_eq!(tokens("𝐀𝐁 𐐀"), ["𝐀𝐁", "𐐨"], "outside the BMP too");
        assert!(tokens(" ... ").is_empty());
    }

    #[test]
    fn bitmap_agrees_with_the_standard_library() {
        let t = bmp_alphanumeric();
        for c in (0u32..0x10000).filter_map(char::from_u32) {
            assert_eq!(is_alnum(t, c), c.is_alphanumeric(), "{c:?}");
        }
    }

    #[test]
    fn lower_first_agrees_with_the_standard_library() {
        for c in (0u32..0x11000).filter_map(char::from_u32) {
            assert_eq!(lower_first(c), c.to_lowercase().next().unwrap(), "{c:?}");
        }
    }

    #[test]
    fn unwanted_tokens_are_counted_not_lowercased() {
        let mut seen = Vec::new();
        let mut buf = String::new();
        for_each_token("Tea COFFEE Übung über", &mut buf, |c| c == 't' || c == 'ü', |t| seen.push(t.map(String::from)));
        assert_eq!(seen, [Some("tea".into()), None, Some("übung".into()), Some("über".into())]);
    }

    #[test]
    fn query_terms_dedup_in_order() {
        assert_eq!(query_terms("b a B A c"), ["b", "a", "c"]);
    }
}
