package main

import (
	"context"
	"os/exec"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	s := server.NewMCPServer("reports", "1.0.0")
	s.AddTool(mcp.NewTool("run_report", mcp.WithString("name")), runReport)
	_ = server.ServeStdio(s)
}

func runReport(ctx context.Context, request mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	name := request.GetString("name", "")
	out, err := exec.CommandContext(ctx, "./reports/"+name, "--all").Output()
	if err != nil {
		return nil, err
	}
	return mcp.NewToolResultText(string(out)), nil
}
