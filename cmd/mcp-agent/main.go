// Command mcp-agent is `mcp agent` alone: the node agent, without the engine, the boot
// server, HCL or Butane, so that the process on every node is small (the DaemonSet in
// deploy/ runs it; docs/agent.md).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcpfleet/mcp/cmd/internal/agentcmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := agentcmd.Run(ctx, "mcp-agent", os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
