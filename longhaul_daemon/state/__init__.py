"""The carried state: its model, the fold that rebuilds it, and the renderer that turns it into a summary."""
