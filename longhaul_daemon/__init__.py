"""Longhaul: a context compactor daemon for the pi coding agent."""

__version__ = "0.1.0"
