// The context sweep's table: a whole throughput workload per (prompt, concurrency), its wall time
// split by runner phase, so a long-context slowdown shows whether it is ORT or copying around it.

import { markdownTable } from '../../harness/markdown.js';
import type { WorkloadProfile } from './workload-profile.js';

export function sweepTable(workloads: readonly WorkloadProfile[]): string {
  const share = (ms: number, w: WorkloadProfile) => `${(ms / 1000).toFixed(2)} (${((100 * ms) / w.wallMs).toFixed(0)}%)`;
  const rows = workloads.map((w) => {
    const b = w.breakdown;
    return [
      String(w.promptTokens),
      String(w.concurrency),
      ((w.concurrency * w.outputTokens * 1000) / w.wallMs).toFixed(1),
      (w.wallMs / 1000).toFixed(2),
      `${w.steps} / ${w.ortCalls}`,
      share(b.ortMs, w),
      share(b.gatherMs, w),
      share(b.scatterMs, w),
      share(b.feedsMs, w),
      share(b.logitsMs, w),
      share(w.otherMs, w),
      b.gatheredPositions.toLocaleString('en-US'),
    ];
  });
  const headers = ['Prompt', 'Requests', 'Output tok/s', 'Wall s', 'Steps / ORT calls', 'ORT s', 'Gather s', 'Copy-back s', 'Token feeds s', 'Logits s', 'Other s', 'Past positions gathered'];
  return markdownTable(
    headers,
    rows,
    headers.map(() => 'right'),
  );
}
