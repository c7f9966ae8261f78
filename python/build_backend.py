"""A PEP 517 build backend for the dolsot package, standard library only.

It writes a pure-Python wheel (dolsot/*.py plus its .dist-info) and an
sdist, which is all pip needs for `pip install ./python`. The name and
version come from pyproject.toml.
"""

import base64
import hashlib
import io
import os
import tarfile
import tomllib
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))


def _project():
    with open(os.path.join(HERE, "pyproject.toml"), "rb") as f:
        p = tomllib.load(f)["project"]
    return p["name"], p["version"], p.get("description", ""), p.get("requires-python", "")


def _sources():
    pkg = os.path.join(HERE, "dolsot")
    return sorted(n for n in os.listdir(pkg) if n.endswith(".py"))


def _metadata():
    name, version, summary, requires = _project()
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}",
             f"Summary: {summary}"]
    if requires:
        lines.append(f"Requires-Python: {requires}")
    return "\n".join(lines) + "\n"


def _digest(data):
    h = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + h.decode()


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name, version, _, _ = _project()
    info = f"{name}-{version}.dist-info"
    files = [(f"dolsot/{n}", open(os.path.join(HERE, "dolsot", n), "rb").read())
             for n in _sources()]
    files.append((f"{info}/METADATA", _metadata().encode()))
    files.append((f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: dolsot "
                  b"build_backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n"))
    record = "".join(f"{p},{_digest(d)},{len(d)}\n" for p, d in files)
    record += f"{info}/RECORD,,\n"
    files.append((f"{info}/RECORD", record.encode()))
    wheel = f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w",
                         zipfile.ZIP_DEFLATED) as z:
        for p, d in files:
            z.writestr(p, d)
    return wheel


def build_sdist(sdist_directory, config_settings=None):
    name, version, _, _ = _project()
    base = f"{name}-{version}"
    out = os.path.join(sdist_directory, f"{base}.tar.gz")
    with tarfile.open(out, "w:gz") as t:
        for rel in ["pyproject.toml", "build_backend.py"] + \
                   [f"dolsot/{n}" for n in _sources()]:
            t.add(os.path.join(HERE, rel), arcname=f"{base}/{rel}")
        pkg_info = _metadata().encode()
        ti = tarfile.TarInfo(f"{base}/PKG-INFO")
        ti.size = len(pkg_info)
        t.addfile(ti, io.BytesIO(pkg_info))
    return os.path.basename(out)
