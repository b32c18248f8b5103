"""Hand-made events and queries for the ADK parity tests: the Unicode and shape edge cases."""
import unicodedata

from google.adk.events import Event
from google.genai import types


def nfd(s):
    return unicodedata.normalize("NFD", s)


def text_event(eid, *texts, ts=1700000000.0, author="user", role="user", thought=None):
    parts = [types.Part(text=t, thought=thought) for t in texts]
    return Event(id=eid, author=author, timestamp=ts, content=types.Content(role=role, parts=parts))


# Texts that exercise ADK's tokenizer: NFC, Python's \w, per-token lowercasing, Latin/non-Latin
# runs of non-ASCII tokens (src/adk/tokenizer.rs describes the rules).
EDGE_TEXTS = [
    "İstanbul'da buluşalım, Istanbul ist schön",
    "Hauptstraße 5, Straße, STRASSE und ẞ groß",
    "हिन्दी भाषा",
    nfd("私はCaféでADKを使っています"),
    nfd("Meet at the Café for crème brûlée"),
    "Meet at the Café",
    nfd("プログラミングを学ぶ"),
    nfd("제 이름은 민수입니다"),
    "café\u0301 extra accent cafés",
    "Ｐｙｔｈｏｎ プログラミング",
    "今日はPythonを勉強 2024年に",
    "x²y and a‿b and H₂O",
    "ΟΔΟΣ Οδός οδος ΣΊΣΥΦΟΣ",
    "naïveテスト ﬁnanceの Москваcity",
    "ǅemal Ǆ ǆ titlecase",
    "\u212a kelvin \u212b angstrom",
    "underscore_token snake_case __dunder__",
    "🔥 fire 🔥🔥 emoji",
    "zero\u200dwidth joiner and soft\u00adhyphen",
    "ᾼ ᾳ greek iota",
    "dotless ı and İ alone",
    "line1\nline2\tTab\r\nCRLF",
    "私の名前は太郎です",
    "我喜欢机器学习",
    "Меня зовут Алексей",
    "太郎 works at ABC Corp",
    "私はPythonでADKを使っています",
    "我用Python写代码",
    "I like to code in Python.",
    "ｱｲｳ halfwidth katakana",
    "mixed中文English混合text",
    "١٢٣ arabic digits ٤٥٦ العربية",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math fraktur 𝟙𝟚𝟛",
    "ñandú Ñandú NFC",
    nfd("ñandú Ñandú NFD"),
    "ǰ ẖ special casing",
    "ŉ apostrophe n",
    "ﬀ ﬃ ligatures",
    "\u0130\u0307 double dot",
    "tab\tseparated\tvalues",
    "CamelCaseWord camelcaseword",
    "3.14159 and 1,000,000",
    "e-mail foo@example.com https://example.com/path?q=1",
]

EDGE_TIMESTAMPS = [
    0.0, 0.5, -0.5, 1700000000.9999996, 1000000000.0000005, 1234567890.123456, 2147483648.25,
    1699164000.0, 1699163999.999999, 1710054000.0, 1710053999.5, 12345.0, 12346.5, 1e-6, 5e-7,
    1700000000.000001, 1700000000.0000015, 1700000000.1, 32503680000.0, 1.0000005,
    -820000000.25, -2500000000.0, 100000000.0, 1300000000.75, 12345,
]

