"""The e2e fixtures (model server, sandbox, daemon, pi) for the evaluation tests that record real sessions."""

from __future__ import annotations

from e2e.conftest import daemon, daemon_process, model_server, prerequisites, sandbox, start_pi

__all__ = ["daemon", "daemon_process", "model_server", "prerequisites", "sandbox", "start_pi"]
