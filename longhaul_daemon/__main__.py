"""``python -m longhaul_daemon``: the same command as the ``longhaul-daemon`` script."""

from longhaul_daemon.cli import main

raise SystemExit(main())
