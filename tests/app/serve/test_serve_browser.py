"""``orrery serve`` watched in a real browser: headless Chromium loads the page, decodes the
stream (WebCodecs H.264), and is driven by mouse and buttons as a user would."""

import time
import urllib.error
import urllib.request

import numpy as np
import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

from .servers import wait_for

pytestmark = pytest.mark.slow

RUN = ("--scenario", "galaxy-collision", "--n", "6000")


def state(driver) -> dict:
    return driver.execute_script(
        "const s = window.orrery; return s ? {decoded: s.decoded, step: s.step, codec: s.codec,"
        " connected: s.connected, errors: s.errors, paused: s.stats.paused,"
        " inputLatencies: s.inputLatencies.length} : null")


def shown_pixels(driver) -> np.ndarray:
    """The picture the page shows (its video's, or its canvas's where the pictures are drawn
    there), as the browser made it: mean brightness of 32 x 32 blocks, computed in the page (the
    full picture is megabytes of JSON)."""
    blocks = driver.execute_script(
        "let c = document.querySelector('canvas.orrery-canvas');"
        "const v = document.querySelector('video.orrery-video');"
        "if (v && !v.hidden) {"
        "  const copy = document.createElement('canvas'); copy.width = c.width;"
        "  copy.height = c.height; copy.getContext('2d').drawImage(v, 0, 0, c.width, c.height);"
        "  c = copy; }"
        "const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;"
        "const bw = Math.ceil(c.width / 32), bh = Math.ceil(c.height / 32);"
        "const sums = new Array(bw * bh).fill(0);"
        "for (let y = 0; y < c.height; y++) for (let x = 0; x < c.width; x++) {"
        "  const i = 4 * (y * c.width + x);"
        "  sums[Math.floor(y / 32) * bw + Math.floor(x / 32)] += d[i] + d[i + 1] + d[i + 2]; }"
        "return sums.map((s) => s / (3 * 32 * 32));")
    return np.asarray(blocks, float)


def decoded(driver, more_than=0, timeout=60.0):
    return wait_for(lambda: (state(driver) or {}).get("decoded", 0) > more_than and
                    state(driver), timeout, what=f"more than {more_than} decoded pictures")


def test_the_page_needs_the_token(serve):
    server = serve(*RUN)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(server.base + "/")
    refused.value.close()
    assert refused.value.code == 403
    with pytest.raises(urllib.error.HTTPError) as wrong:
        urllib.request.urlopen(server.base + "/?token=not-the-token")
    wrong.value.close()
    assert wrong.value.code == 403
    with urllib.request.urlopen(server.url) as page:
        assert b"client.js" in page.read()


def test_the_browser_decodes_a_moving_run_and_shows_the_collision(serve, browser, tmp_path):
    server = serve(*RUN)
    page = browser(server.url)
    first = decoded(page, more_than=3)
    assert first["codec"].startswith("avc1."), "Chromium here decodes H.264 through WebCodecs"
    later = wait_for(lambda: (s := state(page))["step"] > first["step"] + 5 and s,
                     what="the step counter to advance")
    assert later["decoded"] > first["decoded"]
    assert not later["errors"]
    shown_by = page.execute_script(
        "const v = document.querySelector('video.orrery-video');"
        "const c = document.querySelector('canvas.orrery-canvas');"
        "return v && !v.hidden ? [v.videoWidth, v.videoHeight, c.width, c.height] : null")
    assert shown_by is not None, "Chromium shows the pictures through its track generator's video"
    assert shown_by[:2] == [side - side % 2 for side in shown_by[2:]], \
        "the video's pictures are the canvas's size (made even for H.264)"
    screenshot = tmp_path / "page.png"
    page.save_screenshot(str(screenshot))
    from PIL import Image

    picture = np.asarray(Image.open(screenshot).convert("L"), float)
    scene = picture[:, 340:]  # right of the panel
    assert (scene > 40).mean() > 0.002, "the collision is visible beside the panel"
    assert scene.std() > 5, "the scene is not one flat colour"


def test_dragging_moves_this_clients_camera_and_not_anothers(serve, browser):
    server = serve(*RUN, "--paused")
    one, two = browser(server.url), browser(server.url)
    decoded(one), decoded(two)
    time.sleep(1.0)
    before_one, before_two = shown_pixels(one), shown_pixels(two)
    canvas = one.find_element(By.CSS_SELECTOR, "canvas.orrery-canvas")
    ActionChains(one).move_to_element_with_offset(canvas, 200, 0).click_and_hold() \
        .move_by_offset(150, 40).move_by_offset(150, 40).release().perform()
    wait_for(lambda: state(one)["inputLatencies"] >= 2, what="a picture showing the drag")
    time.sleep(1.0)
    after_one, after_two = shown_pixels(one), shown_pixels(two)
    assert np.abs(after_one - before_one).mean() > 0.2, "the drag turned the view"
    assert np.abs(after_two - before_two).max() < 1e-9, \
        "the other client's camera did not move"


def test_pause_stops_the_step_counter_for_every_client(serve, browser):
    server = serve(*RUN)
    one, two = browser(server.url), browser(server.url)
    decoded(one, more_than=2), decoded(two, more_than=2)
    one.find_element(By.CSS_SELECTOR, "button[data-control=pause]").click()
    wait_for(lambda: state(two)["paused"] is True, what="the other client to see the pause")
    time.sleep(1.0)
    step = state(two)["step"]
    time.sleep(2.0)
    assert state(two)["step"] == step, "no step is made while paused"
    assert state(one)["step"] == step


def test_a_browser_without_a_track_generator_draws_the_pictures_into_the_canvas(serve, browser):
    server = serve(*RUN, "--paused")
    page = browser(server.url)
    page.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument",
                         {"source": "delete window.MediaStreamTrackGenerator;"})
    page.refresh()
    decoded(page)
    assert page.execute_script("return document.querySelector('video') === null")
    wait_for(lambda: shown_pixels(page).max() > 10, what="the collision drawn into the canvas")
    blocks = shown_pixels(page)
    assert blocks.std() > 1, "the canvas shows a picture, not one flat colour"
    assert not state(page)["errors"]


def test_killing_the_server_shows_the_reconnect_message(serve, browser):
    server = serve(*RUN)
    page = browser(server.url)
    decoded(page)
    server.stop()
    message = wait_for(lambda: page.find_element(By.CSS_SELECTOR, ".orrery-status").text,
                       what="the status message")
    assert "Reconnecting" in message
    assert state(page)["connected"] is False