# Queries aimed at the edge texts (quirks of ADK's tokenizer).
EDGE_QUERIES = [
    "", " ", "   \t\n", "...", "?!", "—", "¿¡", "\x00", "a\x00b", "\u0307", "\u0301", "\u200d",
    "İstanbul", "istanbul", "stanbul", "ISTANBUL", "i", "ı", "İ", "I", "buluşalım", "schön",
    "Straße", "straße", "STRASSE", "strasse", "ẞ", "ß", "hauptstraße", "Hauptstraße", "straßE", "groß",
    "ह", "हिन्दी", "भाषा", "ि",
    "Café", "café", nfd("Café"), "cafe", "cafés", "crème", "brûlée", nfd("crème brûlée"), "Ruby",
    "プログラミング", "민수입니다", "extra",
    "Ｐｙｔｈｏｎ", "ｐｙｔｈｏｎ", "python", "Python", "PYTHON", "thon", "ｔｈｏ",
    "今日は", "勉強", "2024", "年に", "を勉強", "今日はPython", "今日はpython",
    "x²y", "x", "²", "y", "a‿b", "a", "b", "H₂O", "₂", "h",
    "ΟΔΟΣ", "οδος", "οδός", "Οδός", "σ", "ς", "σίσυφος", "ΣΊΣΥΦΟΣ",
    "naïve", "テスト", "naïveテスト", "ﬁnance", "finance", "москва", "city", "Москваcity",
    "ǅemal", "ǆemal", "dzemal", "ǆ",
    "\u212a", "k", "kelvin", "\u212b", "å",
    "underscore_token", "token", "snake_case", "snake", "__dunder__", "dunder", "_",
    "🔥", "fire", "emoji", "zero", "width", "zerowidth", "soft", "hyphen",
    "ᾼ", "ᾳ", "greek", "dotless", "alone",
    "line1", "line2", "tab", "CRLF", "line1 line2",
    "太郎", "天気", "机器学习", "天气预报", "Алексей", "ABC", "adk", "使って", "Java",
    "ｱｲｳ", "アイウ", "中文", "English", "englishmixed", "混合text",
    "١٢٣", "123", "العربية", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "unicode", "𝟙", "1",
    "ñandú", "ÑANDÚ", nfd("ñandú"), "nandu", "nfd", "nfc",
    "ǰ", "ẖ", "ŉ", "ﬀ", "ﬃ", "ff", "ligatures", "double dot",
    "separated values", "camelcaseword", "CamelCaseWord",
    "3", "14159", "3.14159", "000", "1,000,000",
    "foo@example.com", "example", "com", "https", "path", "q",
    "東京", "大阪", "東京 大阪", "京大", "東京大阪", "zeppelins", "hidden", "reasoning",
    "function", "transfer", "args", "empty", "nothing",
    "x" * 5000, "the " * 300,
]


def edge_events(prefix):
    """Events beyond plain text: multi-part, thoughts, tool calls, empty/absent content."""
    out = []
    for i, t in enumerate(EDGE_TEXTS):
        ts = EDGE_TIMESTAMPS[i % len(EDGE_TIMESTAMPS)]
        out.append(text_event(f"{prefix}-t{i}", t, ts=ts, author=["user", "model", "ユーザー", ""][i % 4],
                              role=["user", "model"][i % 2]))
    out += [
        text_event(f"{prefix}-multi", "東京", "大阪", ts=1700000100.25),
        text_event(f"{prefix}-multi2", "hidden", "", "zeppelins over", ts=1700000100.5),
        Event(id=f"{prefix}-thought", author="model", timestamp=1700000101.0, content=types.Content(
            role="model", parts=[types.Part(text="secret reasoning about zeppelins", thought=True),
                                 types.Part(text="visible answer")])),
        Event(id=f"{prefix}-fcall", author="model", timestamp=1700000102.0, content=types.Content(
            role="model", parts=[types.Part(function_call=types.FunctionCall(
                name="transfer", args={"text": "zeppelins function args"}))])),
        Event(id=f"{prefix}-fresp", author="tool", timestamp=1700000103.0, content=types.Content(
            role="user", parts=[types.Part(function_response=types.FunctionResponse(
                name="transfer", response={"result": "zeppelins"}))])),
        Event(id=f"{prefix}-fcall-text", author="model", timestamp=1700000104.0, content=types.Content(
            role="model", parts=[types.Part(function_call=types.FunctionCall(name="f", args={})),
                                 types.Part(text="function with zeppelins text")])),
        Event(id=f"{prefix}-blob", author="user", timestamp=1700000105.0, content=types.Content(
            role="user", parts=[types.Part(inline_data=types.Blob(mime_type="image/png", data=b"\x89PNG\x00\xff")),
                                types.Part(text="picture of zeppelins")])),
        text_event(f"{prefix}-emptytext", "", ts=1700000106.0),
        text_event(f"{prefix}-punct", "... !!! ???", ts=1700000107.0),
        Event(id=f"{prefix}-nocontent", author="user", timestamp=1700000108.0),
        Event(id=f"{prefix}-noparts", author="user", timestamp=1700000109.0,
              content=types.Content(role="user", parts=[])),
        Event(id=f"{prefix}-noneparts", author="user", timestamp=1700000110.0, content=types.Content(role="user")),
        Event(id=f"{prefix}-ид-🔥 spaced id", author="user", timestamp=1700000111.0,
              content=types.Content(role="user", parts=[types.Part(text="unicode id nothing else")])),
    ]
    return out
