// Speculative decoding's acceptance rule (rejection sampling, as in Leviathan et al. and Chen et
// al.): a token x proposed from a distribution q is checked against the distribution p the
// sampler would draw from at that position. It is kept with probability min(1, p(x) / q(x)); a
// rejection is replaced by a draw from the residual max(0, p − q), normalized. Either way the
// position's token follows p exactly, whatever q is, so a checked proposal changes how many
// tokens a step yields and never what they are distributed as.
//
// A point-mass proposal (q = δx: n-gram lookup, a greedy draft model) needs no explicit p: draw
// y from p with the position's own uniform — the draw decoding without speculation makes there —
// and keep x when y = x. x is kept with probability p(x), and a rejected position's y is
// distributed as p without x, renormalized: the residual max(0, p − δx). Because y is the
// non-speculative draw itself, a seeded request's tokens are the same with or without
// speculation and whatever else the step holds (rng.ts: a draw depends only on the request's key
// and the output position). Greedy rows are the case of a p that is itself a point mass.
//
// A spread q (a sampling draft model, Draft.probs) needs p explicitly (Drawer.distribution) and
// two uniforms of the position, from streams of their own (rng.ts, proposalKeys), so its
// verdicts are a function of the request's seed, the position and the proposal. Its output
// follows p but is not the draw decoding without speculation makes, so a seeded request repeats
// only where the same positions are checked (whether a step speculates depends on the batch:
// disable_by_batch_size). Making it repeat too would take drafts drawn with the target's own
// uniforms (a shared-noise coupling), which the draw's inverse-CDF walk does not give.
//
// Pure: distributions and uniforms in, a verdict out.

import type { TokenDistribution } from './draw.js';

export interface ProposalVerdict {
  /** The position's token: the proposal when accepted, else the residual's draw. */
  readonly tokenId: number;
  readonly accepted: boolean;
}

/** The rule for a point-mass proposal, given the position's own draw from p (see the file comment). */
export function checkPointMass(proposal: number, drawn: number): ProposalVerdict {
  return { tokenId: drawn, accepted: drawn === proposal };
}

/**
 * The rule for a proposal drawn from `q` (probabilities by token id; ids past its end have
 * probability 0): accept when uAccept · q(x) < p(x) — probability min(1, p(x) / q(x)) —, else
 * walk the residual max(0, p − q) with uResidual. Both uniforms are in [0, 1).
 */
export function checkAgainstDistribution(p: TokenDistribution, proposal: number, q: ArrayLike<number>, uAccept: number, uResidual: number): ProposalVerdict {
  const qOf = (id: number): number => (id < q.length ? q[id]! : 0);
  const { ids, probs } = p;
  let px = 0;
  for (let j = 0; j < ids.length; j++) if (ids[j] === proposal) px = probs[j]!;
  if (uAccept * qOf(proposal) < px) return { tokenId: proposal, accepted: true };
  let residual = 0;
  for (let j = 0; j < ids.length; j++) residual += Math.max(0, probs[j]! - qOf(ids[j]!));
  // p ≤ q everywhere leaves no residual; then a rejection has probability zero and only rounding
  // gets here: p itself is the distribution to draw from.
  const useP = !(residual > 1e-12);
  const total = useP ? 1 : residual;
  const target = uResidual * total;
  let acc = 0;
  let last = ids[0]!;
  for (let j = 0; j < ids.length; j++) {
    const mass = useP ? probs[j]! : Math.max(0, probs[j]! - qOf(ids[j]!));
    if (mass <= 0) continue;
    last = ids[j]!;
    acc += mass;
    if (target < acc) return { tokenId: last, accepted: false };
  }
  return { tokenId: last, accepted: false };
}
