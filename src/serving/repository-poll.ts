// Poll mode's clock (--model-control-mode poll): the repository is read again every
// --repository-poll-secs, each read scheduled once the last has finished so reads never overlap,
// and the timer never keeps the process alive. What a read does is the model manager's poll().

/** Runs `poll` `intervalSecs` after the start and after each run ends, logging a failed one; returns what stops the next run. */
export function pollEvery(intervalSecs: number, poll: () => Promise<void>, log: (line: string) => void): () => void {
  let timer: NodeJS.Timeout;
  const schedule = (): void => {
    timer = setTimeout(() => void tick(), intervalSecs * 1000);
    timer.unref();
  };
  const tick = async (): Promise<void> => {
    await poll().catch((e: Error) => log(`repository poll failed: ${e.message}`));
    schedule();
  };
  schedule();
  return () => clearTimeout(timer);
}
