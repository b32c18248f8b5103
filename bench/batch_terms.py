"""How much grouping a batch's postings per term would save: for batches of 20 consecutive
corpus events (as `bench_indexes adk-cold` writes them), the words (`\\w+` runs, lowercased)
and non-ASCII word characters per event, against the distinct ones per batch.

    python3 bench/batch_terms.py /tmp/mnem-bench/corpus.jsonl [N]

An approximation of the ADK tokenizer (no NFC, no Latin/non-Latin split): it counts keys,
it does not search.
"""
import json
import re
import sys


def text(event: dict) -> str:
    parts = (event.get("content") or {}).get("parts") or []
    return " ".join(p.get("text", "") for p in parts)


def main() -> None:
    path = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 20_000
    with open(path, encoding="utf-8") as f:
        texts = [text(json.loads(line)) for _, line in zip(range(n), f)]
    words = chars = batch_words = batch_chars = 0
    for i in range(0, len(texts), 20):
        ws, cs = set(), set()
        for t in texts[i:i + 20]:
            w = set(re.findall(r"\w+", t.lower()))
            c = {ch for ch in t.lower() if ord(ch) > 127 and re.match(r"\w", ch)}
            words, chars = words + len(w), chars + len(c)
            ws |= w
            cs |= c
        batch_words, batch_chars = batch_words + len(ws), batch_chars + len(cs)
    k = len(texts)
    print(f"{k} events: words/event {words / k:.2f}, distinct per batch of 20 {batch_words / k:.2f}; "
          f"non-ASCII chars/event {chars / k:.2f}, distinct per batch {batch_chars / k:.2f}")


if __name__ == "__main__":
    main()
