"""The `mcp` object of every cell and downstream MCP tools as Python functions
(docs/contract.md §7.5): `mcp.<server>.<tool>(...)` with a signature and a docstring made
from the tool's inputSchema (toolspecs.py), arguments checked in the cell before anything
is sent, the catalogues they come from kept as long as the broker says they stay fresh,
mcp.search and mcp.help over them, and the preview of `mcp` itself. Every call goes
through the bridge's transport (bridge.py).

The broker still checks every call against the schema: what is checked here is what a
Python function would check (names, required arguments, JSON types), so that a typo fails
at once, with the signature to fix it by."""

import asyncio
import keyword
import re
import time

from .bridge import ToolError
from .limits import (
    MCP_CALL_TIMEOUT, MCP_CATALOGUE_TIMEOUT, MCP_OP_WAIT, MCP_PREVIEW_SERVERS, MCP_PREVIEW_WAIT, MCP_REPLY_SLACK,
    MCP_TIMEOUT_MAX, MCP_TIMEOUT_MIN, SEARCH_LIMIT_MAX, SEARCH_LINE_CHARS, SEARCH_SENTENCE_CHARS,
)
from .messages import (
    MCP_AMBIGUOUS_NAME, MCP_ARGUMENTS_NOT_DICT, MCP_BAD_SEARCH_LIMIT, MCP_BAD_SEARCH_QUERY, MCP_BAD_TIMEOUT,
    MCP_BOTH_ARGUMENTS, MCP_HELP_HINT, MCP_HELP_NO_SERVERS, MCP_HELP_NO_TOOLS, MCP_HELP_SERVERS, MCP_MALFORMED,
    MCP_NO_SUCH_SERVER, MCP_NO_SUCH_TOOL, MCP_PREVIEW, MCP_PREVIEW_FAILED, MCP_PREVIEW_MORE, MCP_PREVIEW_NONE,
    MCP_PREVIEW_TOOLS, MCP_PREVIEW_UNLISTED, MCP_REPR, MCP_SEARCH_MORE, MCP_SEARCH_NONE, MCP_SEARCH_UNAVAILABLE,
    MCP_TOOL_NOT_ALLOWED, MCP_UNKNOWN_TOOL,
)
from .toolresult import envelope_text, to_envelope
from .toolspecs import ToolSpec, first_sentence, tool_doc

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


# ---- Functions -----------------------------------------------------------------------------

def make_function(rpcs, server, definition, label):
    """The Python function of one tool: it checks its arguments, then calls the tool
    through the bridge's `call` op and returns its ToolResult. `.acall(...)` is the same
    call as a coroutine, for asyncio.gather."""
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


# ---- Calls ---------------------------------------------------------------------------------

def check_timeout(timeout):
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise ValueError(MCP_BAD_TIMEOUT)
    if not MCP_TIMEOUT_MIN <= timeout <= MCP_TIMEOUT_MAX:  # NaN fails too
        raise ValueError(MCP_BAD_TIMEOUT)


def call_params(server, tool, arguments, timeout, kwargs):
    """The `call` op's params; every check comes before the rpc is sent."""
    if arguments is not None and kwargs:
        raise ValueError(MCP_BOTH_ARGUMENTS)
    if arguments is not None and not isinstance(arguments, dict):
        raise TypeError(MCP_ARGUMENTS_NOT_DICT)
    check_timeout(timeout)
    return {'server': server, 'tool': tool, 'arguments': kwargs if arguments is None else arguments, 'timeout': timeout}


def _field(op, result, key):
    if type(result) is not dict or key not in result:
        raise ToolError(MCP_MALFORMED.format(op))
    return result[key]


# ---- Namespaces# ---- Namespaces -----------------------------------------------------------------------------

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


# ---- `mcp` ------------------------------------------------------------------------------------

