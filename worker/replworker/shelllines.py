"""A cell's shell lines, where IPython takes them (docs/contract.md §7.1): `!cmd`,
`TARGET = !cmd` and `%pip ARGS` on a logical line of their own, at the top level of a cell
or inside its blocks, become calls of the worker's helper in place, so the rest of the cell
is Python with its lines numbered as written. Any other magic on such a line (`%timeit`,
`%%time`, `!!cmd`) becomes a call that raises, at its line, a one-line error naming the
forms that work: the lines before it run, as before any error. Saved files have none of
this."""

import io
import tokenize

from .children import pip_command, run_line
from .messages import SHELL_FORM_HINT, SHELL_FORM_UNSUPPORTED

HELPER = '__repl_shell__'  # the helper's name in the namespace, reserved like the others

# How a shell line runs (the helper's second argument).
RUN, PIP, CAPTURE, UNSUPPORTED = range(4)

_NOT_A_TARGET_END = frozenset('=!<>')  # `==`, `!=`, `<=`, `>=` are comparisons, not `=`
_SKIPPED = frozenset({tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING})


def shell(text, form):
    """The helper a shell line calls: run `text` as the line's form says. `x = !cmd`
    returns the list of the command's stdout lines; the others return None."""
    if form == RUN:
        return run_line(text)
    if form == PIP:
        return run_line(text, pip=True)
    if form == CAPTURE:
        return run_line(text, capture=True)
    raise RuntimeError(SHELL_FORM_UNSUPPORTED.format(text))


def is_shell_call(statement):
    """Whether a statement of the parsed cell is a shell line's bare call, which is never
    the cell's trailing value."""
    value = getattr(statement, 'value', None)
    func = getattr(value, 'func', None)
    return getattr(func, 'id', None) == HELPER


def _shell_form(text):
    """(form, the helper's text) of what follows a line's indentation or its `TARGET =`:
    `!cmd`, `%pip ARGS`, or another magic (unsupported); None for anything else."""
    if text.startswith('!') and not text.startswith('!='):
        command = text[1:].strip()
        return (UNSUPPORTED, text.rstrip()) if command.startswith('!') else (RUN, command)
    if text == '%pip' or text.startswith(('%pip ', '%pip\t')):
        return PIP, pip_command(text[4:].strip())
    if text.startswith('%') and text[1:2] not in ('', ' ', '=', '\t'):
        return UNSUPPORTED, text.rstrip()
    return None


def _candidate(line):
    """(indentation, assignment target or None, form, helper text) of a line that looks
    like a shell line, or None. A look is all it is: the line may sit inside a string or a
    bracket, which _logical_starts decides."""
    stripped = line.lstrip(' \t')
    if not stripped or stripped[0] not in '!%' and '=' not in stripped:
        return None
    indent = line[:len(line) - len(stripped)]
    found = _shell_form(stripped)
    if found is not None:
        return (indent, None, *found)
    at = stripped.find('=')
    if at <= 0 or stripped[at - 1] in _NOT_A_TARGET_END or stripped[at + 1:at + 2] == '=':
        return None
    found = _shell_form(stripped[at + 1:].lstrip(' \t'))
    if found is None or found[0] == PIP:  # `x = %pip ...` is no form of its own
        found = None if found is None else (UNSUPPORTED, stripped[at + 1:].strip())
    if found is None:
        return None
    form, text = found
    return indent, stripped[:at].rstrip(' \t'), CAPTURE if form == RUN else form, text


def _logical_starts(lines, candidates):
    """The candidates' line numbers (0-based) that begin a logical line: not inside a
    string, a bracket or a backslash continuation. Each candidate is masked as a bare name
    at its indentation, which cannot end or open a string or a bracket, and the source is
    tokenized; where tokenizing stops (a real error the parse will report), the lines
    after are not taken."""
    masked = list(lines)
    for index, (indent, *_) in candidates.items():
        masked[index] = indent + HELPER
    starts, at_start = set(), True
    tokens = tokenize.generate_tokens(io.StringIO('\n'.join(masked) + '\n').readline)
    try:
        for token in tokens:
            if token.type in _SKIPPED:
                continue
            if token.type == tokenize.NEWLINE:
                at_start = True
                continue
            if at_start and token.type == tokenize.NAME and token.string == HELPER:
                starts.add(token.start[0] - 1)
            at_start = False
    except (tokenize.TokenError, SyntaxError):  # IndentationError is one
        pass
    return starts


def transform(source):
    """The cell's source with its shell lines made calls of the helper, line for line.
    Returns (source, {line number: the original line}) for the lines changed; the source as
    it was when it has none."""
    if '!' not in source and '%' not in source:
        return source, {}
    lines = source.split('\n')
    candidates = {}
    for index, line in enumerate(lines):
        found = _candidate(line)
        if found is not None:
            candidates[index] = found
    if not candidates:
        return source, {}
    originals = {}
    for index in _logical_starts(lines, candidates):
        indent, target, form, text = candidates[index]
        call = f'{HELPER}({text!r}, {form})'
        originals[index + 1] = lines[index]
        lines[index] = indent + (call if target is None else f'{target} = {call}')
    return '\n'.join(lines), originals


def explain(exc, source, originals):
    """A SyntaxError of a transformed cell, made to read as the cell was written: the
    original text of a line that was changed, and, where the error points at a `!` or a
    `%` that is no line of its own (`print(1); !ls`), a note naming the forms that work."""
    lineno, offset = getattr(exc, 'lineno', None), getattr(exc, 'offset', None)
    if not isinstance(lineno, int):
        return
    if lineno in originals:
        exc.text = originals[lineno]
        exc.offset = 1
        return
    lines = source.split('\n')
    if not 0 < lineno <= len(lines) or not isinstance(offset, int):
        return
    line = lines[lineno - 1]
    if 0 < offset <= len(line) and line[offset - 1] in '!%' and line[offset - 1:offset + 1] != '!=':
        notes = getattr(exc, '__notes__', None)
        exc.__notes__ = [*(notes if isinstance(notes, list) else []), SHELL_FORM_HINT]
