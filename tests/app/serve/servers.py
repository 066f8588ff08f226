"""A real ``orrery serve`` process on a free port, and polling for what a test waits on."""

import os
import re
import signal
import subprocess
import sys
import threading
import time

TOKEN = "test-token-0123456789"
URL_LINE = re.compile(r"at (http://\S+/\?token=\S+)")


class Server:
    """``orrery serve ARGS`` as a child process; ``url`` is the page's (with the token)."""

    def __init__(self, *arguments, token=TOKEN, startup=120.0, launcher=()):
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            [*launcher, sys.executable, "-m", "orrery.app.cli", "serve", "--port", "0",
             "--token", token, *arguments], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, env=env)
        self.lines: list[str] = []
        self.url = None
        found = threading.Event()

        def read():
            for line in self.process.stdout:
                self.lines.append(line)
                match = URL_LINE.search(line)
                if match and self.url is None:
                    self.url = match.group(1)
                    found.set()
            found.set()

        self._reader = threading.Thread(target=read, daemon=True)
        self._reader.start()
        found.wait(startup)
        if self.url is None:
            self.stop()
            raise AssertionError("orrery serve printed no URL:\n" + "".join(self.lines))
        self.base = self.url.split("/?")[0]
        self.port = int(self.base.rsplit(":", 1)[1])
        self.ws = f"ws://127.0.0.1:{self.port}/ws?token={token}"

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, signum=signal.SIGTERM, timeout=30.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signum)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._reader.join(5.0)
        self.process.stdout.close()
        return self.process.returncode


def wait_for(condition, timeout=60.0, interval=0.1, what="the condition"):
    """Poll ``condition()`` until it returns a true value; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)
