"""Replays the conformance corpus (tests/conformance/cases, format in tests/conformance/README.md)
through mnem.Store: queries given as objects go in as dicts, outputs come back parsed, errors
as MnemError subclasses mapped back to their status names, the corpus's embedders are callables."""
import ctypes
import datetime
import json
import os
import re
import uuid
from pathlib import Path

import pytest

import mnem

CASES = sorted((Path(__file__).resolve().parents[1] / "conformance" / "cases").glob("*.json"))
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
FLAGS = ("create", "read_only", "view")
HYBRID_TEXT = {"text", "limit", "semantic_weight", "candidates", "episode_type", "tag",
               "vector_model"}  # hybrid_search_text's
# The corpus's embedder `words` (tests/conformance/README.md): a count per word group, then 1.
GROUPS = ("tea coffee oolong drink", "cat kitten dog pet", "train flight lisbon travel", "green red blue colour",
          "morning noon night late", "sofa cushion home house", "apple bread lunch food")


def words(text):
    ws = [w.lower() for w in re.findall(r"[A-Za-z0-9]+", text)]
    return [float(sum(w in g.split() for w in ws)) for g in GROUPS] + [1.0]


class Skip(Exception):
    """A step whose input mnem.Store cannot express."""


class Mismatch(AssertionError):
    pass


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# Cases about what only a store directory has (tests/conformance.rs says which and why): not
# replayed on PostgreSQL.
DIRECTORY_CASES = {"open_busy_and_reopen", "open_errors", "check_backup_compact", "view", "open_stats"}
PG_SERVER = os.environ.get("MNEM_TEST_PG_URI")


