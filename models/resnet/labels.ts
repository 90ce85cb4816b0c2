// labels.txt for the classifier (Triton's label_filename format: line i names class i). The
// model's weights are random, so no real dataset's labels would mean anything; these are
// synthetic names, readable and unique, built from two short word lists (40 × 25 = 1000).

const ADJECTIVES = [
  'amber', 'azure', 'bold', 'brisk', 'calm', 'coral', 'crimson', 'dapper', 'dusky', 'eager',
  'fair', 'fleet', 'gentle', 'gilded', 'hardy', 'hazel', 'ivory', 'jade', 'keen', 'lively',
  'lucky', 'mellow', 'misty', 'noble', 'ochre', 'pale', 'plucky', 'quiet', 'rosy', 'russet',
  'sable', 'silver', 'spry', 'stout', 'tawny', 'umber', 'vivid', 'wary', 'witty', 'zesty',
] as const;

const NOUNS = [
  'badger', 'beetle', 'crane', 'dingo', 'egret', 'falcon', 'gecko', 'heron', 'ibex', 'jackal',
  'kestrel', 'lemur', 'marten', 'newt', 'otter', 'puffin', 'quail', 'raven', 'stoat', 'tapir',
  'urchin', 'vole', 'walrus', 'yak', 'zebu',
] as const;

/** `count` distinct labels, e.g. 'amber badger'. */
export function syntheticLabels(count: number): string[] {
  if (count > ADJECTIVES.length * NOUNS.length) throw new Error(`syntheticLabels: at most ${ADJECTIVES.length * NOUNS.length}`);
  return Array.from({ length: count }, (_, i) => `${ADJECTIVES[Math.floor(i / NOUNS.length)]} ${NOUNS[i % NOUNS.length]}`);
}
