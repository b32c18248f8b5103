//! `mnem_search`'s ranking over the persisted index (`super::index`), read from one snapshot.
//!
//! ADK scores an event by the number of distinct query tokens it matches: an ASCII token
//! matches a searchable word, a non-ASCII token a searchable word or a substring of the
//! event's lowercased NFC text. The places whose text may hold a non-ASCII token are those
//! holding each of its char pairs (at most `MAX_PAIR_LISTS` of them; a token of one char:
//! its char); a token of three chars or more is then looked for in their texts. (An index
//! written before pairs were indexed is searched by the token's chars instead, every
//! candidate's text checked.) The top `MAX_RESULTS` by score, ties in place order, are
//! found document-at-a-time over each token's stream of matching places in place order,
//! skipping with WAND: once the results are full with a lowest score `s`, only a place in at
//! least `s + 1` streams can enter, so the streams behind the `(s + 1)`-th smallest current
//! place seek forward to it. A one-word query reads its first `MAX_RESULTS` postings only.

use super::index::{self, Entry, MAX_RESULTS};
use super::tokenizer;
use crate::error::{Error, Result};
use crate::store::StoreIter;
use crate::store::{Cf, Extent, Snapshot, Store};
use std::collections::VecDeque;

/// Postings a cursor steps over with `next` before it seeks instead (a seek costs a few
/// `next`s, and skips are often short).
const STEPS_BEFORE_SEEK: usize = 8;

/// The unexpired postings of one key prefix, in place order.
struct Cursor<'s> {
    it: StoreIter<'s>,
    prefix: Vec<u8>,
    now: i64,
}

