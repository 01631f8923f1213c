"""Credentials the daemon holds for a pass, and the one redactor every writer applies to keep them out.

Nothing is re-exported: the operational log's processor imports :mod:`.redaction` alone.
"""
