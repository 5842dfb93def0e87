package main

import "github.com/mcpfleet/mcp/cmd/internal/agentcmd"

// agent runs the node executor on this machine (docs/agent.md); the lean mcp-agent binary
// runs the same command.
func (c *cli) agent(args []string) int {
	c.intr.setNotice("stopping the agent")
	return agentcmd.Run(c.ctx, "mcp agent", args, c.stdout, c.stderr)
}
