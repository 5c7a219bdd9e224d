"""Downstream MCP tools as Python functions (docs/contract.md §7.5): `mcp.<server>.<tool>(...)`
with a signature and a docstring made from the tool's inputSchema, arguments checked in
the cell before anything is sent, the catalogues they come from kept as long as the broker
says they stay fresh, and mcp.search over them.

The broker still checks every call against the schema: what is checked here is what a
Python function would check (names, required arguments, JSON types), so that a typo fails
at once, with the signature to fix it by."""

import asyncio
import keyword
import re
import time

from .limits import (
    DOC_WIDTH, ENUM_LITERALS, MCP_CALL_TIMEOUT, MCP_CATALOGUE_TIMEOUT, MCP_OP_WAIT, MCP_PREVIEW_SERVERS, MCP_PREVIEW_WAIT,
    MCP_REPLY_SLACK, SEARCH_LIMIT_MAX, SEARCH_LINE_CHARS, SEARCH_SENTENCE_CHARS, TOOL_DOC_PARAM_CHARS,
)
from .messages import (
    MCP_AMBIGUOUS_NAME, MCP_BAD_SEARCH_LIMIT, MCP_BAD_SEARCH_QUERY, MCP_HELP_NO_TOOLS, MCP_MALFORMED, MCP_NO_SUCH_TOOL,
    MCP_PREVIEW, MCP_PREVIEW_FAILED, MCP_PREVIEW_MORE, MCP_PREVIEW_NONE, MCP_PREVIEW_TOOLS, MCP_PREVIEW_UNLISTED, MCP_REPR,
    MCP_SEARCH_MORE, MCP_SEARCH_NONE, MCP_SEARCH_UNAVAILABLE, MCP_TOOL_ARG_TYPE, MCP_TOOL_BAD_CALL, MCP_TOOL_NO_SIGNATURE,
    MCP_TOOL_NOT_ALLOWED,
)

# ---- Names ----------------------------------------------------------------------------------

_NOT_WORD = re.compile(r'\W', re.ASCII)


def python_name(name):
    """The attribute a server or tool name is reached by: the name itself when it is an
    identifier and not a keyword; else every character that is not an ASCII letter, digit
    or underscore becomes `_`, a leading digit gets `_` before it, and a keyword (also one
    made by the replacement) gets `_` after it (`class` → `class_`)."""
    if name.isidentifier() and name.isascii() and not keyword.iskeyword(name):
        return name
    attr = _NOT_WORD.sub('_', name)
    if not attr or attr[0].isdigit():
        attr = '_' + attr
    if keyword.iskeyword(attr):
        attr += '_'
    return attr


def reachable(attr):
    """Whether an attribute may name a server or a tool: not one starting with `_`, which
    libraries probe objects for (`_repr_html_`, `__wrapped__`), unless a digit follows, as
    normalisation makes (`_2fa`)."""
    return not attr.startswith('_') or attr[1:2].isdigit()


class Names:
    """The attribute names of a set of real names. A real name that is its own attribute
    always wins; two other names that normalise alike are both unreachable by attribute
    (only by [name]), and asking for that attribute says which they are. Attributes that
    are not reachable() are left out."""

    def __init__(self, names):
        self.real = list(names)
        exact = {name for name in self.real if python_name(name) == name}
        by_attr = {}
        for name in self.real:
            if reachable(python_name(name)):
                by_attr.setdefault(python_name(name), []).append(name)
        self._attrs, self._ambiguous = {}, {}
        for attr, owners in by_attr.items():
            if attr in exact:
                self._attrs[attr] = attr
            elif len(owners) == 1:
                self._attrs[attr] = owners[0]
            else:
                self._ambiguous[attr] = owners

    def attrs(self):
        return sorted(self._attrs)

    def attr_of(self, name):
        """The attribute that reaches `name`, or None when only [name] does."""
        attr = python_name(name)
        return attr if self._attrs.get(attr) == name else None

    def resolve(self, attr):
        """The real name behind attr; None when there is none. An attribute two names
        normalise to raises AttributeError naming both."""
        if attr in self._ambiguous:
            raise AttributeError(MCP_AMBIGUOUS_NAME.format(attr, ', '.join(map(repr, self._ambiguous[attr]))))
        return self._attrs.get(attr)


