//! `mnem_search`'s ranking over the persisted index (`super::index`), read from one snapshot.
//!
//! ADK scores an event by the number of distinct query tokens it matches: an ASCII token
//! matches a searchable word, a non-ASCII token a searchable word or a substring of the
//! event's lowercased NFC text. The top `MAX_RESULTS` by score, ties in place order, are
//! found document-at-a-time over each token's stream of matching places in place order,
//! skipping with WAND: once the results are full with a lowest score `s`, only a place in at
//! least `s + 1` streams can enter, so the streams behind the `(s + 1)`-th smallest current
//! place seek forward to it. A one-word query reads its first `MAX_RESULTS` postings only.

use super::index::{self, Entry, MAX_RESULTS};
use super::tokenizer;
use crate::error::{Error, Result};
use crate::store::StoreIter;
use crate::store::{Cf, Snapshot, Store};

/// Postings a cursor steps over with `next` before it seeks instead (a seek costs a few
/// `next`s, and skips are often short).
const STEPS_BEFORE_SEEK: usize = 8;

/// The unexpired postings of one key prefix, in place order (or, without `now`, every key
/// of the prefix).
struct Cursor<'s> {
    it: StoreIter<'s>,
    prefix: Vec<u8>,
    now: Option<i64>,
}

impl<'s> Cursor<'s> {
    fn open(store: &'s Store, snap: &'s Snapshot<'s>, prefix: Vec<u8>, now: Option<i64>) -> Result<Cursor<'s>> {
        let it = store.prefix_iter(snap, Cf::Index, &prefix, &prefix);
        let mut c = Cursor { it, prefix, now };
        c.skip_expired()?;
        Ok(c)
    }

    fn place(&self) -> Option<&[u8]> {
        self.it.key().map(|k| &k[self.prefix.len()..])
    }

    fn skip_expired(&mut self) -> Result<()> {
        let Some(now) = self.now else { return self.it.status() };
        while let Some(v) = self.it.value() {
            if !index::posting_expired(v, now)? {
                return Ok(());
            }
            self.it.next();
        }
        self.it.status()
    }

    fn next(&mut self) -> Result<()> {
        self.it.next();
        self.skip_expired()
    }

    /// Move to the first posting at or after `target`.
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        let behind = |c: &Self| c.place().is_some_and(|p| p < target);
        for _ in 0..STEPS_BEFORE_SEEK {
            if !behind(self) {
                return self.skip_expired();
            }
            self.it.next();
        }
        if behind(self) {
            let mut k = self.prefix.clone();
            k.extend_from_slice(target);
            self.it.seek(&k);
        }
        self.skip_expired()
    }
}

/// The places one query token matches, in place order.
enum Stream<'s> {
    /// An ASCII token: its word postings.
    Word(Cursor<'s>),
    /// A non-ASCII token: its word postings, and the places holding every non-ASCII char of
    /// the token whose text contains it.
    NonAscii(Box<NonAscii<'s>>),
}

struct NonAscii<'s> {
    /// The texts of the places holding every char, visited in place order like the
    /// postings: a cursor reaches them more cheaply than point lookups.
    haystacks: Cursor<'s>,
    token: String,
    word: Cursor<'s>,
    /// One cursor per distinct non-ASCII char of the token.
    chars: Vec<Cursor<'s>>,
    /// A one-char token is held by exactly the places holding its char: no text to check.
    check: bool,
    current: Option<Vec<u8>>,
}

impl<'s> Stream<'s> {
    fn open(store: &'s Store, snap: &'s Snapshot<'s>, ns_prefix: &'s [u8], token: &str, now: i64) -> Result<Self> {
        let word = Cursor::open(store, snap, index::word_prefix(ns_prefix, token), Some(now))?;
        if token.is_ascii() {
            return Ok(Stream::Word(word));
        }
        let mut distinct: Vec<char> = token.chars().filter(|c| !c.is_ascii()).collect();
        distinct.sort_unstable();
        distinct.dedup();
        let chars = distinct
            .iter()
            .map(|&c| Cursor::open(store, snap, index::char_prefix(ns_prefix, c), Some(now)))
            .collect::<Result<_>>()?;
        let mut s = NonAscii {
            haystacks: Cursor::open(store, snap, index::haystack_key(ns_prefix, &[]), None)?,
            token: token.to_string(),
            word,
            chars,
            check: token.chars().count() > 1,
            current: None,
        };
        s.settle()?;
        Ok(Stream::NonAscii(Box::new(s)))
    }

    fn place(&self) -> Option<&[u8]> {
        match self {
            Stream::Word(c) => c.place(),
            Stream::NonAscii(s) => s.current.as_deref(),
        }
    }

