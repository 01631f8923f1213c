"""Lenient readers for pi's session entries and messages, which reach the daemon as untrusted JSON."""
