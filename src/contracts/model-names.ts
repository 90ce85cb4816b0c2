// Model names with a slash. A repository model's name is its directory's name, so it holds only
// letters, digits, '_', '.' and '-' (Triton's rule). vLLM-style ids are `ORG/NAME` (the Hugging
// Face repository), which the OpenAI and Anthropic routes carry in a JSON field; a KServe URL path
// (/v2/models/{name}/…) and a directory cannot. So `ORG/NAME` is served under the repository name
// `ORG--NAME` (the Hugging Face cache's own spelling, models--ORG--NAME), and every lookup maps
// an id through repositoryModelName(): `ORG/NAME`, `ORG%2FNAME` in a URL (decoded to `ORG/NAME`)
// and `ORG--NAME` all reach the same model. The OpenAI cards show the id the model was served as
// (its `served_model_name` parameter).

const PART = '[A-Za-z0-9][A-Za-z0-9_.-]*';
const SLASHED_ID = new RegExp(`^(${PART})/(${PART})$`);

/** The parameter holding the id a model is served as on the OpenAI routes, when it differs from its repository name. */
export const SERVED_MODEL_NAME_PARAMETER = 'served_model_name';

/** `ORG/NAME` → `ORG--NAME`; any other name as it is. Pure. */
export function repositoryModelName(id: string): string {
  const match = SLASHED_ID.exec(id);
  return match ? `${match[1]}--${match[2]}` : id;
}

/** True for a name a repository model may have, or an `ORG/NAME` id that maps to one. */
export function isServableModelName(id: string): boolean {
  const name = repositoryModelName(id);
  return /^[A-Za-z0-9_.-]+$/.test(name) && name !== '.' && name !== '..';
}
