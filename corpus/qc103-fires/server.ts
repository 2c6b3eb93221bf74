import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";

const server = new McpServer({ name: "pages", version: "1.0.0" });

server.registerTool("fetch_page", { inputSchema: { url: z.string() } }, async ({ url }) => {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  return { content: [{ type: "text", text: await res.text() }] };
});
