"""The record log (``compaction-state.jsonl``) and its shareable digest; separate from the operational log.

Nothing is re-exported here, so that importing one submodule (the CLI's ``report`` arguments) loads no other.
"""
