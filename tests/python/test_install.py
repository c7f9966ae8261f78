"""The package installs without the network: `pip install ./python` (the
standard-library build backend) into a virtualenv, and `make
install-python` into a staging directory; both copies work from outside
the tree. Run once, in the cold pass (installing does not depend on the
call path)."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import support
from support import BIN, ROOT

PROBE = ("import dolsot, os; r = dolsot.Repl().run('inst', 'v = 6 * 7\\nv'); "
         "print(os.path.dirname(dolsot.__file__), r.value, r.held)")


@unittest.skipIf(support.WARM, "installing is checked in the cold pass")
class Install(support.StoreCase):

    def probe_path(self, lib):
        return self.probe(sys.executable, lib)

    def probe(self, python, pythonpath=None):
        env = dict(os.environ, DOLSOT_BIN=BIN)
        env.pop("PYTHONPATH", None)
        if pythonpath:
            env["PYTHONPATH"] = pythonpath
        p = subprocess.run([python, "-c", PROBE], capture_output=True, text=True,
                           env=env, cwd=self.tmp, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout.split()

    def test_pip_install(self):
        venv = os.path.join(self.tmp, "venv")
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
        py = os.path.join(venv, "bin", "python")
        p = subprocess.run([sys.executable, "-m", "pip", "--python", py, "install",
                            "--no-index", "--disable-pip-version-check", "-q",
                            os.path.join(ROOT, "python")],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        where, value, held = self.probe(py)
        self.assertEqual(where, os.path.join(venv, "lib", "python3.11", "site-packages",
                                             "dolsot"))
        self.assertEqual((value, held), ("42", "['v']"))

    def test_make_install_python(self):
        stage = os.path.join(self.tmp, "stage")
        p = subprocess.run(["make", "-s", "-C", ROOT, "install-python",
                            f"DESTDIR={stage}", "PREFIX=/usr/local"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        lib = os.path.join(stage, "usr", "local", "lib", "python3.11", "dist-packages")
        self.assertEqual(sorted(os.listdir(os.path.join(lib, "dolsot"))),
                         sorted(n for n in os.listdir(os.path.join(ROOT, "python",
                                                                   "dolsot"))
                                if n.endswith(".py")))
        where, value, _ = self.probe_path(lib)
        self.assertEqual((where, value), (os.path.join(lib, "dolsot"), "42"))

    def test_sdist_builds(self):
        sys.path.insert(0, os.path.join(ROOT, "python"))
        try:
            import build_backend
        finally:
            sys.path.pop(0)
        out = tempfile.mkdtemp(dir=self.tmp)
        name = build_backend.build_sdist(out)
        self.assertEqual(name, "dolsot-0.3.0.tar.gz")
        import tarfile
        with tarfile.open(os.path.join(out, name)) as t:
            names = t.getnames()
        self.assertIn("dolsot-0.3.0/dolsot/repl.py", names)
        self.assertIn("dolsot-0.3.0/PKG-INFO", names)
        shutil.rmtree(out)


if __name__ == "__main__":
    unittest.main()
