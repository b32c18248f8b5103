//! ADK's tokenizer, exactly (google-adk 2.13.0 `in_memory_memory_service.py`):
//! NFC, Python `\w+` runs, per-token `str.lower()`, and for non-ASCII tokens the extra
//! Latin/non-Latin runs of `itertools.groupby(word, _is_latin)`.

use super::tables::{LATIN_RANGES, WORD_RANGES};
use crate::lexical::tokenizer::lower_first;
use std::borrow::Cow;
use unicode_normalization::{is_nfc_quick, IsNormalized, UnicodeNormalization};

fn in_ranges(table: &[(u32, u32)], c: char) -> bool {
    let c = c as u32;
    table
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// `WORD_RANGES` as a bitmap over the Basic Multilingual Plane: tokenizing is on the write
/// path and on every index rebuild.
fn bmp_words() -> &'static [u64; 1024] {
    static TABLE: std::sync::OnceLock<Box<[u64; 1024]>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = Box::new([0u64; 1024]);
        for &(lo, hi) in WORD_RANGES.iter().filter(|r| r.0 < 0x10000) {
            for u in lo..=hi.min(0xFFFF) {
                t[(u >> 6) as usize] |= 1 << (u & 63);
            }
        }
        t
    })
}

/// Python's `re` `\w` for str patterns (general categories L*, N*, and `_`), Unicode 14.
pub fn is_word(c: char) -> bool {
    let u = c as u32;
    if c.is_ascii() {
        c.is_ascii_alphanumeric() || c == '_'
    } else if u < 0x10000 {
        bmp_words()[(u >> 6) as usize] & (1 << (u & 63)) != 0
    } else {
        in_ranges(&WORD_RANGES, c)
    }
}

/// ADK's `_is_latin`: ASCII alphanumerics and `_`, or a non-ASCII char named `LATIN…`.
pub fn is_latin(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_alphanumeric() || c == '_'
    } else {
        in_ranges(&LATIN_RANGES, c)
    }
}

/// `unicodedata.normalize('NFC', text)`, borrowing when already NFC.
pub fn nfc(text: &str) -> Cow<'_, str> {
    if is_nfc_quick(text.chars()) == IsNormalized::Yes {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(text.nfc().collect())
    }
}

/// Python `str.lower()` (full mapping, Final_Sigma in context), borrowing when no char
/// changes: most non-ASCII text (CJK, kana, Hangul, Arabic, ...) has no case, and the full
/// mapping searches a table per char. A char whose mapping starts with itself maps to itself
/// alone (the one mapping of two chars, `İ`'s, starts with `i`), and a string of such chars is
/// its own lowercase (Final_Sigma only changes `Σ`, which maps to `σ`).
pub fn lower(s: &str) -> Cow<'_, str> {
    if s.is_ascii() {
        if s.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(s.to_ascii_lowercase())
        } else {
            Cow::Borrowed(s)
        }
    } else {
        if s.chars().all(|c| lower_first(c) == c) {
            Cow::Borrowed(s)
        } else {
            Cow::Owned(s.to_lowercase())
        }
    }
}

/// Maximal `\w` runs of already-normalized text.
fn word_runs(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let start = rest.char_indices().find(|&(_, c)| is_word(c)).map(|(i, _)| i)?;
        let tail = &rest[start..];
        let end = tail.char_indices().find(|&(_, c)| !is_word(c)).map_or(tail.len(), |(i, _)| i);
        let run = &tail[..end];
        rest = &tail[end..];
        Some(run)
    })
}

/// `_extract_words_lower`: the distinct lowercased `\w+` tokens of NFC(text), sorted.
pub fn words_lower(text: &str) -> Vec<String> {
    words_lower_of_nfc(&nfc(text))
}

