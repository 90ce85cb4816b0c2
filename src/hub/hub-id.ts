// A Hugging Face model named on the command line or in a config.pbtxt: `ORG/NAME[@REVISION]`.
// Pure: whether a --model value is such a name (and not a directory) is the caller's to decide.

/** One Hub repository part: what the Hub allows in a user, organisation or model name. */
const PART = '[A-Za-z0-9][A-Za-z0-9_.-]*';
const HUB_ID = new RegExp(`^(${PART})/(${PART})(?:@(.+))?$`);

export interface HubModelId {
  /** `ORG/NAME`. */
  readonly repo: string;
  /** A branch, tag or commit; `main` when none was given. */
  readonly revision: string;
  /** True when the id named its revision. */
  readonly pinned: boolean;
}

export const DEFAULT_REVISION = 'main';

/** The id `value` names, or null when it is not of the form ORG/NAME[@REVISION]. */
export function parseHubId(value: string): HubModelId | null {
  const match = HUB_ID.exec(value);
  if (!match) return null;
  const [, org, name, revision] = match;
  if ([org, name].some((part) => part === '.' || part === '..' || part!.endsWith('.git'))) return null;
  if (revision !== undefined && (/\s/.test(revision) || revision.split('/').includes('..'))) return null;
  return { repo: `${org}/${name}`, revision: revision ?? DEFAULT_REVISION, pinned: revision !== undefined };
}

/** `ORG/NAME@REVISION` as written back in messages (the revision left out when it is the default and was not named). */
export function formatHubId(id: HubModelId): string {
  return id.pinned ? `${id.repo}@${id.revision}` : id.repo;
}

/** True for a 40-hex commit id (a revision that needs no ref to resolve). */
export function isCommitHash(revision: string): boolean {
  return /^[0-9a-f]{40}$/.test(revision);
}
