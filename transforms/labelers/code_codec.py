"""The value codec both sides of a code check share: exact builtin types cross as JSON, anything else is a handle.

Runs inside both sandboxed programs (code_protocol.py inlines it); stdlib only.
"""

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
