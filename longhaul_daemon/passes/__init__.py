"""The steps of one pass: the ledger, the World snapshot and the orchestration that runs them."""
