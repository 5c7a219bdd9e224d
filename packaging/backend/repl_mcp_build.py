"""PEP 517 build backend for the repl-mcp source distribution (standard library only).

repl-mcp is one static Go binary shipped as a script inside a binary-only wheel. This
backend runs inside an unpacked sdist (made by `make sdist`, which writes PKG-INFO and
points pyproject.toml's [build-system] here). build_wheel compiles the binary with the
Go toolchain of the installing machine (CGO_ENABLED=0, -trimpath, the version set with
-ldflags -X main.version=...) and writes the same wheel that internal/wheel writes for a
release: the binary as repl_mcp-<v>.data/scripts/repl-mcp with zip mode 0755, and a
dist-info with METADATA (PKG-INFO verbatim: internal/wheel made both), WHEEL and RECORD
(sha256 and size of every file). Without `go` on PATH, or on a host no release wheel
supports, the build stops with one line on stderr and exit status 1.

It does not build from a git checkout (there is no PKG-INFO there; use `make wheel`),
and it never downloads anything itself: `go build` may fetch modules through GOPROXY.
"""

import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile

DIST = "repl_mcp"  # the distribution name as it appears in file names
SCRIPT = "repl-mcp"  # the installed command

GO_MISSING = (
    "repl-mcp: building from source needs the Go toolchain (go 1.26+) on PATH; "
    "install it or use a release wheel"
)

# The wheel platform tag for each GOOS/GOARCH, as internal/wheel's HostPlatform maps
# them. The binary is static, so one Linux wheel serves glibc and musl alike.
PLATFORMS = {
    ("linux", "amd64"): "manylinux_2_17_x86_64.musllinux_1_1_x86_64",
    ("linux", "arm64"): "manylinux_2_17_aarch64.musllinux_1_1_aarch64",
    ("darwin", "amd64"): "macosx_12_0_x86_64",
    ("darwin", "arm64"): "macosx_12_0_arm64",
}

# Zip entry times, fixed so a rebuild of the same binary gives the same bytes; the
# earliest time a zip can hold.
ZIP_TIME = (1980, 1, 1, 0, 0, 0)

# WHEEL's Generator line; the rest of WHEEL follows internal/wheel.
GENERATOR = "repl-mcp-sdist-backend"


class _Failed(SystemExit):
    """Ends the build hook's process with status 1 after one line on stderr.

    A SystemExit, not an ordinary exception, so the hook runner prints no traceback and
    the installer shows the one line.
    """


def _fail(line):
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
    raise _Failed(1)


# ---- the PEP 517 hooks ---------------------------------------------------------------


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    source = _Source(os.getcwd())
    dist_info = os.path.join(metadata_directory, source.dist_info)
    os.makedirs(dist_info, exist_ok=True)
    with open(os.path.join(dist_info, "METADATA"), "wb") as f:
        f.write(source.metadata)
    return source.dist_info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    source = _Source(os.getcwd())
    go = shutil.which("go")
    if go is None:
        _fail(GO_MISSING)
    platform = _platform(go)
    with tempfile.TemporaryDirectory(prefix="repl-mcp-build-") as tmp:
        binary = os.path.join(tmp, SCRIPT)
        _go_build(go, source, binary)
        with open(binary, "rb") as f:
            data = f.read()
    name = "%s-%s-py3-none-%s.whl" % (DIST, source.version, platform)
    _write_wheel(os.path.join(wheel_directory, name), source, platform, data)
    return name


