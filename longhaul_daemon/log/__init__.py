"""The record log (``compaction-state.jsonl``) and its shareable digest; separate from the operational log."""

from longhaul_daemon.log.records import LogFile, log_files, write_record

__all__ = ["LogFile", "log_files", "write_record"]
