"""The state inspector behind ``longhaul-daemon state``: read a pi session file, fold it, print it."""