def build_sdist(sdist_directory, config_settings=None):
    """Repacks the unpacked sdist this backend runs in, file for file."""
    source = _Source(os.getcwd())
    base = "%s-%s" % (DIST, source.version)
    name = base + ".tar.gz"
    paths = []
    for top, dirs, files in os.walk(source.root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for f in sorted(files):
            paths.append(os.path.relpath(os.path.join(top, f), source.root))
    final = os.path.join(sdist_directory, name)
    tmp = final + ".tmp"
    with tarfile.open(tmp, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for rel in sorted(paths):
            info = tar.gettarinfo(os.path.join(source.root, rel), arcname=base + "/" + rel.replace(os.sep, "/"))
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mode = 0o644
            with open(os.path.join(source.root, rel), "rb") as f:
                tar.addfile(info, f)
    os.replace(tmp, final)
    return name


# ---- the unpacked sdist --------------------------------------------------------------


class _Source:
    """The unpacked sdist: its PKG-INFO (the wheel's METADATA) and its versions."""

    def __init__(self, root):
        self.root = root
        try:
            with open(os.path.join(root, "PKG-INFO"), "rb") as f:
                self.metadata = f.read()
        except FileNotFoundError:
            _fail(
                "repl-mcp: this backend builds only from a source distribution (made by "
                "`make sdist`, with PKG-INFO); in a checkout use `make build` or `make wheel`"
            )
        # The PEP 440 version, as in the file names; the binary reports the version
        # written in pyproject.toml, as `make build` sets it.
        self.version = _header(self.metadata, "Version")
        self.binary_version = _pyproject_version(os.path.join(root, "pyproject.toml"))
        self.dist_info = "%s-%s.dist-info" % (DIST, self.version)
        self.data = "%s-%s.data" % (DIST, self.version)


def _header(metadata, field):
    text = metadata.decode("utf-8")
    for line in text.splitlines():
        if line == "":
            break  # the description starts
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() == field.lower():
            return value.strip()
    _fail("repl-mcp: PKG-INFO has no %s field; rebuild the sdist with `make sdist`" % field)


_TABLE = re.compile(r"^\[\s*([^\]]+?)\s*\]\s*(#.*)?$")
_VERSION = re.compile(r'^version\s*=\s*"([^"\\]+)"\s*(#.*)?$')


def _pyproject_version(path):
    """[project].version from pyproject.toml, read without a TOML parser (tomllib is
    3.11+): `make sdist` checks the line has this plain form."""
    table = None
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            m = _TABLE.match(line)
            if m:
                table = m.group(1)
                continue
            if table == "project":
                m = _VERSION.match(line)
                if m:
                    return m.group(1)
    _fail('repl-mcp: %s has no [project] version = "..." line' % path)


# ---- building ------------------------------------------------------------------------


def _go_env(go, *names):
    try:
        out = subprocess.run(
            [go, "env"] + list(names), check=True, capture_output=True, text=True
        ).stdout
    except subprocess.CalledProcessError as e:
        sys.stderr.write(e.stderr)
        _fail("repl-mcp: `go env` failed (exit %d); is the Go toolchain installed correctly?" % e.returncode)
    return out.split()


def _platform(go):
    goos, goarch = _go_env(go, "GOOS", "GOARCH")
    platform = PLATFORMS.get((goos, goarch))
    if platform is None:
        supported = ", ".join("%s/%s" % k for k in sorted(PLATFORMS))
        _fail("repl-mcp: %s/%s is not supported (only %s)" % (goos, goarch, supported))
    return platform


def _go_build(go, source, out):
    env = dict(os.environ, CGO_ENABLED="0")
    cmd = [
        go, "build", "-trimpath",
        "-ldflags", "-s -w -X main.version=" + source.binary_version,
        "-o", out, ".",
    ]
    result = subprocess.run(cmd, cwd=source.root, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        sys.stderr.write(result.stdout + result.stderr)
        _fail("repl-mcp: `go build` failed (exit %d); its output is above" % result.returncode)


# ---- the wheel -----------------------------------------------------------------------


def _wheel_file(platform):
    lines = ["Wheel-Version: 1.0", "Generator: " + GENERATOR, "Root-Is-Purelib: false"]
    for tag in platform.split("."):
        lines.append("Tag: py3-none-" + tag)
    return ("\n".join(lines) + "\n").encode("utf-8")


def _record_hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode("ascii")


def _write_wheel(path, source, platform, binary):
    entries = [
        (source.data + "/scripts/" + SCRIPT, binary, 0o755),
        (source.dist_info + "/METADATA", source.metadata, 0o644),
        (source.dist_info + "/WHEEL", _wheel_file(platform), 0o644),
    ]
    record = "".join("%s,%s,%d\n" % (n, _record_hash(d), len(d)) for n, d, _ in entries)
    record += source.dist_info + "/RECORD,,\n"
    entries.append((source.dist_info + "/RECORD", record.encode("utf-8"), 0o644))

    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w") as zf:
        for name, data, mode in entries:
            info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            info.create_system = 3  # Unix, so installers honour the mode bits
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    os.replace(tmp, path)
