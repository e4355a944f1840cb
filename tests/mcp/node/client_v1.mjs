// A real MCP client (@modelcontextprotocol/sdk v1: Client + StdioClientTransport) against
// `govex mcp`.  Usage: node client_v1.mjs SCENARIO GOVEX WORKDIR [MODULE]
// Prints one JSON line: {"ok": true, "info": {...}} or {"ok": false, "error": "..."}.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import fs from 'node:fs';
import path from 'node:path';

const [scenario, govex, workdir, module] = process.argv.slice(2);
const info = {};

function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const snippet = (code, extra = {}) => ({ name: 'run_python_snippet', arguments: { code, ...extra } });

function alive(pid) {
  try {
    process.kill(pid, 0);
  } catch (e) {
    return e.code !== 'ESRCH';
  }
  // a zombie is dead too
  try {
    const st = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) [ZX]/.test(st);
  } catch {
    return false;
  }
}

async function main() {
  const args = ['mcp', '--preset', 'trusted', '--max-concurrent', '4'];
  if (module) args.push('--module', module);
  // GOVEX_MCP_URL: a `govex mcp --http` the test started (with these arguments) instead
  const url = process.env.GOVEX_MCP_URL;
  const transport = url
    ? new StreamableHTTPClientTransport(new URL(url))
    : new StdioClientTransport({ command: govex, args, cwd: workdir, stderr: 'inherit' });
  const client = new Client({ name: 'govex-test-v1', version: '1.0.0' });
  await client.connect(transport);
  info.server = client.getServerVersion();
  try {
    await run(client);
  } finally {
    await client.close();
  }
}