def access(server_names, server, tool_names=None, tool=None):
    """How a cell reaches a server (and a tool of it) without the `mcp` in front:
    `files.read_text_file`, or `["files-writer"]["write file"]` where only [] does."""
    attr = server_names.attr_of(server)
    text = attr if attr is not None else f'[{server!r}]'
    if tool is not None:
        attr = tool_names.attr_of(tool)
        text += f'.{attr}' if attr is not None else f'[{tool!r}]'
    return text


# ---- Catalogues -----------------------------------------------------------------------------

class Catalogues:
    """The catalogues the tool functions are made from, per server, each kept for the
    ttlMs the broker gave with it: as long as the broker itself would serve it from its
    cache. mcp.refresh() forgets them. Only the running cell's main thread calls, so
    nothing here needs a lock."""

    def __init__(self, clock=time.monotonic):
        self._clock = clock
        self._entries = {}  # server -> (expiry, Catalogue)

    def get(self, rpcs, server, timeout=MCP_CATALOGUE_TIMEOUT):
        """The server's catalogue: the one kept, while it is fresh, else listed (waiting at
        most `timeout` seconds, already checked)."""
        catalogue = self.kept(server)
        if catalogue is not None:
            return catalogue
        now = self._clock()
        result = rpcs.call('tools', {'server': server, 'timeout': timeout}, timeout + MCP_REPLY_SLACK)
        return self._keep(rpcs, server, result, now)

    async def aget(self, rpcs, server, timeout=MCP_CATALOGUE_TIMEOUT):
        """get, awaitable."""
        catalogue = self.kept(server)
        if catalogue is not None:
            return catalogue
        now = self._clock()
        result = await rpcs.acall('tools', {'server': server, 'timeout': timeout}, timeout + MCP_REPLY_SLACK)
        return self._keep(rpcs, server, result, now)

    def kept(self, server):
        """The server's catalogue while the one kept is fresh, else None."""
        entry = self._entries.get(server)
        return entry[1] if entry is not None and self._clock() < entry[0] else None

    def _keep(self, rpcs, server, result, now):
        if type(result) is not dict or type(result.get('tools')) is not list:
            raise RuntimeError(MCP_MALFORMED.format('tools'))
        ttl = result.get('ttlMs')
        catalogue = Catalogue(rpcs, server, result['tools'])
        if type(ttl) in (int, float) and ttl > 0:
            self._entries[server] = (now + ttl / 1000, catalogue)
        else:
            self._entries.pop(server, None)
        return catalogue

    def clear(self):
        self._entries.clear()


CATALOGUES = Catalogues()


class Catalogue:
    """One server's tool definitions, and the functions made from them on first use."""

    def __init__(self, rpcs, server, definitions):
        self.rpcs, self.server = rpcs, server
        self.definitions = {}
        for definition in definitions:
            if isinstance(definition, dict) and isinstance(definition.get('name'), str):
                self.definitions.setdefault(definition['name'], definition)
        self.names = Names(self.definitions)
        self._functions = {}

    def function(self, tool, label):
        """The function of `tool` (a real name); `label` is how help and errors name it."""
        made = self._functions.get(tool)
        if made is None:
            made = self._functions[tool] = make_function(self.rpcs, self.server, self.definitions[tool], label)
        return made


# ---- Signatures -----------------------------------------------------------------------------

_PY_TYPES = {'string': str, 'integer': int, 'number': float, 'boolean': bool, 'array': list, 'object': dict, 'null': None}
_CHECKS = {
    'string': lambda v: isinstance(v, str),
    'integer': lambda v: isinstance(v, int) and not isinstance(v, bool),
    'number': lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    'boolean': lambda v: isinstance(v, bool),
    'array': lambda v: isinstance(v, (list, tuple)),
    'object': lambda v: isinstance(v, dict),
    'null': lambda v: v is None,
}
_CHECK_NAMES = {'string': 'str', 'integer': 'int', 'number': 'int or float', 'boolean': 'bool',
                'array': 'list', 'object': 'dict', 'null': 'None'}


