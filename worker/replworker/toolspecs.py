"""A downstream tool's inputSchema as what a Python function has (docs/contract.md §7.5):
its signature, the checks a call's arguments pass before anything is sent, and its
docstring. toolfuncs.py makes the functions from these."""

import keyword
import re

from .limits import DOC_WIDTH, ENUM_LITERALS, TOOL_DOC_PARAM_CHARS
from .messages import MCP_TOOL_ARG_TYPE, MCP_TOOL_BAD_CALL, MCP_TOOL_NO_SIGNATURE


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