/// `words_lower` of text already in NFC (`nfc`).
fn words_lower_of_nfc(text: &str) -> Vec<String> {
    let mut out: Vec<String> = word_runs(text).map(|r| lower(r).into_owned()).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// `_extract_searchable_words`: `words_lower`, plus the Latin/non-Latin runs of every
/// non-ASCII token (tested after lowercasing). Distinct, sorted.
pub fn searchable_words(text: &str) -> Vec<String> {
    searchable_words_of_nfc(&nfc(text))
}

/// `searchable_words` of text already in NFC (`nfc`): the index normalizes an event's text
/// once for its words and its haystack.
pub fn searchable_words_of_nfc(text: &str) -> Vec<String> {
    let mut words = words_lower_of_nfc(text);
    let n = words.len();
    for i in 0..n {
        if words[i].is_ascii() {
            continue;
        }
        let token = words[i].clone();
        let mut start = 0;
        let mut current: Option<bool> = None;
        for (i, c) in token.char_indices() {
            let l = is_latin(c);
            if current.is_some_and(|p| p != l) {
                words.push(token[start..i].to_string());
                start = i;
            }
            current = Some(l);
        }
        words.push(token[start..].to_string());
    }
    if words.len() > n {
        words.sort_unstable();
        words.dedup();
    }
    words
}

/// The substring haystack: `unicodedata.normalize('NFC', text).lower()`.
pub fn haystack(text: &str) -> String {
    haystack_of_nfc(&nfc(text))
}

/// `haystack` of text already in NFC (`nfc`).
pub fn haystack_of_nfc(text: &str) -> String {
    lower(text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(v: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = v.iter().map(|s| s.to_string()).collect();
        v.sort();
        v
    }
    fn sorted(mut v: Vec<String>) -> Vec<String> {
        v.sort();
        v
    }

    #[test]
    fn python_word_class_not_rust_alphanumeric() {
        assert!(is_word('_') && is_word('²') && is_word('Ⅻ') && is_word('ह'));
        assert!(!is_word('\u{093F}'), "Devanagari vowel sign is Mc, not \\w");
        assert!(!is_word('\u{0301}') && !is_word('\u{203F}') && !is_word('-'));
        assert!('\u{093F}'.is_alphanumeric(), "Rust's class differs: that is why we have tables");
    }

    #[test]
    fn word_bitmap_equals_the_generated_ranges() {
        for c in (0u32..0x10000).filter_map(char::from_u32) {
            assert_eq!(is_word(c), c == '_' || in_ranges(&WORD_RANGES, c), "{c:?}");
        }
    }

    #[test]
    fn latin_rule_follows_unicode_names() {
        for c in ['a', 'Z', '0', '_', 'é', 'ß', 'ẞ', 'ı', 'ﬁ', 'ₐ'] {
            assert!(is_latin(c), "{c:?}");
        }
        for c in ['-', ' ', '\u{0301}', '\u{0307}', 'Ｐ', 'ʰ', 'ª', 'µ', '\u{212A}', 'я', '日'] {
            assert!(!is_latin(c), "{c:?}");
        }
    }

    // Probes whose expected words were printed by google-adk 2.13.0's own tokenizer.
    #[test]
    fn reference_probe_table() {
        assert_eq!(sorted(searchable_words("हिन्दी भाषा")), set(&["द", "न", "भ", "ष", "ह"]));
        assert_eq!(sorted(searchable_words("İstanbul")), set(&["i\u{307}stanbul", "i", "\u{307}", "stanbul"]));
        assert_eq!(sorted(searchable_words("Straße")), set(&["straße"]));
        assert_eq!(sorted(searchable_words("ẞ")), set(&["ß"]));
        assert_eq!(
            sorted(searchable_words("今日はPythonを勉強")),
            set(&["今日はpythonを勉強", "今日は", "python", "を勉強"])
        );
        assert_eq!(sorted(searchable_words("2024年に")), set(&["2024年に", "2024", "年に"]));
        assert_eq!(sorted(searchable_words("Ｐｙｔｈｏｎ")), set(&["ｐｙｔｈｏｎ"]));
        assert_eq!(sorted(searchable_words("naïveテスト")), set(&["naïveテスト", "naïve", "テスト"]));
        assert_eq!(sorted(searchable_words("ﬁnanceの")), set(&["ﬁnanceの", "ﬁnance", "の"]));
        assert_eq!(sorted(searchable_words("Москваcity")), set(&["москваcity", "москва", "city"]));
        assert_eq!(sorted(searchable_words("x²y")), set(&["x²y", "x", "²", "y"]));
        assert_eq!(sorted(searchable_words("a‿b")), set(&["a", "b"]));
    }

    #[test]
    fn lower_borrows_exactly_the_strings_the_full_mapping_leaves_alone() {
        // Every char alone, and beside a capital sigma (whose mapping depends on its
        // neighbours), against the standard library's full mapping.
        for c in (0u32..=0x10FFFF).filter_map(char::from_u32) {
            for s in [c.to_string(), format!("{c}\u{3a3}"), format!("\u{3a3}{c}"), format!("a{c}\u{3a3}")] {
                let l = lower(&s);
                assert_eq!(l, s.to_lowercase(), "{s:?}");
                assert_eq!(matches!(l, Cow::Borrowed(_)), s == s.to_lowercase(), "{s:?}");
            }
        }
        assert!(matches!(lower("東京タワー한국어"), Cow::Borrowed(_)));
        assert_eq!(lower("東京Ω"), "東京ω");
        assert_eq!(lower("\u{10400}"), "\u{10428}", "outside the BMP: the full mapping");
        assert!(matches!(lower("\u{20000}😀"), Cow::Borrowed(_)), "outside the BMP, caseless");
    }

    #[test]
    fn words_and_haystack_of_normalized_text_are_adks() {
        // The index normalizes once and hands the NFC text to both (values as google-adk
        // 2.13.0 computes them for the plain text).
        let n = nfc("Cafe\u{301} STRASSE İz");
        assert_eq!(searchable_words_of_nfc(&n), ["café", "i", "i\u{307}z", "strasse", "z", "\u{307}"]);
        assert_eq!(haystack_of_nfc(&n), "café strasse i\u{307}z");
        assert_eq!(searchable_words_of_nfc(&n), searchable_words("Cafe\u{301} STRASSE İz"));
        assert_eq!(haystack_of_nfc(&n), haystack("Cafe\u{301} STRASSE İz"));
    }

    #[test]
    fn nfc_before_tokens_and_sigma_per_token() {
        assert_eq!(words_lower("Cafe\u{301}"), vec!["café"]);
        assert_eq!(words_lower("café\u{301}x"), vec!["café", "x"]);
        assert_eq!(words_lower("ΟΔΟΣ"), vec!["οδο\u{3c2}"]);
        assert_eq!(words_lower("Beta,beta BETA"), vec!["beta"]);
        assert_eq!(haystack("ΟΔΟΣ'Α"), "οδο\u{3c3}'α");
    }
}
