// The streaming bench's latency probes, in a process of their own: the endpoint picker scrapes
// from its own process, so a poll here waits only on the server (and the machine), never on the
// load generator's event loop, which is busy parsing the streams it drives. Plain JavaScript,
// started with `fork`, so it is up in tens of milliseconds.
//
// argv: intervalMs url… — each URL is polled one request at a time, a poll starting every
// intervalMs (from the start of one to the next), the body read whole (as Prometheus does).
// Messages: it sends {type: 'ready'} once polling, and on {type: 'stop'} sends
// {type: 'results', results: [{latenciesMs, failures}, …]} (one per URL, in argv order) and exits.

const intervalMs = Number(process.argv[2]);
const urls = process.argv.slice(3);
let stopped = false;
const wakers = new Set();

async function poll(url) {
  const latenciesMs = [];
  let failures = 0;
  while (!stopped) {
    const started = performance.now();
    try {
      const response = await fetch(url);
      await response.arrayBuffer();
      if (response.status !== 200) failures++;
    } catch {
      failures++;
    }
    const elapsed = performance.now() - started;
    latenciesMs.push(elapsed);
    if (stopped) break;
    await new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        wakers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, Math.max(0, intervalMs - elapsed));
      wakers.add(wake);
    });
  }
  return { latenciesMs, failures };
}

const loops = urls.map(poll);
process.on('message', async (message) => {
  if (message?.type !== 'stop') return;
  stopped = true;
  for (const wake of [...wakers]) wake();
  process.send({ type: 'results', results: await Promise.all(loops) }, () => process.exit(0));
});
process.send({ type: 'ready' });
