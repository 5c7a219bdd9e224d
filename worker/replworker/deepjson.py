"""JSON of any depth. CPython 3.10 and 3.11 decode JSON containers by recursion in C, bounded
by the recursion limit less the stack already in use, so a value about 990 levels deep (which
a downstream MCP server may send, and the broker passes up to 1,000 levels) raises
RecursionError there; 3.12 and later decode it. loads() is json.loads, and where the
interpreter's recursion stops it, the same grammar decoded with its open containers on a
list instead of the stack: the same values, and a JSONDecodeError wherever json.loads
raises one, at any depth. Only what the recursive decoder refused takes the
slower path."""

import json
from json.decoder import WHITESPACE, JSONDecodeError, scanstring
from json.scanner import NUMBER_RE

_CONSTANTS = (
    ('null', None), ('true', True), ('false', False),
    ('NaN', float('nan')), ('Infinity', float('inf')), ('-Infinity', float('-inf')),
)


def loads(text):
    """json.loads(text) for a str, at any depth."""
    try:
        return json.loads(text)
    except RecursionError:
        return loads_flat(text)


def loads_flat(s):
    """Decode the JSON document s (a str) as json.loads does, without recursion."""
    skip = WHITESPACE.match
    # The containers being filled, innermost last: [container, key] (key None for a list).
    open_ = []
    idx = skip(s, 0).end()
    while True:
        char = s[idx:idx + 1]
        if char == '{':
            idx = skip(s, idx + 1).end()
            if s[idx:idx + 1] == '}':
                value, idx = {}, idx + 1
            else:
                key, idx = _key(s, idx)
                open_.append([{}, key])
                continue
        elif char == '[':
            idx = skip(s, idx + 1).end()
            if s[idx:idx + 1] == ']':
                value, idx = [], idx + 1
            else:
                open_.append([[], None])
                continue
        elif char == '"':
            value, idx = scanstring(s, idx + 1, True)
        else:
            value, idx = _scalar(s, idx)
        # A value is complete: it goes into the innermost open container, and every
        # container that closes right after it goes into the next one out.
        while True:
            if not open_:
                end = skip(s, idx).end()
                if end != len(s):
                    raise JSONDecodeError('Extra data', s, end)
                return value
            top = open_[-1]
            container, key = top
            if key is None:
                container.append(value)
            else:
                container[key] = value
            idx = skip(s, idx).end()
            char = s[idx:idx + 1]
            if char == ',':
                idx = skip(s, idx + 1).end()
                if key is not None:
                    top[1], idx = _key(s, idx)
                break
            if char != (']' if key is None else '}'):
                raise JSONDecodeError("Expecting ',' delimiter", s, idx)
            open_.pop()
            value, idx = container, idx + 1


def _key(s, idx):
    """An object's key at idx and the index of its value, past the colon."""
    if s[idx:idx + 1] != '"':
        raise JSONDecodeError('Expecting property name enclosed in double quotes', s, idx)
    key, idx = scanstring(s, idx + 1, True)
    idx = WHITESPACE.match(s, idx).end()
    if s[idx:idx + 1] != ':':
        raise JSONDecodeError("Expecting ':' delimiter", s, idx)
    return key, WHITESPACE.match(s, idx + 1).end()


def _scalar(s, idx):
    """A number or a constant at idx, and the index after it."""
    number = NUMBER_RE.match(s, idx)
    if number is not None:
        integer, frac, exp = number.groups()
        if frac or exp:
            return float(integer + (frac or '') + (exp or '')), number.end()
        return int(integer), number.end()
    for word, value in _CONSTANTS:
        if s.startswith(word, idx):
            return value, idx + len(word)
    raise JSONDecodeError('Expecting value', s, idx)
