"""What the user's code in a worker sees of the environment: everything but the store's
location, whose URL may carry a server's password."""

from __future__ import annotations

from accelbench.engine.worker import worker_environment


def test_the_store_location_is_kept_from_workers(monkeypatch):
    monkeypatch.setenv("ACCELBENCH_DB", "postgresql://u:secret@db.example/results")
    monkeypatch.setenv("ACCELBENCH_DEVICE", "cpu")
    seen = worker_environment()
    assert "ACCELBENCH_DB" not in seen and seen["ACCELBENCH_DEVICE"] == "cpu"