def json_types(schema):
    """The JSON types a property admits, as a list, or None when its schema does not say
    (no `type`, or an anyOf/oneOf whose branch does not)."""
    if not isinstance(schema, dict):
        return None
    declared = schema.get('type')
    if isinstance(declared, str):
        declared = [declared]
    if isinstance(declared, list) and declared and all(t in _PY_TYPES for t in declared):
        return list(dict.fromkeys(declared))
    for key in ('anyOf', 'oneOf'):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            found = []
            for branch in branches:
                types = json_types(branch)
                if types is None:
                    return None
                found.extend(types)
            return list(dict.fromkeys(found))
    return None


def annotation(schema, inspect):
    """The annotation of a property: str, int, float, bool, list[...], dict, None, unions
    of them (`str | None`), Literal[...] for a short enum of strings or ints, or none at
    all when the schema gives no type."""
    types = json_types(schema)
    enum = schema.get('enum') if isinstance(schema, dict) else None
    if isinstance(enum, list) and 0 < len(enum) <= ENUM_LITERALS and all(type(v) in (str, int) for v in enum):
        import typing
        return typing.Literal[tuple(enum)]
    if types is None:
        return inspect.Parameter.empty
    hints = []
    for name in types:
        hint = _PY_TYPES[name]
        if name == 'array' and isinstance(schema, dict):
            item = json_types(schema.get('items'))
            if item is not None and len(item) == 1 and item[0] != 'array':
                hint = list[_PY_TYPES[item[0]]]
        hints.append(type(None) if hint is None else hint)
    result = hints[0]
    for hint in hints[1:]:
        result = result | hint
    return None if result is type(None) else result