class McpBridge:
    """`mcp`: the session's downstream MCP servers, reached through the repl-mcp server. Calls
    are legal only from the running cell's own code path (not from threads or later cells);
    use the async forms for concurrency. Failures raise ToolError.

    mcp.<server>.<tool>(...) -> ToolResult: each allowlisted tool as a Python function with
        the signature of its inputSchema (help() shows it; wrong arguments raise TypeError
        before anything is sent); .acall(...) awaits the same call. Names that are not
        identifiers: mcp["files-writer"]["write file"], or normalised (mcp.files_writer).
    search(query, limit=10) -> lines `server.tool(signature) — first sentence`, best first
    help() prints the servers; help(server) its tools' signatures; help(server, tool) one
    call(server, tool, *, arguments=None, timeout=120.0, **kwargs) -> ToolResult, the full
        CallToolResult envelope (a dict with .text, .data, .images, .is_error); tool
        arguments come from arguments={...} or keywords, not both (use arguments= for tool
        parameters named timeout, server, tool or arguments)
    acall(...) -> the same, awaitable; cancelling the task cancels only that call
    servers(), list_tools(server, *, timeout=30.0) (JSON schemas), refresh(), journal(),
    ajournal(), explain(server, tool=None), text(envelope)"""

    text = staticmethod(envelope_text)

    def __init__(self, rpcs):
        self._rpcs = rpcs
        self._names = None  # the broker's server names, asked once per cell (a bridge lives one)
        # What the preview of `mcp` itself says (alearn): why the servers could
        # not be listed, and why some server's tools were not.
        self._preview_error = None
        self._unlisted = {}

    def __repr__(self):
        return MCP_REPR

    def _server_names(self):
        if self._names is None:
            self._names = Names(self.servers())
        return self._names

    def __getattr__(self, attr):
        if attr.startswith('__'):
            raise AttributeError(attr)
        names = self._server_names()
        server = names.resolve(attr)
        if server is None:
            raise AttributeError(MCP_NO_SUCH_SERVER.format(attr))
        return ServerTools(self._rpcs, server, server_label(names, server))

    def __getitem__(self, server):
        names = self._server_names()
        if server not in names.real:
            raise KeyError(MCP_NO_SUCH_SERVER.format(server))
        return ServerTools(self._rpcs, server, server_label(names, server))

    def __dir__(self):
        members = [name for name in type(self).__dict__ if not name.startswith('_')]
        return sorted(set(members) | set(self._server_names().attrs()))

    def call(self, server, tool, *, arguments=None, timeout=MCP_CALL_TIMEOUT, **kwargs):
        params = call_params(server, tool, arguments, timeout, kwargs)
        return to_envelope(self._rpcs.call('call', params, timeout + MCP_REPLY_SLACK))

    async def acall(self, server, tool, *, arguments=None, timeout=MCP_CALL_TIMEOUT, **kwargs):
        params = call_params(server, tool, arguments, timeout, kwargs)
        return to_envelope(await self._rpcs.acall('call', params, timeout + MCP_REPLY_SLACK))

    def servers(self):
        return _field('servers', self._rpcs.call('servers', {}, MCP_OP_WAIT), 'servers')

    def list_tools(self, server, *, timeout=MCP_CATALOGUE_TIMEOUT):
        check_timeout(timeout)
        result = self._rpcs.call('tools', {'server': server, 'timeout': timeout}, timeout + MCP_REPLY_SLACK)
        return _field('tools', result, 'tools')

    def search(self, query, limit=10):
        """The tools of every server whose names or descriptions match the words of query,
        best first, as lines `server.tool(signature) — first sentence` (at most limit, 1 to
        50; a last line counts the rest). An empty query lists every tool."""
        return search(self, query, limit)

    def help(self, server=None, tool=None, *, timeout=MCP_CATALOGUE_TIMEOUT):
        """Prints, as Python: no server, the servers; a server, one line per tool with its
        signature; a tool too, its signature and whole description. At most one listing
        (waiting at most timeout seconds) and one servers rpc."""
        if server is None:
            names = self._server_names()
            lines = [MCP_HELP_SERVERS] + [f'  {server_label(names, s)}' for s in names.real] if names.real else [MCP_HELP_NO_SERVERS]
            print('\n'.join(lines + [MCP_HELP_HINT]))
            return
        check_timeout(timeout)
        if tool is None:
            print('\n'.join(server_help(self, server, timeout)))
            return
        text = tool_help(self, server, tool, timeout)
        if text is None:
            raise ValueError(MCP_UNKNOWN_TOOL.format(tool))
        print(text)

    def refresh(self):
        self._names = None
        CATALOGUES.clear()
        return self._rpcs.call('refresh', {}, MCP_OP_WAIT)

    def journal(self):
        return _field('journal', self._rpcs.call('journal', {}, MCP_OP_WAIT), 'records')

    async def ajournal(self):
        return _field('journal', await self._rpcs.acall('journal', {}, MCP_OP_WAIT), 'records')

    def explain(self, server, tool=None):
        return self._rpcs.call('explain', {'server': server, 'tool': tool}, MCP_OP_WAIT)
