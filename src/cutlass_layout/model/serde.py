"""The model's one serializer and what reads it back: :func:`plain` (a dataclass as JSON
values), :func:`dataclass_keys` and :func:`from_plain` (a dataclass from those values, checked
and built without its constructor), :func:`lazy_list` (a list field kept as plain dicts until
it is first read). Imports nothing from the package."""

from __future__ import annotations

from dataclasses import MISSING, fields

_NAMES: dict[type, tuple[str, ...]] = {}


def plain(value):
    """JSON values of a dataclass (a dict of its fields, in order), recursively through
    lists, tuples (as lists) and dicts: what :func:`dataclasses.asdict` gives, without its
    deep copies (a scan of a whole tree has tens of thousands of records)."""
    cls = type(value)
    names = _NAMES.get(cls)
    if names is None and hasattr(cls, "__dataclass_fields__"):
        names = _NAMES[cls] = tuple(f.name for f in fields(cls))
    if names is not None:
        return {n: plain(getattr(value, n)) for n in names}
    if cls is list or cls is tuple:
        return [plain(v) for v in value]
    if cls is dict:
        return {k: plain(v) for k, v in value.items()}
    return value


def dataclass_keys(cls) -> tuple[frozenset[str], frozenset[str], dict]:
    """What :func:`from_plain` checks and fills in for ``cls``: every field's name, the
    required ones (no default, no default factory), the defaults of the others (fields with a
    default factory are left to the caller)."""
    fs = fields(cls)
    return (
        frozenset(f.name for f in fs),
        frozenset(f.name for f in fs if f.default is MISSING and f.default_factory is MISSING),
        {f.name: f.default for f in fs if f.default is not MISSING},
    )


def from_plain(cls, d: dict, known: frozenset, required: frozenset, defaults: dict):
    """An instance of the dataclass ``cls`` whose attributes are ``defaults`` updated with
    ``d``, built without the constructor (a cached audit holds hundreds of thousands of
    members). Raises ``TypeError``, as the constructor does, for a key that is not in
    ``known`` or one of ``required`` missing (``known``, ``required``, ``defaults``:
    :func:`dataclass_keys`)."""
    keys = d.keys()
    if not (keys <= known and required <= keys):
        raise TypeError(f"{cls.__name__}: unknown keys {sorted(keys - known)}, missing {sorted(required - keys)}")
    obj = object.__new__(cls)
    attrs = obj.__dict__
    attrs.update(defaults)
    attrs.update(d)
    return obj


def lazy_list(make, doc: str) -> property:
    """A property for a dataclass's list field that a lazy ``from_dict`` kept as plain dicts
    (in the instance's ``_members``): the first read makes them, ``make(dict)`` each, and
    keeps the list (in ``_fields``); a write replaces both. The field stays a dataclass field
    (the constructor, :func:`dataclasses.fields`, equality, :func:`plain`)."""

    def get(self) -> list:
        attrs = self.__dict__
        made = attrs.get("_fields")
        if made is None:
            made = attrs["_fields"] = [make(f) for f in attrs.pop("_members", ())]
        return made

    def set_(self, value: list) -> None:
        self.__dict__.pop("_members", None)
        self.__dict__["_fields"] = value

    return property(get, set_, doc=doc)
