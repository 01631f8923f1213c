"""The agent's tools and the kept-window strip as pure logic (TOOLS-1..10), served by ``rpc.tool_methods``."""