class ToolSpec:
    """What the function of one tool checks: its parameters, from its inputSchema. A schema
    that cannot become a signature (a parameter named twice, unions nested past the
    recursion limit, ...) gives the generic one, `(**kwargs)`, and a note that says why:
    the arguments then go as they are, and the broker checks them against the schema. One
    such tool never keeps its server's other tools, mcp.help or mcp.search from working."""

    def __init__(self, definition, label):
        import inspect  # only when a cell first uses a tool function
        self.label = label
        self.note = None  # why the schema gave no signature of its own
        schema = definition.get('inputSchema')
        try:
            self._from_schema(schema if isinstance(schema, dict) else {}, inspect)
        except (ValueError, TypeError, RecursionError) as exc:
            note = f'{type(exc).__name__}: {exc}'
            self.note = note if len(note) <= TOOL_DOC_PARAM_CHARS else note[:TOOL_DOC_PARAM_CHARS - 1] + '…'
            self.props, self.required, self.open, self.keyword_only, self.var_keyword = {}, set(), True, {}, 'kwargs'
            self.signature = inspect.Signature([inspect.Parameter('kwargs', inspect.Parameter.VAR_KEYWORD)])

    def _from_schema(self, schema, inspect):
        props = schema.get('properties')
        self.props = {name: prop for name, prop in props.items() if isinstance(name, str)} if isinstance(props, dict) else {}
        required = schema.get('required')
        # Each name once: a schema may list one twice, which a signature cannot hold.
        required = list(dict.fromkeys(name for name in required if isinstance(name, str))) if isinstance(required, list) else []
        self.required = set(required)
        extra = schema.get('additionalProperties')
        self.open = extra is True or isinstance(extra, dict)
        self.keyword_only = {}  # properties that are not identifiers: through **kwargs
        self.var_keyword = 'kwargs'  # **kwargs, unless a property has that name
        while self.var_keyword in self.props:
            self.var_keyword = '_' + self.var_keyword
        params = []
        order = [name for name in self.props if name in self.required] + [name for name in required if name not in self.props]
        order += [name for name in self.props if name not in self.required]
        for name in order:
            prop = self.props.get(name)
            if not name.isidentifier() or keyword.iskeyword(name):
                self.keyword_only[name] = prop
                continue
            kind = inspect.Parameter.POSITIONAL_OR_KEYWORD if name in self.required else inspect.Parameter.KEYWORD_ONLY
            default = inspect.Parameter.empty
            if name not in self.required:
                default = prop.get('default') if isinstance(prop, dict) else None
            params.append(inspect.Parameter(name, kind, default=default, annotation=annotation(prop, inspect)))
        if self.keyword_only or self.open:
            params.append(inspect.Parameter(self.var_keyword, inspect.Parameter.VAR_KEYWORD))
        self.signature = inspect.Signature(params)

    def arguments(self, args, kwargs):
        """The arguments to send, or TypeError, as a Python function would raise it."""
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(MCP_TOOL_BAD_CALL.format(self.label, exc, self.label)) from None
        arguments = dict(bound.arguments)
        extra = arguments.pop(self.var_keyword, None) if self.keyword_only or self.open else None
        for name in extra or ():
            if name in arguments or (name not in self.keyword_only and not self.open):
                raise TypeError(MCP_TOOL_BAD_CALL.format(self.label, f'got an unexpected keyword argument {name!r}', self.label))
        arguments.update(extra or {})
        for name in self.keyword_only:
            if name in self.required and name not in arguments:
                what = f'missing a required argument: {name!r} (pass it as **{{{name!r}: ...}})'
                raise TypeError(MCP_TOOL_BAD_CALL.format(self.label, what, self.label))
        for name in list(arguments):
            value, types = arguments[name], json_types(self.props.get(name))
            if value is None and name not in self.required and (types is None or 'null' not in types):
                del arguments[name]  # None leaves an optional argument out, as its default says
                continue
            if types is not None and not any(_CHECKS[t](value) for t in types):
                expected = ' or '.join(dict.fromkeys(_CHECK_NAMES[t] for t in types))
                raise TypeError(MCP_TOOL_ARG_TYPE.format(self.label, name, expected, type(value).__name__))
        return arguments


def make_function(rpcs, server, definition, label):
    """The Python function of one tool: it checks its arguments, then calls the tool
    through the bridge's `call` op and returns its ToolResult. `.acall(...)` is the same
    call as a coroutine, for asyncio.gather."""
    from .bridge import call_params, to_envelope  # bridge imports this module
    spec = ToolSpec(definition, label)
    tool = definition['name']

    def tool_function(*args, **kwargs):
        params = call_params(server, tool, spec.arguments(args, kwargs), MCP_CALL_TIMEOUT, {})
        return to_envelope(rpcs.call('call', params, MCP_CALL_TIMEOUT + MCP_REPLY_SLACK))

    async def acall(*args, **kwargs):
        params = call_params(server, tool, spec.arguments(args, kwargs), MCP_CALL_TIMEOUT, {})
        return to_envelope(await rpcs.acall('call', params, MCP_CALL_TIMEOUT + MCP_REPLY_SLACK))

    name = label.rsplit('.', 1)[-1]
    for function in (tool_function, acall):
        function.__signature__ = spec.signature
        function.__module__ = 'mcp'
    tool_function.__name__, tool_function.__qualname__ = name, label
    acall.__name__, acall.__qualname__ = 'acall', label + '.acall'
    tool_function.__doc__ = tool_doc(server, definition, spec)
    acall.__doc__ = f'{label}(...) as a coroutine: await it, or run many with asyncio.gather.'
    tool_function.acall = acall
    tool_function.server, tool_function.tool = server, tool
    return tool_function


def first_sentence(text, limit):
    """The description's first sentence (up to '. ' or a line end), at most limit characters."""
    text = ' '.join(text.split()) if isinstance(text, str) else ''
    match = re.search(r'[.!?](\s|$)', text)
    sentence = text[:match.end()].strip() if match else text
    return sentence if len(sentence) <= limit else sentence[:limit - 1] + '…'


