"""Counting calls in the GPU tests: what a path moves through the host and how often the host
waits for the device."""


def counted(function, log: list, name: str):
    """``function`` that appends ``name`` to ``log`` on every call."""
    def wrapper(*args, **kwargs):
        log.append(name)
        return function(*args, **kwargs)
    return wrapper


def log_transfers(monkeypatch, array_type) -> list:
    """From now on, "upload" or "download" for every transfer through the backend's DeviceArray
    type ``array_type`` (every host transfer goes through it)."""
    log: list = []
    for method in ("upload", "download"):
        monkeypatch.setattr(array_type, method, counted(getattr(array_type, method), log, method))
    return log


def log_waits(monkeypatch, event) -> list:
    """From now on, "wait" for every host wait on a kernel event of ``event``'s backend."""
    log: list = []
    event_type = type(event)
    monkeypatch.setattr(event_type, "wait", counted(event_type.wait, log, "wait"))
    return log
