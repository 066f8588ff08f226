"""Fixtures of the served client's tests: ``serve`` starts real ``orrery serve`` processes,
``browser`` opens headless Chromium (Debian's, driven by Selenium through Debian's
chromedriver: nothing is downloaded)."""

import pytest

from .servers import Server

CHROMIUM = "/usr/lib/chromium/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


@pytest.fixture
def serve(egl):
    """Start servers: ``serve(*arguments)``; each is stopped at the end of the test."""
    started = []

    def start(*arguments, **options):
        server = Server(*arguments, **options)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def browser(chromium):
    """Open headless Chromium pages: ``browser(url, size=(1280, 720))`` gives a driver."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    drivers = []

    def open_page(url, size=(1280, 720)):
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                         "--disable-gpu", f"--window-size={size[0]},{size[1]}",
                         "--autoplay-policy=no-user-gesture-required"):
            options.add_argument(argument)
        driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
        drivers.append(driver)
        driver.get(url)
        return driver

    yield open_page
    for driver in drivers:
        driver.quit()
