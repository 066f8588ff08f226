"""A private X server for the tests that open a real window (the viewer's, and the viewer
under ``orrery bench live --modes window``)."""

import contextlib
import os
import subprocess


@contextlib.contextmanager
def xvfb_server(screen: str):
    """A private Xvfb server of ``screen`` pixels (WxH); yields its DISPLAY value. It keeps its
    root window's properties when its last client goes (-noreset): the desktop's settings a
    test writes there stay for the viewer."""
    read_end, write_end = os.pipe()
    server = subprocess.Popen(["Xvfb", "-displayfd", str(write_end), "-screen", "0", f"{screen}x24",
                               "-nolisten", "tcp", "-noreset"], pass_fds=(write_end,),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        number = pipe.readline().strip()
    assert number, "Xvfb did not report its display number"
    try:
        yield f":{number}"
    finally:
        server.terminate()
        server.wait(timeout=10)
