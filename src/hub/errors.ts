// Why a Hub model could not be fetched or served: one message naming the repository and what to
// do. The CLI prints it and exits 1; a repository load fails with it as the reason.

export type HubFailure = 'not-found' | 'gated' | 'revision' | 'file' | 'network' | 'offline' | 'corrupt' | 'layout' | 'convert';

export class HubError extends Error {
  constructor(
    readonly failure: HubFailure,
    message: string,
  ) {
    super(message);
  }
}
