// The streaming bench's latency probes, in a process of their own: the endpoint picker scrapes
// from its own process, so a poll here waits only on the server (and the machine), never on the
// load generator's event loop, which is busy parsing the streams it drives. Plain JavaScript,
// started with `fork` once per bench (before the load generator lowers its own priority, so the
// probes keep the server's), up in tens of milliseconds.
//
// argv: intervalMs. Messages: it sends {type: 'ready'} once started; {type: 'start', urls} polls
// each URL one request at a time, a poll starting every intervalMs (from the start of one to the
// next), the body read whole (as Prometheus does), and answers {type: 'started'}; {type: 'stop'}
// ends the polls and answers {type: 'results', results: [{latenciesMs, failures}, …]} (one per
// URL, in the order given). It exits when its parent disconnects.

const intervalMs = Number(process.argv[2]);
let session = null;

function startSession(urls) {
  const state = { stopped: false, wakers: new Set() };
  const poll = async (url) => {
    const latenciesMs = [];
    let failures = 0;
    while (!state.stopped) {
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
      if (state.stopped) break;
      await new Promise((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          state.wakers.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, Math.max(0, intervalMs - elapsed));
        state.wakers.add(wake);
      });
    }
    return { latenciesMs, failures };
  };
  return { state, loops: urls.map(poll) };
}

process.on('message', async (message) => {
  if (message?.type === 'start') {
    session = startSession(message.urls);
    process.send({ type: 'started' });
  } else if (message?.type === 'stop' && session) {
    const { state, loops } = session;
    session = null;
    state.stopped = true;
    for (const wake of [...state.wakers]) wake();
    process.send({ type: 'results', results: await Promise.all(loops) });
  }
});
process.on('disconnect', () => process.exit(0));
process.send({ type: 'ready' });
