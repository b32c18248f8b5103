"""The Python binding's status table (mnem._lib constants, mnem._errors classes) is the library's."""
import mnem
from mnem import _errors as E
from mnem import _lib as L


def library_statuses():
    """Every status the library names, by asking it about each integer in a wide range."""
    lib = L.lib()
    names = {code: lib.mnem_status_name(code).decode() for code in range(-16, 1024)}
    return {code: name for code, name in names.items() if name != "UNKNOWN"}


def test_status_table_matches_the_library():
    statuses = library_statuses()
    assert sorted(statuses) == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 100]
    for code, name in statuses.items():
        assert getattr(L, name) == code, name
        assert getattr(mnem, name) == code, name
        assert mnem.status_name(code) == name
        if code != L.OK:
            cls = E._BY_STATUS[code]
            assert cls.status == code and issubclass(cls, mnem.MnemError)
    assert sorted(E._BY_STATUS) == sorted(c for c in statuses if c != L.OK)
    for unknown in (-1, 10, 99, 101, 12345, 2**31 - 1, -(2**31)):
        assert mnem.status_name(unknown) == "UNKNOWN"