    fn next(&mut self) -> Result<()> {
        match self {
            Stream::Word(c) => c.next(),
            Stream::NonAscii(s) => s.next(),
        }
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        match self {
            Stream::Word(c) => c.seek(target),
            Stream::NonAscii(s) => s.seek(target),
        }
    }
}

impl NonAscii<'_> {
    /// Bring the char cursors to their next common place, if any: leapfrog, led by the
    /// cursor that last jumped past the others (moved to the front: the sparser lists
    /// end up leading, so dense ones are only sought to their places).
    fn align_chars(&mut self) -> Result<Option<Vec<u8>>> {
        'round: loop {
            let Some(lead) = self.chars[0].place() else { return Ok(None) };
            let target = lead.to_vec();
            for i in 1..self.chars.len() {
                self.chars[i].seek(&target)?;
                match self.chars[i].place() {
                    None => return Ok(None),
                    Some(p) if p == &target[..] => {}
                    Some(_) => {
                        self.chars.swap(0, i);
                        continue 'round;
                    }
                }
            }
            return Ok(Some(target));
        }
    }

    fn contains_token(&mut self, place: &[u8]) -> Result<bool> {
        self.haystacks.seek(place)?;
        if self.haystacks.place() != Some(place) {
            return Err(Error::corruption("an ADK index char posting has no text"));
        }
        let hay = self.haystacks.it.value().expect("positioned on a key");
        Ok(memchr::memmem::find(hay, self.token.as_bytes()).is_some())
    }

    /// Set `current` to the smaller of the word cursor's place and the next char place whose
    /// text holds the token (checked only when it is the smaller).
    fn settle(&mut self) -> Result<()> {
        loop {
            let candidate = self.align_chars()?;
            let word = self.word.place();
            self.current = match (word, candidate) {
                (None, None) => None,
                (Some(w), None) => Some(w.to_vec()),
                (Some(w), Some(c)) if w <= &c[..] => Some(w.to_vec()),
                (_, Some(c)) => {
                    if self.check && !self.contains_token(&c)? {
                        self.chars[0].next()?;
                        continue;
                    }
                    Some(c)
                }
            };
            return Ok(());
        }
    }

    fn next(&mut self) -> Result<()> {
        let Some(cur) = self.current.take() else { return Ok(()) };
        if self.word.place() == Some(&cur[..]) {
            self.word.next()?;
        }
        if self.chars[0].place() == Some(&cur[..]) {
            self.chars[0].next()?;
        }
        self.settle()
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        if self.current.as_deref().is_none_or(|c| c >= target) {
            return Ok(());
        }
        self.word.seek(target)?;
        for c in &mut self.chars {
            c.seek(target)?;
        }
        self.settle()
    }
}

/// ADK's ranking of `query` at `now`: entries scoring above zero, by descending score, ties
/// in place order, at most `MAX_RESULTS`.
pub(crate) fn search(
    store: &Store,
    snap: &Snapshot<'_>,
    ns_prefix: &[u8],
    query: &str,
    now: i64,
) -> Result<Vec<Entry>> {
    let tokens = tokenizer::words_lower(query);
    let mut streams =
        tokens.iter().map(|t| Stream::open(store, snap, ns_prefix, t, now)).collect::<Result<Vec<_>>>()?;
    // (score, place), by score descending then place; places arrive in increasing order.
    let mut top: Vec<(usize, Vec<u8>)> = Vec::with_capacity(MAX_RESULTS + 1);
    let mut order: Vec<usize> = (0..streams.len()).collect();
    loop {
        let threshold = if top.len() == MAX_RESULTS { top[MAX_RESULTS - 1].0 } else { 0 };
        // A place enters only with a higher score than the threshold: it needs `need` streams.
        let need = threshold + 1;
        if need > streams.len() {
            break;
        }
        order.sort_by(|&a, &b| match (streams[a].place(), streams[b].place()) {
            (Some(x), Some(y)) => x.cmp(y),
            // Exhausted streams last.
            (x, y) => x.is_none().cmp(&y.is_none()),
        });
        let Some(pivot) = streams[order[need - 1]].place().map(<[u8]>::to_vec) else { break };
        if streams[order[0]].place() == Some(&pivot[..]) {
            let mut score = 0;
            for &i in &order {
                if streams[i].place() == Some(&pivot[..]) {
                    score += 1;
                    streams[i].next()?;
                }
            }
            if top.len() < MAX_RESULTS || score > threshold {
                let at = top.iter().position(|(s, _)| *s < score).unwrap_or(top.len());
                top.insert(at, (score, pivot));
                top.truncate(MAX_RESULTS);
            }
        } else {
            for &i in &order[..need - 1] {
                if streams[i].place().is_some_and(|p| p < &pivot[..]) {
                    streams[i].seek(&pivot)?;
                }
            }
        }
    }
    index::entries_at(store, snap, ns_prefix, top.iter().map(|(_, place)| &place[..]))
}
