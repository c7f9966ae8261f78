"""What the Python API tests share: the built binary, a private store per
test class, environment changes undone after each test, and the warm
server (DOLSOT_SERVER=auto) stopped at the end."""

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("DOLSOT_BIN") or os.path.join(ROOT, "dolsot")
EXAMPLES = os.path.join(ROOT, "examples")
TOOLBOX = os.path.join(ROOT, "tests", "lib", "toolbox")
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, EXAMPLES)

WARM = os.environ.get("DOLSOT_SERVER", "auto") != "off"


@contextlib.contextmanager
def env(**changes):
    """Set (str) or unset (None) variables for the block."""
    old = {k: os.environ.get(k) for k in changes}
    try:
        for k, v in changes.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def stop_server(cache_dir):
    subprocess.run([BIN, "--server-stop"], env=dict(os.environ, DOLSOT_CACHE_DIR=cache_dir),
                   stdin=subprocess.DEVNULL, capture_output=True, timeout=60, check=False)


class StoreCase(unittest.TestCase):
    """Each class gets a temporary directory with its own session store
    (DOLSOT_CACHE_DIR), the binary as DOLSOT_BIN, no type checker unless a
    test asks for one, and nothing set that would change the defaults."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="dolsot-pytest-")
        cls.cache = os.path.join(cls.tmp, "sessions")
        cls._env = env(DOLSOT_CACHE_DIR=cls.cache, DOLSOT_BIN=BIN, DOLSOT_TYPECHECK="0",
                       DOLSOT_TIMEOUT=None, DOLSOT_MAX_OUTPUT=None, DOLSOT_STORE=None,
                       DOLSOT_TY_BIN=None, PYTHONPATH=None)
        cls._env.__enter__()

    @classmethod
    def tearDownClass(cls):
        cls._env.__exit__(None, None, None)
        stop_server(cls.cache)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self._saved = dict(os.environ)

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self._saved)


def pid_alive(pid):
    """True while pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_redis(directory):
    """A redis-server of the test's own on 127.0.0.1 on a free port, in
    directory, with RDB save points that never trigger in a test (dolsot
    warns of a server that keeps nothing on disk); returns (process, url)
    once it answers, or None when redis-server is not installed.
    stop_redis ends it."""
    if not shutil.which("redis-server"):
        return None
    port = free_port()
    p = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                          "--dir", directory, "--save", "3600 1", "--appendonly", "no",
                          "--shutdown-on-sigterm", "force",
                          "--logfile", "redis.log"], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(1200):     # up to a minute on a loaded machine
        try:
            with socket.create_connection(("127.0.0.1", port), 1) as c:
                c.sendall(b"PING\r\n")
                if c.recv(16).startswith(b"+PONG"):
                    return p, f"redis://127.0.0.1:{port}"
        except OSError:
            pass
        if p.poll() is not None:
            break
        time.sleep(0.05)
    p.kill()
    p.wait()
    raise RuntimeError(f"redis-server did not start on port {port}")


def stop_redis(server):
    if server is None:
        return
    p, _ = server
    p.terminate()
    try:
        p.wait(30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
