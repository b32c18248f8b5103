"""Tokenizer fuzz: random text from characters that stress ADK's search rules (combining marks,
case mappings, final sigma, Latin/non-Latin runs, NFC, digits of every kind), compared
against google-adk 2.13.0's InMemoryMemoryService. Seeds: MNEM_FUZZ_SEEDS (comma-separated).
"""
import asyncio
import os
import random
import unicodedata

import pytest
from google.adk.events import Event
from google.adk.memory import InMemoryMemoryService
from google.adk.sessions import Session
from google.genai import types

from mnem.adk import MnemMemoryService

APP, USER = "fuzz", "user"

POOL = (
    "abcxyzABCXYZ019_"            # ASCII word characters
    "éßñÅøœĳİıǅǄǆŉǰẞẖſﬁﬀ"         # Latin beyond ASCII, incl. special casings and ligatures
    "\u0301\u0307\u0308\u0323\u0345"  # combining marks (not \\w), incl. iota subscript
    "ΣσςΟΔΐᾼΆ"                    # Greek: final sigma, expanding lowercase
    "ДжЁё"                        # Cyrillic
    "東京大阪日本語の"            # CJK and kana
    "한국어각"                  # Hangul syllables and conjoining jamo (NFC composes them)
    "हिन्दीक्ष"                     # Devanagari with vowel signs and virama
    "ＡＢｃ１"                     # fullwidth
    "²³ⁱʰₐ①Ⅻ٣𝟙"                  # other digits and letters: No, Nl, Nd, Lm
    "\u212a\u212b\u2126"          # Kelvin, Angstrom, Ohm signs (NFC changes them)
    "ⴀႠᏸꭰ"                        # Georgian, Cherokee case pairs
    "🔥\u200d\u00ad‿"             # emoji, ZWJ, soft hyphen, connector punctuation
    "ไทย"                         # Thai with combining vowel
)
SEPARATORS = [" ", " ", " ", ".", "-", "'", "", "\u00a0", "\n", ", ", "\u3000"]


def random_text(rng):
    words = []
    for _ in range(rng.randint(1, 10)):
        words.append("".join(rng.choice(POOL) for _ in range(rng.randint(1, 6))))
    out = words[0]
    for w in words[1:]:
        out += rng.choice(SEPARATORS) + w
    if rng.random() < 0.2:
        out = unicodedata.normalize(rng.choice(["NFD", "NFKC", "NFKD"]), out)
    if rng.random() < 0.2:
        out = rng.choice([out.upper(), out.lower(), out.title()])
    return out


def random_query(rng, texts):
    r = rng.random()
    if r < 0.5:
        t = rng.choice(texts)
        i = rng.randrange(len(t))
        q = t[i:i + rng.randint(1, 8)]
    elif r < 0.7:
        q = random_text(rng)
    else:
        q = " ".join(rng.choice(texts).split()[:rng.randint(1, 3)])
    if rng.random() < 0.3:
        q = rng.choice([q.upper(), q.lower(), q.casefold(), unicodedata.normalize("NFD", q)])
    return q


def entries(resp):
    return [(m.id, m.author, m.timestamp, m.content.model_dump()) for m in resp.memories]


@pytest.mark.parametrize("seed", [int(s) for s in os.environ.get("MNEM_FUZZ_SEEDS", "1,2,3").split(",")])
def test_tokenizer_fuzz(seed):
    rng = random.Random(seed)
    ref, svc = InMemoryMemoryService(), MnemMemoryService()
    texts = []

    async def go():
        for s in range(15):
            events = []
            for i in range(rng.randint(5, 30)):
                parts = [types.Part(text=random_text(rng)) for _ in range(rng.choice([1, 1, 1, 2, 3]))]
                texts.extend(p.text for p in parts)
                events.append(Event(id=f"f{s}-{i}", author="user", timestamp=1700000000.0 + i,
                                    content=types.Content(role="user", parts=parts)))
            sess = Session(id=f"s{s}", app_name=APP, user_id=USER, events=events)
            await ref.add_session_to_memory(sess)
            await svc.add_session_to_memory(sess)
        bad = []
        for _ in range(500):
            q = random_query(rng, texts)
            want = entries(await ref.search_memory(app_name=APP, user_id=USER, query=q))
            got = entries(await svc.search_memory(app_name=APP, user_id=USER, query=q))
            if want != got:
                bad.append((q, [w[0] for w in want], [g[0] for g in got]))
        return bad

    try:
        bad = asyncio.run(go())
    finally:
        svc.close_sync()
    assert not bad, f"seed {seed}: {len(bad)} of 500 queries differ; first ones (query, ADK ids, mnem ids):\n" + \
        "\n".join(f"  {q!r}: ADK {w}\n  {' ' * len(repr(q))}  mnem {g}" for q, w, g in bad[:8])
