"""Operating the daemon: systemd user units, install and uninstall, and the status view."""
