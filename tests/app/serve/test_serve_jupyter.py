"""``orrery.show()`` in a real JupyterLab: a headless server and a notebook run in Chromium; the
widget's canvas decodes pictures through the notebook's own comm, and ``sim.step()`` in a cell
shows in the widget. Without a browser: the widget's sources and settings are checked."""

import os
import socket
import subprocess
import sys

import nbformat
import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from .servers import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("egl")]

TOKEN = "jupyter-test-token"
CELLS = [
    "import orrery\n"
    "from orrery.engine import ics, make_solver, Simulation\n"
    "sim = Simulation(ics.plummer(500, seed=1), make_solver('cpu-direct', softening=0.05), "
    "dt=0.01)\n"
    "widget = orrery.show(sim, size=(480, 270))\n"
    "widget",
    "sim.step(20)",
]
WIDGET_STATE = ("const r = document.querySelector('.orrery-root');"
                "return r && r.orrery ? {decoded: r.orrery.decoded, step: r.orrery.step,"
                " errors: r.orrery.errors} : null")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def jupyterlab(tmp_path):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(cell) for cell in CELLS]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    nbformat.write(notebook, tmp_path / "serve.ipynb")
    port = free_port()
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "IPYTHONDIR": str(tmp_path / "ipython")}
    process = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}",
         f"--ServerApp.token={TOKEN}", f"--ServerApp.root_dir={tmp_path}", "--allow-root",
         "--ServerApp.port_retries=0"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        def listening():
            with socket.socket() as probe:
                return probe.connect_ex(("127.0.0.1", port)) == 0
        wait_for(listening, timeout=120, what="JupyterLab to listen")
        yield f"http://127.0.0.1:{port}/lab/tree/serve.ipynb?token={TOKEN}"
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def run_cell(page):
    ActionChains(page).key_down(Keys.SHIFT).send_keys(Keys.ENTER).key_up(Keys.SHIFT).perform()


def test_the_widget_shows_a_simulation_stepped_in_the_notebook(jupyterlab, browser):
    page = browser(jupyterlab, size=(1280, 900))

    def notebook_ready():
        cells = page.find_elements(By.CSS_SELECTOR, ".jp-Notebook .jp-Cell .cm-content")
        status = page.execute_script(
            "const e = document.querySelector('.jp-Notebook-ExecutionIndicator');"
            "return e && e.getAttribute('data-status')")
        return cells if cells and status == "idle" else None

    wait_for(notebook_ready, timeout=120, interval=0.5, what="the notebook and its kernel")

    def first_cell_focused():
        try:  # found again each time: JupyterLab re-renders cells as the kernel starts
            page.find_element(By.CSS_SELECTOR, ".jp-Notebook .jp-Cell .cm-content").click()
        except Exception:  # noqa: BLE001 - laid out but not yet clickable: try again
            return False
        return True

    wait_for(first_cell_focused, timeout=60, interval=0.5, what="the first cell to take a click")
    run_cell(page)
    try:
        shown = wait_for(lambda: (state := page.execute_script(WIDGET_STATE)) and
                         state["decoded"] > 0 and state, timeout=120, interval=0.5,
                         what="the widget's first decoded picture")
    except AssertionError as error:
        outputs = [output.text for output in page.find_elements(By.CSS_SELECTOR,
                                                                 ".jp-OutputArea")]
        raise AssertionError(f"{error}; cell outputs: {outputs}; widget: "
                             f"{page.execute_script(WIDGET_STATE)}") from None
    assert shown["step"] == 0 and not shown["errors"]
    run_cell(page)  # sim.step(20)
    stepped = wait_for(lambda: (state := page.execute_script(WIDGET_STATE))["step"] == 20 and
                       state, timeout=60, interval=0.5, what="the widget to show step 20")
    assert stepped["decoded"] > shown["decoded"]


def test_show_takes_a_recording_and_refuses_an_unknown_look(tmp_path):
    import orrery
    from orrery.engine.errors import InvalidInputError
    from orrery.engine.recording import Player, Recorder
    from orrery.engine import Simulation, ics, make_solver

    sim = Simulation(ics.plummer(200, seed=2), make_solver("cpu-direct", softening=0.05), dt=0.01)
    with Recorder.for_simulation(tmp_path / "run.h5", sim, scenario="plummer") as recorder:
        for _ in range(3):
            sim.step(1)
            recorder.append_simulation(sim)
    widget = orrery.show(str(tmp_path / "run.h5"), exposure=1.2)
    try:
        assert isinstance(widget.hub.source, Player)
        assert widget.hub.default_view.exposure == 1.2
    finally:
        widget.close()
    with pytest.raises(InvalidInputError, match="no setting"):
        orrery.show(sim, brightness=3)
    with pytest.raises(InvalidInputError, match="exposure"):
        orrery.show(sim, exposure=-1)