class Replay:
    def __init__(self, tmp, pg_schema=None):
        """`pg_schema`: replay on the PostgreSQL server MNEM_TEST_PG_URI, every store the case
        names a schema of its own starting with this stem (`:memory:` a new one at each open)."""
        self.tmp, self.stores, self.vars, self.texts = tmp, {}, {}, []
        self.pg_schema, self.opens = pg_schema, 0

    def embedder(self, kind):
        """The corpus's embedder `kind` as a Python callable (None for "none"); it records each text."""
        def embed(text):
            self.texts.append(text)
            if kind == "fails":
                raise RuntimeError("model offline")
            return [0.0] * 8 if kind == "zero" else words(text)
        return None if kind == "none" else embed

    def bind(self, name, got, path):
        if name and self.vars.setdefault(name, got) != got:
            raise Mismatch(f"{path}: ${name} is {self.vars[name]!r}, got {got!r}")

    def match(self, want, got, path="json"):
        if isinstance(want, dict) and len(want) == 1 and next(iter(want)).startswith("$"):
            (k, arg), = want.items()
            if k == "$any":
                ok = {"value": True, "string": isinstance(got, str), "number": is_num(got),
                      "integer": is_num(got) and float(got).is_integer(),
                      "uuid": isinstance(got, str) and bool(UUID.match(got))}[arg]
                if not ok:
                    raise Mismatch(f"{path}: {got!r} is not {arg}")
            elif k == "$uuid":
                if not (isinstance(got, str) and UUID.match(got)):
                    raise Mismatch(f"{path}: {got!r} is not a UUID")
                self.bind(arg, got, path)
            elif k == "$var":
                if not isinstance(got, str):
                    raise Mismatch(f"{path}: {got!r} is not a string")
                self.bind(arg, got, path)
            elif k == "$localtime":
                # The definition the corpus uses, and what the library must reproduce.
                want_s = datetime.datetime.fromtimestamp(arg).isoformat()
                if got != want_s:
                    raise Mismatch(f"{path}: want local time {want_s!r}, got {got!r}")
            else:
                raise Mismatch(f"{path}: unknown matcher {k}")
            return
        if isinstance(want, dict):
            if not isinstance(got, dict) or set(got) != set(want):
                raise Mismatch(f"{path}: keys differ: want {sorted(want)}, got {got!r}")
            for k in want:
                self.match(want[k], got[k], f"{path}.{k}")
        elif isinstance(want, list):
            if not isinstance(got, list) or len(got) != len(want):
                raise Mismatch(f"{path}: want {len(want)} elements, got {got!r}")
            for i, (w, g) in enumerate(zip(want, got)):
                self.match(w, g, f"{path}[{i}]")
        elif is_num(want):
            if not is_num(got) or float(got) != float(want):
                raise Mismatch(f"{path}: want {want!r}, got {got!r}")
        elif type(want) is not type(got) or want != got:
            raise Mismatch(f"{path}: want {want!r}, got {got!r}")

    def subst(self, v):
        if isinstance(v, str):
            def var(m):
                if m.group(1) not in self.vars:
                    raise KeyError(m.group(1))
                return self.vars[m.group(1)]
            return re.sub(r"\$\{([^}]*)\}", var, v)
        if isinstance(v, list):
            return [self.subst(x) for x in v]
        if isinstance(v, dict):
            return {k: self.subst(x) for k, x in v.items()}
        return v

    def path(self, p):
        if self.pg_schema is not None and p != "":
            if p == ":memory:":
                self.opens += 1
                name = f"m{self.opens}"
            else:
                name = "".join(c.lower() if c.isascii() and c.isalnum() else "_" for c in p)
            sep = "&" if "?" in PG_SERVER else "?"
            return f"{PG_SERVER}{sep}schema={self.pg_schema}_{name}"
        return p if p in ("", ":memory:") else str(self.tmp / p)

    def call(self, name, a):
        """(outcome dict) for one call; raises MnemError for a failed call."""
        app, user = a.get("app", "app"), a.get("user", "user")

        def text(key):
            v = a.get(key)
            return "" if v is None else v if isinstance(v, str) else json.dumps(v)

        def query(key="query"):
            v = a.get(key)
            return "" if v is None else v  # a dict goes in as a dict: the binding encodes it

        def lines(key):
            v = a.get(key)
            return "\n".join(v) if isinstance(v, list) else (v or "")

        if name == "abi_version":
            return {"value": mnem.abi_version()}
        if name == "version":
            return {"value": mnem.version()}
        if name == "status_name":
            return {"value": mnem.status_name(a["status"])}
        if name == "status_message":
            raise Skip()
        if name == "open":
            flags = a.get("flags", ["create"])
            if not isinstance(flags, list):
                raise Skip()  # raw flag bits
            opts = text("options")
            try:
                options = json.loads(opts) if opts else None
            except ValueError:
                raise Skip() from None
            if opts and not isinstance(options, dict):
                raise Skip()  # Store takes options as a mapping
            if opts and json.dumps(options, separators=(",", ":")) != opts:
                raise Skip()  # a dict would not send these bytes (e.g. a duplicate key)
            s = mnem.Store(self.path(a.get("path", ":memory:")), create="create" in flags,
                           read_only="read_only" in flags, view="view" in flags, options=options)
            assert a.get("as", "main") not in self.stores
            self.stores[a.get("as", "main")] = s
            return {}
        s = self.stores[a.get("store", "main")]
        if name == "close":
            s.close()
            del self.stores[a.get("store", "main")]
            return {}
        if name in ("flush", "compact"):
            getattr(s, name)()
            return {}
        if name == "forget_namespace":
            s.forget_namespace(app, user)
            return {}
        if name == "backup":
            s.backup(self.path(a.get("dest", "")))
            return {}
        if name == "add_session":
            return {"count": s.add_session(app, user, a.get("session_id", ""), lines("events"))}
        if name == "add_events":
            return {"count": s.add_events(app, user, a.get("session_id", ""), lines("events"), text("metadata") or None)}
        if name == "delete_memory":
            return {"count": s.delete_memory(app, user, a.get("memory_id", ""))}
        if name == "delete_session":
            return {"count": s.delete_session(app, user, a.get("session_id", ""))}
        if name == "delete_episodes":
            return {"count": s.delete_episodes(app, user, lines("ids"))}
        if name == "import":
            return {"count": s.import_export(lines("lines"))}
        if name == "put_episodes":
            eps = a.get("episodes") or []
            return {"ids": [str(i) for i in s.put_episodes(app, user, eps if isinstance(eps, list) else [eps])]}
        if name == "put_episodes_v2":
            eps = a.get("episodes") or []
            data = "\n".join(eps) if isinstance(eps, list) else eps
            if "ids_cap" not in a and a.get("ids_wanted", True):
                ids = s.put_episodes(app, user, data)  # the binding's own sizing and retry
                return {"ids": [str(i) for i in ids], "ids_len": 16 * len(ids)}
            # A given size, or NULL: what put_episodes never passes, so the C function itself.
            from mnem import _errors
            from mnem import _lib as L
            wanted = a.get("ids_wanted", True)
            cap = a["ids_cap"] if wanted else 0
            buf, n, err = (ctypes.c_uint8 * (cap + 16))(*([0xEE] * (cap + 16))), ctypes.c_size_t(999), L.ErrorBuf()
            st = s._lib.mnem_put_episodes_v2(s._handle, L.mstr(app), L.mstr(user), L.mstr(data),
                                             buf if wanted else None, cap, ctypes.byref(n), ctypes.byref(err))
            written = n.value if st == L.OK and wanted else 0
            if written > cap or any(b != 0xEE for b in bytes(buf)[written:]):
                raise Mismatch(f"put_episodes_v2 wrote out_ids past {written} bytes")
            try:
                _errors.check(st, err)
            except mnem.MnemError as e:
                e.ids_len = n.value
                raise
            raw = bytes(buf)[:written]
            out = {"ids_len": n.value}
            if wanted:
                out["ids"] = [str(uuid.UUID(bytes=raw[i:i + 16])) for i in range(0, written, 16)]
            return out
        if name == "set_embedder":
            # `model` present: registered with its name (mnem_set_named_embedder).
            s.set_embedder(self.embedder(a.get("kind", "words")), model=a.get("model"))
            return {}
        if name == "embedder_texts":
            texts, self.texts = self.texts, []
            return {"value": texts}
        if name == "recall":
            q = query()
            return {"json": s.recall(app, user, q.encode() if isinstance(q, str) else q)}  # a str would be the text
        if name == "hybrid_search_with":
            q, e = query(), self.embedder(a.get("embedder", "words"))
            if isinstance(q, dict) and isinstance(q.get("text"), str) and set(q) <= HYBRID_TEXT:
                opts = {k: v for k, v in q.items() if k != "text"}
                return {"json": s.hybrid_search_text(app, user, q["text"], e, **opts)}
            # A query hybrid_search_text cannot take (a vector, raw JSON): the C function itself.
            from mnem import _lib as L
            from mnem._store import _query, embed_callback
            cb = embed_callback(e) if e else ctypes.cast(None, L.EMBED_FN)
            return {"json": json.loads(s._read(s._lib.mnem_hybrid_search_with, L.mstr(app), L.mstr(user),
                                               L.mstr(_query(q)), cb, None))}
        if name == "search":
            raw = s.search_raw(app, user, query())
            parsed = s.search(app, user, query())
            return {"json": parsed, "raw": raw}
        if name in ("keyword_search", "lexical_page", "substring_search", "hybrid_search"):
            return {"json": getattr(s, name)(app, user, query())}
        if name == "get_episodes":
            ids = []
            for line in a.get("ids") or []:
                try:
                    ids.append(json.loads(line))
                except ValueError:
                    raise Skip() from None  # get_episodes takes ids, not JSON Lines
                if not isinstance(ids[-1], str) or json.dumps(ids[-1]) != line:
                    raise Skip()
            return {"json": {"episodes": s.get_episodes(app, user, ids)}}
        if name == "list_namespaces":
            q = a.get("query")
            if isinstance(q, str) and q:
                try:
                    q = json.loads(q)
                except ValueError:
                    raise Skip() from None
            if q in ("", None):
                q = {}
            if (not isinstance(q, dict) or set(q) - {"limit", "after"} or "after" in q and q["after"] is None
                    or not isinstance(q.get("after", {}), dict)):
                raise Skip()  # list_namespaces takes limit and an after mapping as arguments
            return {"json": s.list_namespaces(limit=q.get("limit"), after=q.get("after"))}
        if name == "namespace_stats":
            return {"json": s.namespace_stats(app, user)}
        if name == "stats":
            return {"json": s.stats()}
        if name == "check":
            return {"json": s.check()}
        if name == "export":
            raw = s.export() if a.get("all") else s.export(app, user)
            return {"raw": raw}
        if name == "export_page":
            # Store pages with export_pages(), which keeps the cursor itself: a page at a given
            # cursor goes through the binding's raw layer, with its buffer growth.
            from mnem import _lib as L
            raw = s._read(s._lib.mnem_export_page, L.mstr(app), L.mstr(user), 1 if a.get("all") else 0,
                          L.mstr(a.get("cursor", "")), a.get("max_bytes", 0))
            return {"json": json.loads(raw), "raw": raw}
        raise AssertionError(f"unknown call {name}")

    def step(self, st):
        name, want = st["call"], st.get("expect", {})
        args = self.subst(st.get("args", {}))
        try:
            out, status, message = self.call(name, args), "OK", ""
        except mnem.MnemError as e:
            out, status, message = {}, e.status_name, e.message
            if name == "put_episodes_v2":
                # The raw call's *out_ids_len; put_episodes' error carries no ids: 0.
                out["ids_len"] = getattr(e, "ids_len", 0)
            assert type(e).status == e.status, "exception class does not match its status"
        if status != want.get("status", "OK"):
            raise Mismatch(f"status {status} ({message!r}), want {want.get('status', 'OK')}")
        for m in want.get("message_has", []):
            if m not in message:
                raise Mismatch(f"message {message!r} lacks {m!r}")
        for key in ("count", "ids", "ids_len", "value", "json"):
            if key in want:
                self.match(want[key], out.get(key), key)
        raw = out.get("raw", b"")
        if "lines" in want:
            self.match(want["lines"], [json.loads(x) for x in raw.decode().split("\n") if x], "lines")
        for r in want.get("raw_contains", []):
            if r.encode() not in raw:
                raise Mismatch(f"output lacks the bytes {r}")
        if "capture" in want:
            self.vars[want["capture"]] = raw.decode()


