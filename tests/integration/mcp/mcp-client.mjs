// The official MCP client (the TypeScript SDK) driving `lockask mcp` as an agent would: it spawns
// the command given in argv (lockask under the agent's uid), then runs the scenario named by
// MCP_SCENARIO and prints one JSON line with what it saw. The Python test asserts on it.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { execFileSync } from "node:child_process";

const [command, ...args] = process.argv.slice(2);
const env = process.env;
const out = {};

function text(result) {
  return (result.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

function ticketOf(message) {
  const m = /ticket (\S+) is/.exec(message || "");
  return m ? m[1] : null;
}

const transport = new StdioClientTransport({ command, args, stderr: "inherit" });
const client = new Client({ name: "lockd-integration-test", version: "1.0.0" });
await client.connect(transport);
out.server = client.getServerVersion();
out.protocol = transport._protocolVersion || null;
out.tools = (await client.listTools()).tools.map((t) => ({
  name: t.name,
  description: t.description,
  schema: t.inputSchema,
}));

// An auto grant: answered without the human.
const auto = await client.callTool({ name: "ask", arguments: { handle: env.AUTO_HANDLE, plugin: env.PLUGIN_ONE } });
out.auto = { isError: auto.isError, text: text(auto), structured: auto.structuredContent };

// A literal value: a tool error naming LiteralInput.
const literal = await client.callTool({
  name: "ask",
  arguments: { handle: env.AUTO_HANDLE, plugin: env.PLUGIN_INPUTS, inputs: { needle: "hello" } },
});
out.literal = { isError: literal.isError, text: text(literal), structured: literal.structuredContent };

// A question that needs approval: progress while it waits, the human approves, then the answer.
const progress = [];
let approved = null;
const approval = await client.callTool(
  { name: "ask", arguments: { handle: env.APPROVE_HANDLE, plugin: env.PLUGIN_ONE, wait_seconds: 120 } },
  undefined,
  {
    timeout: 180000,
    onprogress: (p) => {
      progress.push(p);
      const t = ticketOf(p.message);
      if (t && !approved) {
        approved = t;
        execFileSync(env.LOCKCTL, ["--socket", env.CONSOLE_SOCKET, "approve", t, "--yes"], { stdio: "ignore" });
      }
    },
  },
);
out.approval = { isError: approval.isError, text: text(approval), structured: approval.structuredContent, progress, approved };

// Cancelled by the client while it waits: lockask cancels the ticket.
const controller = new AbortController();
let cancelled = null;
try {
  await client.callTool(
    { name: "ask", arguments: { handle: env.APPROVE_HANDLE, plugin: env.PLUGIN_ZERO, wait_seconds: 120 } },
    undefined,
    {
      signal: controller.signal,
      timeout: 180000,
      onprogress: (p) => {
        if (!cancelled) {
          cancelled = ticketOf(p.message);
          controller.abort("the test cancels");
        }
      },
    },
  );
  out.cancel = { error: "the call was answered" };
} catch (e) {
  out.cancel = { ticket: cancelled, error: String(e) };
}

// The server still answers after all of it.
out.files = (await client.callTool({ name: "list_files", arguments: {} })).structuredContent;
out.ping = await client.ping();
await client.close();
console.log(JSON.stringify(out));
