import { describe, expect, it } from 'vitest';
import { RequestState, checkStop } from '../../../src/engine-worker/request-state.js';
import { EOS, makeRequest } from '../../support/fake-model.js';

function stateAfter(output: number[], over: Parameters<typeof makeRequest>[2] = {}): RequestState {
  const state = new RequestState(makeRequest('r', [1, 2, 3], over), 0, 0);
  state.tokenIds.push(...output);
  return state;
}

describe('checkStop', () => {
  it('continues on an ordinary token', () => {
    expect(checkStop(stateAfter([5]), 100)).toBeNull();
  });

  it('stops on EOS, reporting the token, unless ignore_eos', () => {
    expect(checkStop(stateAfter([5, EOS]), 100)).toEqual({ reason: 'stop', stopTokenId: EOS });
    expect(checkStop(stateAfter([5, EOS], { ignoreEos: true }), 100)).toBeNull();
    expect(checkStop(stateAfter([5, 7], { eosTokenIds: [7, 8] }), 100)).toEqual({ reason: 'stop', stopTokenId: 7 });
  });

  it('stops on stop_token_ids even with ignore_eos', () => {
    expect(checkStop(stateAfter([42], { stopTokenIds: [42], ignoreEos: true }), 100)).toEqual({ reason: 'stop', stopTokenId: 42 });
  });

  it('ignores token stops before min_tokens, but not length', () => {
    expect(checkStop(stateAfter([EOS], { minTokens: 2 }), 100)).toBeNull();
    expect(checkStop(stateAfter([5, EOS], { minTokens: 2 }), 100)).toEqual({ reason: 'stop', stopTokenId: EOS });
    expect(checkStop(stateAfter([5, 6], { minTokens: 5, maxTokens: 2 }), 100)).toEqual({ reason: 'length', stopTokenId: null });
  });

  it('stops for length at max_tokens or the context length', () => {
    expect(checkStop(stateAfter([5, 6], { maxTokens: 2 }), 100)).toEqual({ reason: 'length', stopTokenId: null });
    expect(checkStop(stateAfter([5, 6]), 5)).toEqual({ reason: 'length', stopTokenId: null });
    expect(checkStop(stateAfter([5]), 5)).toBeNull();
  });

  it('prefers stop over length when the last allowed token is EOS', () => {
    expect(checkStop(stateAfter([5, EOS], { maxTokens: 2 }), 100)).toEqual({ reason: 'stop', stopTokenId: EOS });
  });
});

describe('RequestState', () => {
  it('counts prompt and output tokens', () => {
    const state = stateAfter([9, 9]);
    expect(state.numPromptTokens).toBe(3);
    expect(state.numOutputTokens).toBe(2);
    expect(state.numTokens).toBe(5);
  });
});