@pytest.mark.parametrize("backend", ["rocksdb", "postgresql"])
@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case(path, backend, tmp_path):
    pg_schema = None
    if backend == "postgresql":
        if not PG_SERVER:
            pytest.skip("MNEM_TEST_PG_URI is not set")
        if path.stem in DIRECTORY_CASES:
            pytest.skip("a case about store directories")
        pg_schema = f"py{os.getpid()}_{path.stem}"
    doc = json.loads(path.read_text())
    r = Replay(tmp_path, pg_schema)
    skipped = 0
    try:
        if "open" not in doc:
            r.call("open", {"path": ":memory:", "flags": ["create"]})
        elif doc["open"] is not None:
            r.call("open", doc["open"])
        for i, st in enumerate(doc["steps"], 1):
            try:
                r.step(st)
            except Skip:
                skipped += 1
            except KeyError as e:
                # A variable only a skipped step would have bound.
                if not skipped:
                    raise AssertionError(f"step {i} ({st['call']}): unbound variable {e}") from None
                skipped += 1
            except Mismatch as e:
                raise AssertionError(f"step {i} ({st['call']}): {e}") from None
    finally:
        for s in r.stores.values():
            s.close()
    assert skipped < len(doc["steps"]) or not doc["steps"], "every step skipped"


def test_corpus_present():
    assert len(CASES) >= 20, "tests/conformance/cases is missing or incomplete"
