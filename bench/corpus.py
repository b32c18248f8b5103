#!/usr/bin/env python3
"""Deterministic corpora of ADK events, for mnem's benchmarks and differential tests.

    python3 bench/corpus.py N [SEED] > events.jsonl        (SEED defaults to 7)

Writes N lines of UTF-8 JSON. Each line is one google-adk `Event` (`id` "ev-<i>",
`author`, `timestamp` in seconds, increasing, and `content` {"role", "parts": [{"text"}]})
plus a top-level `session_id`: sessions are 20 consecutive events named "s-0", "s-1", ...
Readers pop `session_id` and validate the rest as an `Event`.

The text is real text, none of it written for mnem, from two PyPI packages:
- chatterbot-corpus: short dialogs in 28 languages. A session replays dialogs turn by
  turn, the speakers alternating between "user" and "model" (about half of the events).
- wordfreq: the 5,000 most frequent words of nine languages, drawn by Zipf's law (weight
  1/rank) into notes of 5 to 40 words, without spaces for Japanese and Chinese. English
  has three tickets in the language draw; one note in twenty switches language midway.

The same N, SEED and package versions always give the same bytes; `scripts/python-env`
pins the versions. Dependencies: chatterbot-corpus (install it with --no-deps: it pins a
PyYAML that no longer builds), pyyaml, wordfreq.
"""
import glob
import itertools
import json
import os
import random
import sys

SESSION_LEN = 20
AUTHORS = ("user", "model")
NOTE_LANGS = ("en", "en", "en", "ja", "zh", "de", "fr", "ru", "hi", "es", "ko")
UNSPACED = {"ja", "zh"}
VOCAB_SIZE = 5000
DIALOG_SHARE = 0.5
SWITCH_SHARE = 0.05
START_SECONDS = 1_700_000_000.0
MAX_GAP_SECONDS = 30.0


def dialogs():
    """Every chatterbot-corpus conversation as its list of non-blank turns, in file order."""
    import chatterbot_corpus
    import yaml

    root = os.path.join(os.path.dirname(chatterbot_corpus.__file__), "data")
    out = []
    for path in sorted(glob.glob(os.path.join(root, "*", "*.yml"))):
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f) or {}
        for conversation in doc.get("conversations") or []:
            turns = [t for t in conversation if isinstance(t, str) and t.strip()]
            if turns:
                out.append(turns)
    if not out:
        sys.exit("corpus.py: chatterbot-corpus has no conversations")
    return out


def vocabularies():
    """Per language: the most frequent words and their cumulative Zipf weights."""
    from wordfreq import top_n_list

    out = {}
    for lang in sorted(set(NOTE_LANGS)):
        words = top_n_list(lang, VOCAB_SIZE)
        out[lang] = (words, list(itertools.accumulate(1.0 / rank for rank in range(1, len(words) + 1))))
    return out


def words(rng, vocab, lang, k):
    pool, cum = vocab[lang]
    return ("" if lang in UNSPACED else " ").join(rng.choices(pool, cum_weights=cum, k=k))


def note(rng, vocab):
    lang = rng.choice(NOTE_LANGS)
    k = rng.randint(5, 40)
    if rng.random() >= SWITCH_SHARE:
        return words(rng, vocab, lang, k)
    other = rng.choice(NOTE_LANGS)
    cut = rng.randint(1, k - 1)
    return words(rng, vocab, lang, cut) + " " + words(rng, vocab, other, k - cut)


def events(n, seed):
    rng = random.Random(seed)
    convs = dialogs()
    vocab = vocabularies()
    ts = START_SECONDS
    turns, speaker = iter(()), 0
    for i in range(n):
        if i % SESSION_LEN == 0:
            turns = iter(())  # a new session starts a new dialog
        if rng.random() < DIALOG_SHARE:
            text = next(turns, None)
            if text is None:
                turns, speaker = iter(rng.choice(convs)), 0
                text = next(turns)
            author = AUTHORS[speaker % 2]
            speaker += 1
        else:
            text = note(rng, vocab)
            author = rng.choice(AUTHORS)
        ts += rng.random() * MAX_GAP_SECONDS
        yield {
            "id": f"ev-{i}",
            "author": author,
            "timestamp": round(ts, 6),
            "session_id": f"s-{i // SESSION_LEN}",
            "content": {"role": author, "parts": [{"text": text}]},
        }


def main(argv):
    if len(argv) not in (2, 3) or not all(a.isdigit() for a in argv[1:]):
        sys.exit("usage: corpus.py N [SEED]   (non-negative integers; SEED defaults to 7)")
    n = int(argv[1])
    seed = int(argv[2]) if len(argv) == 3 else 7
    out = sys.stdout.buffer  # UTF-8 whatever the locale says
    for ev in events(n, seed):
        out.write(json.dumps(ev, ensure_ascii=False).encode("utf-8") + b"\n")
    out.flush()


if __name__ == "__main__":
    main(sys.argv)
