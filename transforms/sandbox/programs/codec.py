"""The value codec both sides of a code check share: builtin values cross as JSON, anything else is a handle.

An instance of a subclass of a builtin type (Counter, defaultdict, OrderedDict, a namedtuple, an IntEnum, a str
subclass) crosses as the plain value of its base type, read with the base type's own methods (`dict.items`,
`tuple.__iter__`): the sender could always have sent that plain value itself, so this adds no power, and the other
side only ever gets exact builtins. A `fractions.Fraction` crosses as its integer numerator and denominator and a
`decimal.Decimal` as its string, each rebuilt as a real Fraction or Decimal by the receiver. Any other object (a
user's class, whatever its `__eq__`) stays a handle.

Runs inside both sandboxed programs (scripts.py inlines it); stdlib only.
"""

import sys as _sys

_MAX_DEPTH = 64
_SPECIAL_FLOATS = ("nan", "inf", "-inf")


class _Unsendable(Exception):
    pass


def _enc(v, handle, depth=0):
    if depth > _MAX_DEPTH:
        raise _Unsendable(f"value nested more than {_MAX_DEPTH} deep")
    t = type(v)
    if v is None or t is bool or t is int or t is str:
        return v
    if t is float:
        return {"$f": repr(v)} if repr(v) in _SPECIAL_FLOATS else v
    if t is list:
        return [_enc(x, handle, depth + 1) for x in v]
    if t is tuple:
        return {"$t": [_enc(x, handle, depth + 1) for x in v]}
    if t is dict:
        return {"$d": [[_enc(k, handle, depth + 1), _enc(x, handle, depth + 1)] for k, x in v.items()]}
    if t is set or t is frozenset:
        return {"$s" if t is set else "$fs": [_enc(x, handle, depth + 1) for x in v]}
    if t is bytes:
        return {"$b": v.hex()}
    if t is complex:
        return {"$c": [v.real, v.imag]}
    return _enc_other(v, t, handle, depth)


def _enc_other(v, t, handle, depth):
    """A subclass of a builtin as its base value; a Fraction or Decimal tagged; anything else a handle."""
    fractions, decimal = _sys.modules.get("fractions"), _sys.modules.get("decimal")
    if fractions is not None and t is getattr(fractions, "Fraction", None):
        n, d = v.numerator, v.denominator
        if type(n) is int and type(d) is int and d > 0:
            return {"$q": [n, d]}
    if decimal is not None and t is getattr(decimal, "Decimal", None):
        text = str(v)
        if type(text) is str:
            return {"$D": text}
    if issubclass(t, int):  # bool has no subclasses: an IntEnum member, an int subclass
        return int.__index__(v)
    if issubclass(t, float):
        return _enc(float.__float__(v), handle, depth)
    if issubclass(t, str):
        return str.__str__(v)
    if issubclass(t, bytes):
        return {"$b": bytes.hex(v)}
    if issubclass(t, complex):
        return _enc(complex(complex.real.__get__(v), complex.imag.__get__(v)), handle, depth)
    if issubclass(t, dict):
        return _enc(dict(dict.items(v)), handle, depth)
    if issubclass(t, list):
        return _enc(list(list.__iter__(v)), handle, depth)
    if issubclass(t, tuple):
        return _enc(tuple(tuple.__iter__(v)), handle, depth)
    if issubclass(t, frozenset):
        return _enc(frozenset(frozenset.__iter__(v)), handle, depth)
    if issubclass(t, set):
        return _enc(set(set.__iter__(v)), handle, depth)
    return handle(v)


def _dec(j, handle, depth=0):
    """JSON from the other process -> values of exactly the builtin types (and `handle(id)` for "$h")."""
    if depth > _MAX_DEPTH:
        raise ValueError("value nested too deep")
    t = type(j)
    if j is None or t is bool or t is int or t is float or t is str:
        return j
    if t is list:
        return [_dec(x, handle, depth + 1) for x in j]
    if t is dict and len(j) == 1:
        ((tag, val),) = j.items()
        if tag == "$h" and type(val) is int:
            return handle(val)
        if tag == "$f" and val in _SPECIAL_FLOATS:
            return float(val)
        if tag == "$b" and type(val) is str:
            return bytes.fromhex(val)
        if tag == "$c" and type(val) is list and len(val) == 2 and all(type(x) in (int, float) for x in val):
            return complex(val[0], val[1])
        if tag == "$q" and type(val) is list and len(val) == 2 and all(type(x) is int for x in val) and val[1] > 0:
            import fractions

            return fractions.Fraction(val[0], val[1])
        if tag == "$D" and type(val) is str and len(val) <= 10_000:
            import decimal

            try:
                return decimal.Decimal(val)
            except (ArithmeticError, ValueError):
                pass
        if type(val) is list:
            items = [_dec(x, handle, depth + 1) for x in val] if tag != "$d" else None
            if tag == "$t":
                return tuple(items)
            if tag == "$s":
                return set(items)
            if tag == "$fs":
                return frozenset(items)
            if tag == "$d" and all(type(kv) is list and len(kv) == 2 for kv in val):
                return {_dec(k, handle, depth + 1): _dec(x, handle, depth + 1) for k, x in val}
    raise ValueError("malformed value")