impl<'s> Cursor<'s> {
    /// A cursor on each of `prefixes`, opened at once (one round trip on a networked store).
    fn open_all(store: &'s Store, snap: &'s Snapshot<'s>, prefixes: Vec<Vec<u8>>, now: i64) -> Result<Vec<Cursor<'s>>> {
        let its = store.prefix_iters(snap, Cf::Index, &prefixes, Extent::Start);
        its.into_iter()
            .zip(prefixes)
            .map(|(it, prefix)| {
                let mut c = Cursor { it, prefix, now };
                c.skip_expired()?;
                Ok(c)
            })
            .collect()
    }

    fn place(&self) -> Option<&[u8]> {
        self.it.key().map(|k| &k[self.prefix.len()..])
    }

    fn skip_expired(&mut self) -> Result<()> {
        while let Some(v) = self.it.value() {
            if !index::posting_expired(v, self.now)? {
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
    /// A non-ASCII token: its word postings, and the places holding every char pair of the
    /// token (or every char) whose text contains it.
    NonAscii(Box<NonAscii<'s>>),
}

struct NonAscii<'s> {
    store: &'s Store,
    snap: &'s Snapshot<'s>,
    ns_prefix: &'s [u8],
    token: String,
    word: Cursor<'s>,
    /// One cursor per distinct char pair of the token (or per distinct non-ASCII char).
    lists: Vec<Cursor<'s>>,
    /// A token of one char is held by exactly the places holding its char, one of two chars
    /// by those holding its pair: no text to check.
    check: bool,
    /// Places of all `lists` whose text holds the token, ascending, all before the places of
    /// `lists`: their texts are read in batches (one round trip each on a networked store).
    found: VecDeque<Vec<u8>>,
    /// Candidates whose texts the next batch reads: doubling as the stream is read in order
    /// (a query often needs only the first few matches), back to the first after a seek.
    batch: usize,
    current: Option<Vec<u8>>,
}

/// The most pair lists a token reads; a token with more pairs is checked in its candidates'
/// texts (it has more than two chars).
const MAX_PAIR_LISTS: usize = 4;

/// The first and the largest batch of texts read at once to check candidates.
const FIRST_CHECK_BATCH: usize = 16;
const LAST_CHECK_BATCH: usize = 1_024;

/// What one query token reads: its word postings, and for a non-ASCII token the postings of
/// each of its char pairs (or chars).
struct Plan {
    token: String,
    lists: Vec<Vec<u8>>,
    check: bool,
}

impl Plan {
    fn of(ns_prefix: &[u8], token: &str, pairs: bool) -> Plan {
        let mut lists = vec![index::word_prefix(ns_prefix, token)];
        let mut check = false;
        if !token.is_ascii() {
            let len = token.chars().count();
            // Every pair of a token of two chars or more is indexable (`index::may_be_in_a_token`
            // holds for each of its chars); the check keeps a token without any on its chars.
            let mut token_pairs = if pairs && len > 1 { index::char_pairs(token) } else { Vec::new() };
            if token_pairs.len() > MAX_PAIR_LISTS {
                // A long token (a run of CJK text) has dozens of pairs; a few of them, spread
                // over its sorted pairs, already leave few candidates, and each list read
                // costs (on a networked store, a page of rows before the first candidate).
                let n = token_pairs.len();
                token_pairs = (0..MAX_PAIR_LISTS).map(|i| token_pairs[i * (n - 1) / (MAX_PAIR_LISTS - 1)]).collect();
            }
            let by_pairs = !token_pairs.is_empty();
            if by_pairs {
                lists.extend(token_pairs.into_iter().map(|p| index::pair_prefix(ns_prefix, p)));
            } else {
                let mut distinct: Vec<char> = token.chars().filter(|c| !c.is_ascii()).collect();
                distinct.sort_unstable();
                distinct.dedup();
                lists.extend(distinct.into_iter().map(|c| index::char_prefix(ns_prefix, c)));
            }
            check = len > if by_pairs { 2 } else { 1 };
        }
        Plan { token: token.to_string(), lists, check }
    }
}

impl<'s> Stream<'s> {
    /// The stream of `plan`, over its cursors (the word's first).
    fn new(
        store: &'s Store,
        snap: &'s Snapshot<'s>,
        ns_prefix: &'s [u8],
        plan: Plan,
        mut cursors: Vec<Cursor<'s>>,
    ) -> Result<Self> {
        let lists = cursors.split_off(1);
        let word = cursors.pop().expect("a word cursor");
        if lists.is_empty() {
            return Ok(Stream::Word(word));
        }
        let mut s = NonAscii {
            store,
            snap,
            ns_prefix,
            token: plan.token,
            word,
            lists,
            check: plan.check,
            found: VecDeque::new(),
            batch: FIRST_CHECK_BATCH,
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
    /// Bring the list cursors to their next common place, if any: leapfrog, led by the
    /// cursor that last jumped past the others (moved to the front: the sparser lists
    /// end up leading, so dense ones are only sought to their places).
    fn align(&mut self) -> Result<Option<Vec<u8>>> {
        'round: loop {
            let Some(lead) = self.lists[0].place() else { return Ok(None) };
            let target = lead.to_vec();
            for i in 1..self.lists.len() {
                self.lists[i].seek(&target)?;
                match self.lists[i].place() {
                    None => return Ok(None),
                    Some(p) if p == &target[..] => {}
                    Some(_) => {
                        self.lists.swap(0, i);
                        continue 'round;
                    }
                }
            }
            return Ok(Some(target));
        }
    }

    /// Refill `found` from the lists, if it is empty and they have places left.
    fn fill(&mut self) -> Result<()> {
        while self.found.is_empty() {
            let want = if self.check { self.batch } else { 1 };
            let mut candidates = Vec::with_capacity(want);
            while candidates.len() < want {
                let Some(place) = self.align()? else { break };
                self.lists[0].next()?;
                candidates.push(place);
            }
            if candidates.is_empty() {
                return Ok(());
            }
            if !self.check {
                self.found.extend(candidates);
                continue;
            }
            self.batch = (self.batch * 2).min(LAST_CHECK_BATCH);
            let keys: Vec<Vec<u8>> = candidates.iter().map(|p| index::haystack_key(self.ns_prefix, p)).collect();
            let texts = self.store.multi_get_cf(self.snap, Cf::Index, &keys)?;
            for (place, text) in candidates.into_iter().zip(texts) {
                let text = text.ok_or_else(|| Error::corruption("an ADK index posting has no text"))?;
                if memchr::memmem::find(&text, self.token.as_bytes()).is_some() {
                    self.found.push_back(place);
                }
            }
        }
        Ok(())
    }

    /// Set `current` to the smaller of the word cursor's place and the next found place.
    fn settle(&mut self) -> Result<()> {
        self.fill()?;
        self.current = match (self.word.place(), self.found.front()) {
            (None, None) => None,
            (Some(w), None) => Some(w.to_vec()),
            (Some(w), Some(c)) if w <= &c[..] => Some(w.to_vec()),
            (_, Some(c)) => Some(c.clone()),
        };
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        let Some(cur) = self.current.take() else { return Ok(()) };
        if self.word.place() == Some(&cur[..]) {
            self.word.next()?;
        }
        if self.found.front() == Some(&cur) {
            self.found.pop_front();
        }
        self.settle()
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        if self.current.as_deref().is_none_or(|c| c >= target) {
            return Ok(());
        }
        self.word.seek(target)?;
        while self.found.front().is_some_and(|p| &p[..] < target) {
            self.found.pop_front();
        }
        if self.found.is_empty() {
            for c in &mut self.lists {
                c.seek(target)?;
            }
            // A stream sought is asked for its first match from `target` on, and is often
            // sought again past what a large batch would check (a common token beside a
            // rare one): the texts read after a jump start from the first batch again.
            self.batch = FIRST_CHECK_BATCH;
        }
        self.settle()
    }
}

/// ADK's ranking of `query` at `now`: entries scoring above zero, by descending score, ties
/// in place order, at most `MAX_RESULTS`. `pairs`: the index has `PAIR` postings.
pub(crate) fn search(
    store: &Store,
    snap: &Snapshot<'_>,
    ns_prefix: &[u8],
    query: &str,
    now: i64,
    pairs: bool,
) -> Result<Vec<Entry>> {
    search_where(store, snap, ns_prefix, query, now, pairs, None)
}

/// Whether an entry may be among the results.
pub(crate) type Accept<'a> = &'a mut dyn FnMut(&Entry) -> Result<bool>;

/// `search` among the entries `accept` accepts: the top `MAX_RESULTS` of those, as ADK would
/// rank a memory holding only them (asked only of entries that would enter the results).
pub(crate) fn search_where(
    store: &Store,
    snap: &Snapshot<'_>,
    ns_prefix: &[u8],
    query: &str,
    now: i64,
    pairs: bool,
    mut accept: Option<Accept<'_>>,
) -> Result<Vec<Entry>> {
    let plans: Vec<Plan> = tokenizer::words_lower(query).iter().map(|t| Plan::of(ns_prefix, t, pairs)).collect();
    let mut cursors =
        Cursor::open_all(store, snap, plans.iter().flat_map(|p| p.lists.iter().cloned()).collect(), now)?.into_iter();
    let mut streams = Vec::with_capacity(plans.len());
    for plan in plans {
        let mine: Vec<Cursor<'_>> = cursors.by_ref().take(plan.lists.len()).collect();
        streams.push(Stream::new(store, snap, ns_prefix, plan, mine)?);
    }
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
            let enters = top.len() < MAX_RESULTS || score > threshold;
            let accepted = match (&mut accept, enters) {
                (Some(f), true) => {
                    match index::entries_at(store, snap, ns_prefix, std::iter::once(&pivot[..]))?.first() {
                        Some(e) => f(e)?,
                        None => false,
                    }
                }
                _ => enters,
            };
            if accepted {
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
