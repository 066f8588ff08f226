import pytest

from orrery.engine import ics


@pytest.fixture(scope="session")
def plummer_2048():
    return ics.plummer(2048, seed=7)
