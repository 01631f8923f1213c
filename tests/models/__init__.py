"""Tests of the model-call core: wire formats on loopback servers, retries, budgets, credential hygiene."""