async function run(client) {
  const tools = (await client.listTools()).tools;
  info.tools = tools.map((t) => t.name);
  switch (scenario) {
    case 'list': {
      const t = tools.find((x) => x.name === 'run_python_snippet');
      assert(t, 'no run_python_snippet');
      assert(t.inputSchema.additionalProperties === false, 'additionalProperties');
      assert(t.inputSchema.properties.code.maxLength === 65536, 'code maxLength');
      assert(t.inputSchema.properties.timeout_ms.maximum === 5000, 'timeout maximum');
      assert(t.outputSchema && t.outputSchema.type === 'object', 'outputSchema');
      break;
    }
    case 'snippet': {
      const r = await client.callTool(snippet('print(6*7)\n{"answer": 6*7}'));
      assert(!r.isError, 'isError on success: ' + JSON.stringify(r));
      assert(r.structuredContent.status === 'success', 'status');
      assert(r.structuredContent.stdout === '42\n', 'stdout: ' + r.structuredContent.stdout);
      assert(r.structuredContent.value.answer === 42, 'value');
      assert(r.content[0].type === 'text' && r.content[0].text.includes('42'), 'text');
      info.text = r.content[0].text;
      break;
    }
    case 'module': {
      assert(tools.some((t) => t.name === 'add'), 'no add tool: ' + info.tools);
      const r = await client.callTool({ name: 'add', arguments: { a: 40, b: 2 } });
      assert(!r.isError, 'isError: ' + JSON.stringify(r));
      assert(r.structuredContent.value === 42, 'value ' + r.structuredContent.value);
      const r2 = await client.callTool({ name: 'add', arguments: { a: 1 } });
      assert(r2.structuredContent.value === 3, 'default b');
      break;
    }
    case 'failing': {
      const r = await client.callTool(snippet('raise SystemExit(3)'));
      assert(r.isError === true, 'not isError');
      assert(r.structuredContent.status === 'execution_failed', 'status ' + r.structuredContent.status);
      assert(r.structuredContent.exit_code === 3, 'exit code');
      const r2 = await client.callTool(snippet('import time\ntime.sleep(5)', { timeout_ms: 200 }));
      assert(r2.isError === true && r2.structuredContent.status === 'timeout', 'timeout');
      const r3 = await client.callTool(snippet('1/0'));
      assert(r3.isError && r3.structuredContent.stderr.includes('ZeroDivisionError'), 'traceback');
      info.statuses = [r, r2, r3].map((x) => x.structuredContent.status);
      break;
    }
    case 'badargs': {
      // the SDK negotiates 2025-11-25: invalid arguments are a tool result the model can
      // read (isError, naming the argument), no longer JSON-RPC -32602
      const r = await client.callTool({ name: 'run_python_snippet', arguments: { code: 5 } });
      assert(r.isError === true && r.structuredContent.status === 'invalid_input',
        'bad code: ' + JSON.stringify(r).slice(0, 300));
      assert(r.structuredContent.diagnostics[0].code === 'invalid_argument', 'diagnostic');
      assert(r.content[0].text.includes('args.code: expected string'), 'text names the argument');
      const r2 = await client.callTool(snippet('1', { timeout_ms: 10 ** 9 }));
      assert(r2.isError === true && r2.content[0].text.includes('timeout_ms: must be at most'),
        'timeout bound: ' + r2.content[0].text);
      info.message = r2.content[0].text;
      break;
    }
    case 'unknown': {
      let err = null;
      try {
        await client.callTool({ name: 'no_such_tool', arguments: {} });
      } catch (e) {
        err = e;
      }
      assert(err && err.code === -32602, 'expected -32602, got ' + (err && err.code));
      break;
    }
    case 'cancel': {
      const pidfile = path.join(workdir, 'pid');
      const ac = new AbortController();
      const code =
        `import os, time\nopen(${JSON.stringify(pidfile + '.tmp')}, 'w').write(str(os.getpid()))\n` +
        `os.rename(${JSON.stringify(pidfile + '.tmp')}, ${JSON.stringify(pidfile)})\ntime.sleep(30)\n`;
      const p = client.callTool(snippet(code), undefined, { signal: ac.signal, timeout: 60000 });
      let pid = null;
      for (let i = 0; i < 200 && pid === null; i++) {
        await sleep(25);
        if (fs.existsSync(pidfile)) pid = parseInt(fs.readFileSync(pidfile, 'utf8'), 10);
      }
      assert(pid, 'the snippet never started');
      const t0 = Date.now();
      ac.abort('test');
      let rejected = false;
      try {
        await p;
      } catch {
        rejected = true;
      }
      assert(rejected, 'the aborted call did not reject');
      while (alive(pid) && Date.now() - t0 < 3000) await sleep(10);
      info.killed_ms = Date.now() - t0;
      assert(!alive(pid), 'snippet pid ' + pid + ' still alive after 3 s');
      assert(info.killed_ms < 2000, 'killed after ' + info.killed_ms + ' ms');
      await client.ping();
      const r = await client.callTool(snippet('print("still serving")'));
      assert(r.structuredContent.stdout === 'still serving\n', 'server no longer serving');
      break;
    }
    case 'concurrent': {
      const t0 = Date.now();
      const rs = await Promise.all([0, 1, 2, 3].map((i) => client.callTool(snippet(`import time\ntime.sleep(1)\n${i}`))));
      info.elapsed_ms = Date.now() - t0;
      rs.forEach((r, i) => assert(r.structuredContent.value === i, 'value ' + i));
      assert(info.elapsed_ms < 3000, 'four 1 s sleeps took ' + info.elapsed_ms + ' ms');
      break;
    }
    case 'burst50': {
      // issue 23: the SDK does not retry a 429, so a burst must wait in the queue
      const t0 = Date.now();
      const rs = await Promise.allSettled(
        Array.from({ length: 50 }, (_, i) => client.callTool(snippet(`${i}`))));
      info.elapsed_ms = Date.now() - t0;
      const bad = rs.map((r, i) => [i, r]).filter(([i, r]) =>
        r.status !== 'fulfilled' || r.value.structuredContent.value !== i);
      info.failed = bad.length;
      assert(!bad.length, bad.length + ' of 50 calls failed, the first: ' +
             String(bad[0] && (bad[0][1].reason || JSON.stringify(bad[0][1].value))));
      break;
    }
    case 'ping': {
      const r = await client.ping();
      assert(r && typeof r === 'object', 'ping');
      break;
    }
    default:
      throw new Error('unknown scenario ' + scenario);
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
