// A test-only bridge from MCP's streamable HTTP transport to `govex mcp` on stdio, for
// clients that speak only HTTP (the official conformance suite) until govex serves HTTP
// itself.  Node built-ins only; loopback only.
//
//   node http_bridge.mjs PORTFILE GOVEX [ARGS...]
//
// Listens on 127.0.0.1 on a free port (written to PORTFILE once listening).  Each
// initialize without a session starts a fresh `GOVEX mcp ARGS...` (a session is one
// stdio server); its id goes back in Mcp-Session-Id.  A POSTed request is written to the
// server's stdin and answered as an SSE stream that carries, in order, every message the
// server writes until the response with the request's id (notifications of a call, such
// as its log lines and progress, arrive on the stream of the request that was sent
// last and is still open).  A POSTed notification or response gets 202.  DELETE ends the
// session.  The bridge ends its servers when it exits (SIGTERM, SIGINT).
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import http from 'node:http';

const [portfile, govex, ...args] = process.argv.slice(2);
const sessions = new Map(); // id -> {child, open: [{id, res}], buf}

function startSession() {
  const child = spawn(govex, ['mcp', ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const s = { child, open: [], buf: '' };
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk) => {
    s.buf += chunk;
    let nl;
    while ((nl = s.buf.indexOf('\n')) >= 0) {
      const line = s.buf.slice(0, nl);
      s.buf = s.buf.slice(nl + 1);
      if (line.trim()) deliver(s, line);
    }
  });
  child.on('exit', () => {
    for (const o of s.open) o.res.end();
    s.open = [];
  });
  return s;
}

function deliver(s, line) {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    return;
  }
  const isResponse = msg.id !== undefined && msg.method === undefined;
  let target = null;
  if (isResponse) target = s.open.find((o) => JSON.stringify(o.id) === JSON.stringify(msg.id));
  else target = s.open[s.open.length - 1];
  if (!target) return;
  target.res.write(`event: message\ndata: ${line}\n\n`);
  if (isResponse) {
    target.res.end();
    s.open = s.open.filter((o) => o !== target);
  }
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => resolve(body));
    req.on('error', reject);
  });
}

const server = http.createServer(async (req, res) => {
  const sid = req.headers['mcp-session-id'];
  if (req.method === 'DELETE') {
    const s = sessions.get(sid);
    if (s) {
      s.child.stdin.end();
      sessions.delete(sid);
    }
    res.writeHead(s ? 200 : 404).end();
    return;
  }
  if (req.method !== 'POST') {
    res.writeHead(405, { Allow: 'POST, DELETE' }).end();
    return;
  }
  const body = await readBody(req);
  let msg;
  try {
    msg = JSON.parse(body);
  } catch {
    res.writeHead(400).end();
    return;
  }
  let id = sid;
  let s = sessions.get(sid);
  if (!s && msg.method === 'initialize') {
    id = randomUUID();
    s = startSession();
    sessions.set(id, s);
  }
  if (!s) {
    res.writeHead(404).end();
    return;
  }
  const isRequest = msg.method !== undefined && msg.id !== undefined;
  if (!isRequest) {
    s.child.stdin.write(body.replace(/\n/g, ' ') + '\n');
    res.writeHead(202, { 'mcp-session-id': id }).end();
    return;
  }
  res.writeHead(200, {
    'Content-Type': 'text/event-stream',
    'Cache-Control': 'no-cache',
    'mcp-session-id': id,
  });
  s.open.push({ id: msg.id, res });
  s.child.stdin.write(body.replace(/\n/g, ' ') + '\n');
});

function stop() {
  for (const s of sessions.values()) s.child.kill('SIGTERM');
  process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

server.listen(0, '127.0.0.1', () => {
  writeFileSync(portfile, String(server.address().port));
});
