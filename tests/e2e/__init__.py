"""End-to-end tests: a real pi with the Longhaul shim, a real daemon and a scripted model server."""
