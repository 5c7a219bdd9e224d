"""Previews of the standard library's well-known types (docs/contract.md §5.11): dates and
times, Decimal and Fraction, UUID, paths, and the collections' containers, each as its
repr reads, registered into the rendering core (rendering.py) by module and qualname.

A repr is called only where it is the standard library's own and formats nothing of the
user's; a container's items, and a tzinfo of the user's, are previewed on their own."""

from .limits import PREVIEW_INT_BITS, PREVIEW_SORT_ITEMS
from .rendering import for_type_by_name, mapping, name_of, render, sequence


def safe_tz(tz):
    """Whether a tzinfo's methods are the library's: none, or the stdlib's, pytz's or
    dateutil's own classes. pandas and datetime call utcoffset() to format a time."""
    if tz is None:
        return True
    name = name_of(type(tz))
    return name is not None and (name in (('datetime', 'timezone'), ('zoneinfo', 'ZoneInfo'))
                                 or name[0] in ('pytz', 'dateutil'))


def repr_of(value, cls, room, depth, state):
    """The renderer of a class whose repr is its library's own and shows no user value."""
    return repr(value)


def _zoned(value, cls, room, depth, state):
    """A datetime or time: its repr, with a tzinfo of the user's previewed on its own."""
    tz = value.tzinfo
    if safe_tz(tz):
        return repr(value)
    naive = repr(value.replace(tzinfo=None))
    return naive[:-1] + ', tzinfo=' + render(tz, 200, depth + 1, state.inner()) + ')'


def _fraction(value, cls, room, depth, state):
    if max(value.numerator.bit_length(), value.denominator.bit_length()) > PREVIEW_INT_BITS:
        return None
    return repr(value)


def _deque(value, cls, room, depth, state):
    maxlen = value.maxlen
    closing = '])' if maxlen is None else f'], maxlen={maxlen})'
    return sequence(value, 'deque([', closing, 'deque([]' + closing[1:], room, depth, state)


def _counter(value, cls, room, depth, state):
    pairs = dict.items(value)
    size = dict.__len__(value)
    if size <= PREVIEW_SORT_ITEMS and all(type(count) is int for count in dict.values(value)):
        # most_common() order, as Counter's repr; the counts are exact ints, so sorting runs
        # no user code.
        pairs = sorted(pairs, key=lambda pair: pair[1], reverse=True)
    return mapping(value, 'Counter({', '})', 'Counter()', room, depth, state, pairs)


def _ordered_dict(value, cls, room, depth, state):
    # Its own order (move_to_end changes it), from the exact class's own items().
    return mapping(value, 'OrderedDict({', '})', 'OrderedDict()', room, depth, state, cls.items(value))


def _defaultdict(value, cls, room, depth, state):
    factory = render(value.default_factory, 200, depth + 1, state.inner())
    return mapping(value, f'defaultdict({factory}, {{', '})', f'defaultdict({factory}, {{}})', room, depth, state)


# pathlib's classes, whose repr is the path's: `PosixPath('/tmp/x')`.
PATHS = ('PurePath', 'PurePosixPath', 'PureWindowsPath', 'Path', 'PosixPath', 'WindowsPath')

_RENDERERS = {
    ('datetime', 'date'): repr_of, ('datetime', 'timedelta'): repr_of, ('datetime', 'timezone'): repr_of,
    ('datetime', 'datetime'): _zoned, ('datetime', 'time'): _zoned, ('zoneinfo', 'ZoneInfo'): repr_of,
    ('decimal', 'Decimal'): repr_of, ('fractions', 'Fraction'): _fraction, ('uuid', 'UUID'): repr_of,
    ('collections', 'deque'): _deque, ('collections', 'Counter'): _counter,
    ('collections', 'OrderedDict'): _ordered_dict, ('collections', 'defaultdict'): _defaultdict,
    **{('pathlib', name): repr_of for name in PATHS},
}

# The containers track themselves (sequence, mapping); the others hold nothing.
for (_package, _qualname), _renderer in _RENDERERS.items():
    for_type_by_name(_package, _qualname, _renderer, tracks_itself=True)
