"""pi's session files as the daemon reads them: checked, indexed once, then read only where they grew."""