def tool_doc(server, definition, spec):
    import textwrap  # only when a cell first uses a tool function
    description = definition.get('description')
    lines = []
    if isinstance(description, str) and description.strip():
        for paragraph in description.strip().split('\n'):
            lines += textwrap.wrap(paragraph, DOC_WIDTH) or ['']
    else:
        lines.append('(no description)')
    lines.append('')
    if spec.props or spec.required:
        lines.append('Parameters:')
        named = [p.name for p in spec.signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
        for name in named + list(spec.keyword_only):
            prop = spec.props.get(name)
            types = json_types(prop)
            facts = ['/'.join(types) if types else 'any JSON', 'required' if name in spec.required else 'optional']
            if name in spec.keyword_only:
                facts.append(f'pass as **{{{name!r}: ...}}')
            about = prop.get('description') if isinstance(prop, dict) else None
            line = f'  {name} ({", ".join(facts)})' + (f': {" ".join(about.split())}' if isinstance(about, str) and about.strip() else '')
            lines.append(line if len(line) <= TOOL_DOC_PARAM_CHARS else line[:TOOL_DOC_PARAM_CHARS - 1] + '…')
        lines.append('')
    if spec.note is not None:
        lines += [MCP_TOOL_NO_SIGNATURE.format(spec.note), '']
    elif spec.open:
        lines += ['Other keyword arguments go to the tool as they are (its schema admits them).', '']
    lines += [
        f"MCP tool {definition['name']!r} of server {server!r}, called through the session's broker,",
        'which checks the arguments against the schema again. Returns a ToolResult (.text, .data,',
        '.images, .is_error); a tool error raises ToolError (its .result the ToolResult).',
        'An argument left out, or None for an optional one, is not sent. Calls wait 120 s;',
        'for another timeout use mcp.call(server, tool, timeout=..., arguments={...}).',
        'Await .acall(...) instead to run many calls at once with asyncio.gather.',
    ]
    return '\n'.join(lines)


# ---- Namespaces -----------------------------------------------------------------------------

class ServerTools:
    """`mcp.<server>`: the server's allowlisted tools as attributes (names normalised as
    python_name says) and as [real name]. dir() lists them; help(mcp.<server>.<tool>)
    shows one tool's signature and description."""

    def __init__(self, rpcs, server, label):
        self._rpcs, self._server, self._label = rpcs, server, label

    def _catalogue(self):
        return CATALOGUES.get(self._rpcs, self._server)

    def __getattr__(self, attr):
        if attr.startswith('__'):
            raise AttributeError(attr)
        catalogue = self._catalogue()
        tool = catalogue.names.resolve(attr)
        if tool is None:
            raise AttributeError(self._missing(attr))
        return catalogue.function(tool, f'{self._label}.{attr}')

    def __getitem__(self, tool):
        catalogue = self._catalogue()
        if tool not in catalogue.definitions:
            raise KeyError(self._missing(tool))
        attr = catalogue.names.attr_of(tool)
        return catalogue.function(tool, f'{self._label}.{attr}' if attr is not None else f'{self._label}[{tool!r}]')

    def __dir__(self):
        return self._catalogue().names.attrs()

    def __repr__(self):
        return f'<MCP server {self._server!r}: dir() lists its tools, mcp.help({self._server!r}) their signatures>'

    def _missing(self, tool):
        """Why the catalogue has no `tool`: the registry's allowedTools, when they do not
        admit it (the broker's mcp.explain says so, and where to grant it), else that the
        server lists no such tool."""
        from .bridge import ToolError  # bridge imports this module
        try:
            why = self._rpcs.call('explain', {'server': self._server, 'tool': tool}, MCP_OP_WAIT)
        except (ToolError, RuntimeError):  # not from the cell's own code path, say: the plain reason
            why = None
        if type(why) is dict and why.get('evidence') == 'allowed_tools' and type(why.get('reason')) is str:
            actions = why.get('actions')
            action = actions[0] if type(actions) is list and actions and type(actions[0]) is str else ''
            return MCP_TOOL_NOT_ALLOWED.format(self._label, tool, why['reason'], action).rstrip()
        return MCP_NO_SUCH_TOOL.format(self._label, tool, self._label, self._server)


def server_label(names, server):
    attr = names.attr_of(server)
    return f'mcp.{attr}' if attr is not None else f'mcp[{server!r}]'


def summary_line(server_names, catalogue, tool):
    """`server.tool(signature) — first sentence`, bounded."""
    function = catalogue.function(tool, server_label(server_names, catalogue.server) + access_suffix(catalogue, tool))
    head = access(server_names, catalogue.server, catalogue.names, tool) + str(function.__signature__)
    sentence = first_sentence(catalogue.definitions[tool].get('description'), SEARCH_SENTENCE_CHARS)
    line = f'{head} — {sentence}' if sentence else head
    return line if len(line) <= SEARCH_LINE_CHARS else line[:SEARCH_LINE_CHARS - 1] + '…'


def access_suffix(catalogue, tool):
    attr = catalogue.names.attr_of(tool)
    return f'.{attr}' if attr is not None else f'[{tool!r}]'


# ---- Search ---------------------------------------------------------------------------------

class ToolLines(list):
    """What mcp.search returns: a list of lines, shown one per line (print, a trailing
    value) rather than as a list's repr on one line."""

    def __repr__(self):
        return '\n'.join(str.__str__(line) if type(line) is str else '?' for line in list.__iter__(self))

    __str__ = __repr__

_SPLIT = re.compile(r'[^0-9a-z]+')
_CAMEL = re.compile(r'(?<=[a-z0-9])(?=[A-Z])')


def words(text):
    """Lower-case words of a name or a description: split at anything that is not a
    letter or a digit and between camelCase humps."""
    return [w for w in _SPLIT.split(_CAMEL.sub(' ', text).lower()) if w]


def score(terms, server, tool, description):
    """(terms matched, points) of one tool: a term that is a word of the tool's name counts
    most, then one that starts such a word, then a word of the server's name, then a word
    of the description, then a part of one."""
    name_words, server_words = words(tool), words(server)
    desc_words = words(description) if isinstance(description, str) else []
    matched = points = 0
    for term in terms:
        best = 0
        if term in name_words:
            best = 10
        elif any(w.startswith(term) for w in name_words):
            best = 6
        elif term in server_words:
            best = 4
        elif term in desc_words:
            best = 3
        elif any(term in w for w in desc_words + name_words):
            best = 1
        matched += best > 0
        points += best
    return matched, points


def search(bridge, query, limit):
    """mcp.search: the best-matching tools of every server the broker grants, as lines."""
    from .bridge import ToolError  # bridge imports this module
    if not isinstance(query, str):
        raise TypeError(MCP_BAD_SEARCH_QUERY.format(type(query).__name__))
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= SEARCH_LIMIT_MAX:
        raise ValueError(MCP_BAD_SEARCH_LIMIT)
    terms = list(dict.fromkeys(words(query)))
    server_names = bridge._server_names()
    ranked, unavailable = [], []
    for server in server_names.real:
        try:
            catalogue = CATALOGUES.get(bridge._rpcs, server)
        except ToolError as exc:  # that server is down or refuses: the others are still searched
            unavailable.append(MCP_SEARCH_UNAVAILABLE.format(server, first_sentence(str(exc), SEARCH_SENTENCE_CHARS)))
            continue
        for tool, definition in catalogue.definitions.items():
            matched, points = score(terms, server, tool, definition.get('description'))
            if matched or not terms:
                # Among equals, the tool whose name is the fewest words is the closest match.
                ranked.append((-matched, -points, len(words(tool)), server, tool, catalogue))
    ranked.sort(key=lambda r: r[:5])
    lines = [summary_line(server_names, r[5], r[4]) for r in ranked[:limit]]
    if len(ranked) > limit:
        lines.append(MCP_SEARCH_MORE.format(len(ranked) - limit))
    if not ranked:
        lines.append(MCP_SEARCH_NONE.format(query, len(server_names.real)))
    return ToolLines(lines + unavailable)


def server_help(bridge, server, timeout):
    """mcp.help(server): one line per tool, as search shows them. The broker's listing
    comes first, so an unknown server fails with its message."""
    catalogue = CATALOGUES.get(bridge._rpcs, server, timeout)
    server_names = bridge._server_names()
    if not catalogue.definitions:
        return [MCP_HELP_NO_TOOLS.format(server)]
    return [summary_line(server_names, catalogue, tool) for tool in sorted(catalogue.definitions)]


def tool_help(bridge, server, tool, timeout):
    """mcp.help(server, tool): the tool function's signature and docstring, as help() shows it."""
    catalogue = CATALOGUES.get(bridge._rpcs, server, timeout)
    if tool not in catalogue.definitions:
        return None
    server_names = bridge._server_names()
    function = catalogue.function(tool, server_label(server_names, server) + access_suffix(catalogue, tool))
    doc = '\n'.join('    ' + line if line else '' for line in function.__doc__.split('\n'))
    return f'{function.__qualname__}{function.__signature__}\n{doc}'


# ---- The preview of `mcp` -------------------------------------------------------------------

async def alearn(bridge):
    """List the broker's servers and their tools (at most MCP_PREVIEW_WAIT seconds for
    the listings in all), so that the preview of `mcp` itself names them: the worker runs
    it while the cell that ends in `mcp` is still active."""
    from .bridge import ToolError, _field  # bridge imports this module
    try:
        bridge._names = Names(_field('servers', await bridge._rpcs.acall('servers', {}, MCP_OP_WAIT), 'servers'))
    except (ToolError, RuntimeError, ValueError) as exc:
        bridge._preview_error = first_sentence(str(exc), SEARCH_SENTENCE_CHARS)
        return
    pending = {}
    for server in bridge._names.real[:MCP_PREVIEW_SERVERS]:
        if CATALOGUES.kept(server) is None:
            pending[server] = asyncio.ensure_future(CATALOGUES.aget(bridge._rpcs, server, MCP_PREVIEW_WAIT))
    if pending:
        await asyncio.wait(pending.values(), timeout=MCP_PREVIEW_WAIT)
    bridge._unlisted = {}
    for server, task in pending.items():
        if not task.done():
            task.cancel()
            bridge._unlisted[server] = f'no answer within {MCP_PREVIEW_WAIT:g} s'
        elif task.exception() is not None:
            bridge._unlisted[server] = first_sentence(str(task.exception()), SEARCH_SENTENCE_CHARS)


def bridge_preview(bridge):
    """`mcp` as a trailing value: its servers and how many tools each offers cells, from
    what alearn listed (no rpc: the preview runs after the cell's calls are over)."""
    error = bridge._preview_error
    if error is not None:
        return MCP_PREVIEW_FAILED.format(error)
    names = bridge._names
    if names is None:
        return MCP_REPR
    if not names.real:
        return MCP_PREVIEW_NONE
    unlisted = bridge._unlisted
    shown = []
    for server in names.real[:MCP_PREVIEW_SERVERS]:
        label = server_label(names, server)
        catalogue = CATALOGUES.kept(server)
        if catalogue is not None:
            n = len(catalogue.definitions)
            shown.append(MCP_PREVIEW_TOOLS.format(label, n, '' if n == 1 else 's'))
        else:
            shown.append(MCP_PREVIEW_UNLISTED.format(label, unlisted.get(server, 'mcp.help(' + repr(server) + ') lists them')))
    if len(names.real) > MCP_PREVIEW_SERVERS:
        shown.append(MCP_PREVIEW_MORE.format(len(names.real) - MCP_PREVIEW_SERVERS))
    count = len(names.real)
    return MCP_PREVIEW.format(f'{count} server{"" if count == 1 else "s"}', ', '.join(shown))
