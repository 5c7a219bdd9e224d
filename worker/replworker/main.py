"""The worker's start: the protocol channel, the worker, its ready frame, and then commands
until the server goes. bootstrap.py calls run() once every module is loaded."""

import os
import sys
import traceback

from .bridge import RPCS
from .cells import Worker
from .channel import PROTOCOL_VERSION, Channel
from .children import CHILDREN, exit_now
from .display import IMAGES, install_matplotlib_hook
from .limits import unset_variable


def python_version():
    """platform.python_version() for CPython, without importing platform at every start:
    the version token of sys.version, with a patch level added when it has none."""
    version = sys.version.split()[0]
    parts = version.split('.')
    return '.'.join(parts + ['0']) if len(parts) == 2 else version


def activate():
    """Make the worker's environment the session interpreter's, as its `activate` script
    would: its bin directory first on PATH (so `!pip`, `!python`, `sh("python ...")` and
    `subprocess.run(["python", ...])` find this interpreter and its tools) and, for a venv,
    VIRTUAL_ENV naming it, with PYTHONHOME unset; an interpreter that is no venv unsets a
    VIRTUAL_ENV inherited from the server's environment, which would name another one (uv
    installs there). Returns (the bin directory, the venv or None) for the ready frame."""
    executable = sys.executable
    if not executable:  # an embedding that cannot say where it is: leave PATH alone
        return None, None
    bin_dir = os.path.dirname(executable)
    path = os.environ.get('PATH', '')
    if path.split(os.pathsep, 1)[0] != bin_dir:
        os.environ['PATH'] = bin_dir + os.pathsep + path if path else bin_dir
    venv = sys.prefix if sys.prefix != sys.base_prefix else None
    if venv is not None:
        os.environ['VIRTUAL_ENV'] = venv
        os.environ.pop('PYTHONHOME', None)
    else:
        os.environ.pop('VIRTUAL_ENV', None)
    return bin_dir, venv


def run(path0):
    """Serve until EOF or shutdown. `path0` is the project directory the bootstrap took off
    sys.path while the worker's modules and the standard library loaded (a project's
    queue.py must not replace queue); cells get it back first, as in a Python REPL."""
    try:
        _serve(path0)
    except BaseException:
        # A worker bug must surface as a crash the server can see, not a half-working
        # worker (or one that user threads keep alive).
        traceback.print_exc(file=sys.__stderr__)
        exit_now(1)


def _serve(path0):
    unset_variable()
    channel = Channel(RPCS.resolve)
    worker = Worker(channel)
    CHILDREN.start(channel)
    RPCS.start(channel)
    IMAGES.start(channel)
    install_matplotlib_hook()
    sys.argv = ['']
    bin_dir, venv = activate()
    # What the interpreter's start read (.pth files, site-packages): a spare worker
    # that waited is not handed out once one of these has changed since it started.
    site_dirs = [path for path in sys.path if path and os.path.isdir(path)]
    # And what it would have read, had it been there: a sys.path entry that does not
    # exist, the user site-packages (pip install --user) where the start adds it.
    site_absent = [path for path in sys.path if path and not os.path.exists(path)]
    site = sys.modules.get('site')
    user_site = getattr(site, 'USER_SITE', None) if getattr(site, 'ENABLE_USER_SITE', False) else None
    if isinstance(user_site, str) and user_site not in sys.path and not os.path.exists(user_site):
        site_absent.append(user_site)
    if path0 is not None:
        sys.path.insert(0, path0)
    channel.send({
        'type': 'ready',
        'protocol': PROTOCOL_VERSION,
        'pid': os.getpid(),
        'python_version': python_version(),
        'python_executable': sys.executable,
        'site_dirs': site_dirs,
        'site_absent': site_absent,
        'path_head': bin_dir,
        'virtual_env': venv,
    })
    channel.start_reader()
    worker.serve()
