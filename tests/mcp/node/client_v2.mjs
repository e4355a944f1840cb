// A real MCP client (@modelcontextprotocol/client v2) against `govex mcp`, with version
// negotiation pinned to the stateless revision 2026-07-28 (or 'auto').
// Usage: node client_v2.mjs SCENARIO GOVEX WORKDIR [MODULE]
// Prints one JSON line: {"ok": true, "info": {...}} or {"ok": false, "error": "..."}.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const [scenario, govex, workdir, module] = process.argv.slice(2);
const info = {};

function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

async function main() {
  const args = ['mcp', '--preset', 'trusted', '--max-concurrent', '4'];
  if (module) args.push('--module', module);
  // GOVEX_MCP_URL: a `govex mcp --http` the test started (with these arguments) instead
  const url = process.env.GOVEX_MCP_URL;
  const transport = url
    ? new StreamableHTTPClientTransport(new URL(url))
    : new StdioClientTransport({ command: govex, args, cwd: workdir, stderr: 'inherit' });
  const mode = scenario === 'auto' ? 'auto' : { pin: '2026-07-28' };
  const client = new Client({ name: 'govex-test-v2', version: '1.0.0' }, { versionNegotiation: { mode } });
  await client.connect(transport);
  info.era = client.getProtocolEra();
  info.version = client.getNegotiatedProtocolVersion();
  info.server = client.getServerVersion();
  try {
    assert(info.era === 'modern', 'era ' + info.era);
    assert(info.version === '2026-07-28', 'version ' + info.version);
    const tools = (await client.listTools()).tools;
    info.tools = tools.map((t) => t.name);
    assert(info.tools.includes('run_python_snippet'), 'no run_python_snippet');
    const r = await client.callTool({ name: 'run_python_snippet', arguments: { code: 'print(2**10)\n2**10' } });
    assert(!r.isError, 'isError: ' + JSON.stringify(r));
    assert(r.structuredContent.stdout === '1024\n' && r.structuredContent.value === 1024, 'result');
    const f = await client.callTool({ name: 'run_python_snippet', arguments: { code: 'raise ValueError("no")' } });
    assert(f.isError === true && f.structuredContent.status === 'execution_failed', 'failing call');
    if (module) {
      const m = await client.callTool({ name: 'add', arguments: { a: 20, b: 22 } });
      assert(m.structuredContent.value === 42, 'module call');
    }
    let err = null;
    try {
      await client.callTool({ name: 'nope', arguments: {} });
    } catch (e) {
      err = e;
    }
    assert(err && err.code === -32602, 'unknown tool: ' + (err && err.code));
  } finally {
    await client.close();
  }
}

const watchdog = setTimeout(() => {
  console.log(JSON.stringify({ ok: false, error: 'client timed out', info }));
  process.exit(1);
}, 90000);
main()
  .then(() => {
    console.log(JSON.stringify({ ok: true, info }));
    clearTimeout(watchdog);
  })
  .catch((e) => {
    console.log(JSON.stringify({ ok: false, error: String(e && e.stack ? e.stack : e), info }));
    clearTimeout(watchdog);
    process.exitCode = 1;
  });
