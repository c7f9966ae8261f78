"""pi --mode rpc as a child: commands written to its stdin, its responses
and events read from its stdout by a thread, split on LF only (rpc.md:
a generic line reader would split on U+2028 too), each with the
time.perf_counter() it arrived at.  The tests (support.Rpc) and
bench/pi.py drive pi through it."""
import json
import subprocess
import threading
import time


class PiRpc:
    def __init__(self, argv, cwd, env, stderr):
        """stderr: a file (a pipe nobody reads could fill and stop pi)."""
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=stderr)
        self.events, self.times = [], []
        self.cond = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        buf = b""
        while chunk := self.proc.stdout.read1(65536):
            buf += chunk
            *lines, buf = buf.split(b"\n")
            now = time.perf_counter()
            with self.cond:
                for line in lines:
                    if line.strip():
                        self.events.append(json.loads(line))
                        self.times.append(now)
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def send(self, command):
        self.proc.stdin.write(json.dumps(command).encode() + b"\n")
        self.proc.stdin.flush()

    def wait(self, pred, seconds, start=0):
        """The index of the first event from start on that pred takes;
        AssertionError after seconds, or when pi's output ended first."""
        end = time.monotonic() + seconds
        with self.cond:
            while True:
                for i in range(start, len(self.events)):
                    if pred(self.events[i]):
                        return i
                left = end - time.monotonic()
                if left <= 0 or not self.reader.is_alive():
                    raise AssertionError(f"no such event; got {json.dumps(self.events)[-3000:]}")
                self.cond.wait(left)

    def close(self, seconds=30):
        """End pi (its stdin closed) and reap it; again is harmless."""
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.reader.join()
        self.proc.stdout.close()
