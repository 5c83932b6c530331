// Node's https (its own OpenSSL, linked into the node binary; memory BIOs:
// the library never touches the socket).
//   node tls_node.js server PORT CERT KEY   / -> 200, /status/N -> N, /size/N -> N bytes; prints "listening"
//   node tls_node.js client PORT N          N sequential GETs on one keep-alive connection (the same
//                                           paths as tls_peer.py); prints "done N 200:a 404:b 500:c"
// With EMBER_TEST_GO=PATH the client starts once PATH exists (as tests/progs/start_gate.h): a node
// linking the system's libssl.so.3 (Debian's) is probed per process, after it maps the library.
'use strict';
const https = require('https');
const fs = require('fs');
const [mode, port] = [process.argv[2], Number(process.argv[3])];

function pathOf(i) {
  if (i % 5 === 1) return '/status/404';
  if (i % 7 === 2) return '/status/500';
  return '/size/' + 100 * i;
}

if (mode === 'server') {
  const srv = https.createServer({ cert: fs.readFileSync(process.argv[4]), key: fs.readFileSync(process.argv[5]) },
    (req, res) => {
      let status = 200, body = 'hello';
      if (req.url.startsWith('/status/')) { status = Number(req.url.slice(8)); body = 'status'; }
      else if (req.url.startsWith('/size/')) body = 's'.repeat(Number(req.url.slice(6)));
      res.writeHead(status, { 'Content-Length': Buffer.byteLength(body), 'Content-Type': 'text/plain' });
      res.end(body);
    });
  srv.keepAliveTimeout = 60000;
  srv.listen(port, '127.0.0.1', () => console.log('listening'));
} else {
  const n = Number(process.argv[4]);
  const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
  const counts = {};
  let i = 0;
  const next = () => {
    if (i === n) {
      agent.destroy();
      console.log('done ' + n + ' ' + Object.keys(counts).sort().map(k => k + ':' + counts[k]).join(' '));
      return;
    }
    const req = https.get({ host: '127.0.0.1', port, path: pathOf(i++), agent, rejectUnauthorized: false }, res => {
      res.resume();
      res.on('end', () => { counts[res.statusCode] = (counts[res.statusCode] || 0) + 1; next(); });
    });
    req.on('error', e => { console.error(e); process.exit(1); });
  };
  const go = process.env.EMBER_TEST_GO;
  if (go) {
    const t = setInterval(() => { if (fs.existsSync(go)) { clearInterval(t); next(); } }, 1);
  } else {
    next();
  }
}
